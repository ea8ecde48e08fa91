// The topics page (every topic with its counts and live usage) and a
// topic's page (its settings, pause and resume, and a search of its jobs,
// whose checked rows are cancelled, fired now or rescheduled together).

import { call, path, query } from './api.js';
import { el, text, link, route, duration, deadline, table, fields, Message, button, pager, searchForm, input, select, describe } from './dom.js';
import { forecastSection } from './forecast.js';
import { chartsSection } from './charts.js';
import { Selection, actionBar, whenInput } from './bulk.js';

// topicsPerPage bounds the topics shown, and so the calls for their
// counts, at once.
const topicsPerPage = 20;

// jobsPerPage is the limit of one search of a topic's jobs.
const jobsPerPage = 50;

const statuses = ['', 'pending', 'firing', 'done', 'cancelled', 'dead', 'purged', 'expired'];

// topicsPage: GET /v1/topics, a page of them at a time, each row then
// filled from GET /v1/topics/{topic}/stats and GET /v1/topics/{topic}.
export async function topicsPage(view, params) {
  const { topics: items } = await call('GET', '/topics');
  const pages = Math.max(1, Math.ceil(items.length / topicsPerPage));
  const page = Math.min(pages, Math.max(1, parseInt(params.page, 10) || 1));
  const shown = items.slice((page - 1) * topicsPerPage, page * topicsPerPage);
  const rows = shown.map(topicRow);
  view.replaceChildren(
    el('h1', {}, 'Topics'),
    items.length === 0
      ? el('p', { id: 'no-topics' }, 'No topics yet: a job creates its topic, or PUT /v1/topics/{topic} does.')
      : table('topics', ['Topic', 'State', 'Pending', 'In flight', 'Dead', 'Next due', 'Overdue', 'Due waiting', 'Rate /s', 'Throttled', 'Late p50', 'Late p99', 'Action'], rows),
    el('p', { class: 'pager' },
      `Topics ${items.length ? (page - 1) * topicsPerPage + 1 : 0}–${(page - 1) * topicsPerPage + shown.length} of ${items.length}. `,
      page > 1 ? link('« Previous', ['topics'], { page: page - 1 }, { class: 'previous' }) : null, ' ',
      page < pages ? link('Next »', ['topics'], { page: page + 1 }, { class: 'next' }) : null),
  );
  await Promise.all(shown.map((t, i) => fillTopicRow(rows[i], t.name)));
}

// lateness is a lateness percentile of GET /v1/topics/{t}'s usage: the
// upper bound of its bucket, so "< 5 ms"; 60000 is a minute or more.
function lateness(ms) {
  if (ms == null) return null;
  return ms >= 60000 ? '≥ 1 min' : '< ' + duration(ms);
}

// count shows a pending or dead count of GET /v1/topics/{t}/stats: "≈ n"
// when it is the task store's estimate (a big topic before its first
// count), and a title that tells when it was counted (a big topic's is
// counted in the background, at most a few minutes ago).
function count(n, stats) {
  const age = Date.now() - Date.parse(stats.counted_at);
  const title = stats.counts_estimated ? 'estimated by the task store; counting in the background'
    : age > 5000 ? `counted ${duration(age)} ago` : 'counted now';
  return el('span', { class: stats.counts_estimated ? 'count estimated' : 'count', title },
    (stats.counts_estimated ? '≈ ' : '') + text(n));
}

function topicRow(t) {
  const cell = (cls) => el('td', { class: cls }, '…');
  const state = el('td', { class: 'state' }, t.paused ? 'paused' : 'active');
  return el('tr', { 'data-topic': t.name },
    el('td', { class: 'name' }, link(t.name, ['topics', t.name])),
    state,
    cell('pending num'), cell('in-flight num'), cell('dead num'), cell('next-due'), cell('overdue num'),
    cell('due-waiting num'), cell('rate num'), cell('throttled num'), cell('late-p50 num'), cell('late-p99 num'),
    el('td', { class: 'actions' }, pauseToggle(t.name, state)));
}

// toggleLabel is what a topic row's button does to a topic in state.
const toggleLabel = (state) => (state === 'paused' ? 'Resume' : 'Pause');

// pauseToggle is a topic row's Pause or Resume button, as its state cell
// says: POST /v1/topics/{topic}/pause or /resume, after which the cell
// and the button show what the API answered, or the cell the error.
function pauseToggle(name, state) {
  const b = button(toggleLabel(state.textContent), async () => {
    const paused = state.textContent === 'paused';
    try {
      const t = await call('POST', path('topics', name, paused ? 'resume' : 'pause'));
      state.textContent = t.paused ? 'paused' : 'active';
      state.classList.remove('error');
    } catch (err) {
      state.textContent = err.message;
      state.classList.add('error');
    }
    b.textContent = toggleLabel(state.textContent);
  }, { cls: 'pause-toggle' });
  return b;
}

// fillTopicRow fills a row with the topic's counts and usage; a failing
// call shows its error in the row. The row is marked loaded either way.
async function fillTopicRow(row, name) {
  const set = (cls, v) => { row.querySelector('.' + cls).textContent = text(v); };
  const [stats, topic] = await Promise.allSettled([call('GET', path('topics', name, 'stats')), call('GET', path('topics', name))]);
  if (stats.status === 'fulfilled') {
    const s = stats.value;
    row.querySelector('.pending').replaceChildren(count(s.pending, s));
    set('in-flight', s.in_flight);
    row.querySelector('.dead').replaceChildren(count(s.dead, s));
    set('next-due', s.next_due_at);
    set('overdue', s.oldest_overdue_ms ? duration(s.oldest_overdue_ms) : 0);
  }
  if (topic.status === 'fulfilled') {
    const t = topic.value;
    set('state', t.paused ? 'paused' : 'active');
    row.querySelector('.pause-toggle').textContent = toggleLabel(row.querySelector('.state').textContent);
    const u = t.usage || {};
    set('due-waiting', u.due_waiting);
    set('rate', u.rate == null ? null : u.rate.toFixed(1));
    set('throttled', u.throttled);
    set('late-p50', lateness(u.lateness_p50_ms));
    set('late-p99', lateness(u.lateness_p99_ms));
  }
  const failed = [stats, topic].find((r) => r.status === 'rejected');
  if (failed) row.append(el('td', { class: 'error' }, failed.reason.message));
  row.dataset.loaded = 'true';
}

// topicPage: GET /v1/topics/{topic} and its stats, pause and resume, its
// series (charts.js), the forecast of its jobs (forecast.js), and its
// jobs from GET /v1/jobs with the filters in the route's query.
export async function topicPage(view, params, name) {
  const [topic, stats] = await Promise.all([call('GET', path('topics', name)), call('GET', path('topics', name, 'stats'))]);
  const message = new Message();
  const state = el('span', { id: 'topic-state', class: 'badge' });
  const pause = button('Pause', () => setPaused(true), { id: 'pause' });
  const resume = button('Resume', () => setPaused(false), { id: 'resume' });
  const showState = (paused) => {
    state.textContent = paused ? 'paused' : 'active';
    state.classList.toggle('paused', paused);
    pause.hidden = paused;
    resume.hidden = !paused;
  };
  async function setPaused(paused) {
    try {
      const t = await call('POST', path('topics', name, paused ? 'pause' : 'resume'));
      showState(t.paused);
      message.ok(t.paused ? `Paused: ${name}'s jobs do not fire until it is resumed (it still accepts new ones).` : `Resumed: ${name}'s due jobs fire again.`);
    } catch (err) {
      message.error(err);
    }
  }
  showState(topic.paused);
  const u = topic.usage || {};
  const jobs = jobsSection(name, params);
  const forecast = forecastSection(name, params, (f) => { location.hash = route(['topics', name], { ...params, ...f }); });
  const charts = chartsSection(name);
  view.replaceChildren(
    el('h1', {}, 'Topic ', el('span', { id: 'topic-name' }, topic.name), ' ', state),
    el('p', { class: 'actions' }, pause, resume, ' ', link('Dead letters of this topic', ['deadletters'], { topic: name })),
    message.node,
    el('div', { class: 'columns' },
      el('section', {}, el('h2', {}, 'Now'), fields('topic-stats', [
        ['Pending', count(stats.pending, stats), 'stat-pending'],
        ['In flight', stats.in_flight, 'stat-in-flight'],
        ['Dead', count(stats.dead, stats), 'stat-dead'],
        ['Next due', stats.next_due_at],
        ['Overdue', stats.oldest_overdue_ms ? duration(stats.oldest_overdue_ms) : 0],
        ['Due, waiting for capacity', u.due_waiting],
        ['Calls in flight (cluster)', u.in_flight],
        ['Rate (calls/s)', u.rate == null ? null : u.rate.toFixed(1)],
        ['Throttled', u.throttled],
        ['Lateness p50 / p99, last 5 min', u.lateness_p50_ms == null ? null : lateness(u.lateness_p50_ms) + ' / ' + lateness(u.lateness_p99_ms)],
        ['Members working it', u.members],
      ])),
      el('section', {}, el('h2', {}, 'Settings'), fields('topic-settings', [
        ['Slots', topic.slots],
        ['Max attempts', topic.max_attempts],
        ['Rate limit (/s)', topic.rate_limit || 'none'],
        ['Burst', topic.burst || 'none'],
        ['Max in flight', topic.max_in_flight || 'none'],
        ['Weight', topic.weight],
        ['Retry backoff', `${duration(topic.retry.base_ms)} doubling to ${duration(topic.retry.max_ms)}`],
        ['Lease', duration(topic.lease_ms)],
        ['Callback timeout', duration(topic.callback_timeout_ms)],
        ['Lateness objective', topic.lateness_slo_ms ? duration(topic.lateness_slo_ms) : 'none'],
        ['Deadline of its jobs', deadline(topic.expire_after_ms), 'topic-deadline'],
        ['Delivery', delivery(topic), 'topic-delivery'],
        ['Created', topic.created_at],
      ]))),
    el('h2', {}, 'Activity: what the cluster did'),
    charts.node,
    el('h2', {}, 'Circuit breakers'),
    breakerTable(stats.breakers),
    el('h2', {}, 'Storage: finished jobs'),
    storageTable(stats),
    el('h2', {}, 'Forecast: jobs falling due'),
    forecast.node,
    el('h2', {}, 'Jobs'),
    searchForm('job-search', [
      select('Status', 'status', params.status, statuses.map((s) => [s, s || 'any'])),
      input('biz_id', 'biz_id', params.biz_id, { inputmode: 'numeric', size: 12 }),
      input('Key', 'key', params.key, { size: 16 }),
      input('Due after', 'fire_after', params.fire_after, { placeholder: '2026-01-02T15:04:05Z', size: 22 }),
      input('Due before', 'fire_before', params.fire_before, { placeholder: '2026-01-02T15:04:05Z', size: 22 }),
    ], (f) => { location.hash = route(['topics', name], f); }),
    jobs.node,
  );
  await Promise.all([jobs.load(), forecast.load(), charts.load()]);
}

// breakerTable shows the circuit breakers of GET /v1/topics/{t}/stats:
// the callback hosts the topic's jobs met that are failing, or held back
// while their breaker is open (their wait counts in Overdue).
function breakerTable(breakers = []) {
  if (breakers.length === 0) {
    return el('p', { id: 'no-breakers' }, 'None: no callback host of this topic\'s jobs is failing.');
  }
  return table('breakers', ['Host', 'State', 'Since', 'Failures', 'Open until', 'Oldest job held back, due at'], breakers.map((b) =>
    el('tr', { 'data-host': b.host },
      el('td', { class: 'host' }, b.host),
      el('td', { class: 'state' }, el('span', { class: 'badge breaker-' + b.state }, b.state.replace('_', '-'))),
      el('td', {}, text(b.since)),
      el('td', { class: 'failures' }, b.failures),
      el('td', {}, text(b.open_until)),
      el('td', { class: 'held' }, text(b.oldest_held_due_at)))));
}

// endedStatuses are the statuses a job ends in, whose rows retire.
const endedStatuses = ['done', 'cancelled', 'expired', 'dead', 'purged'];

// keptFor shows a retention in ms: 0 keeps forever.
function keptFor(ms) {
  if (!ms) return 'forever';
  const day = 86_400_000;
  return ms % day === 0 ? `${ms / day} d` : duration(ms);
}

// storageCount shows a count of the storage picture: "≈ n" when it is the
// task store's estimate (past 10,000 rows a shard).
function storageCount(n, estimated) {
  return el('span', { class: estimated ? 'count estimated' : 'count', title: estimated ? 'estimated by the task store' : 'counted now' },
    (estimated ? '≈ ' : '') + text(n));
}

// storageTable shows what the task store holds of the topic's finished
// jobs (GET /v1/topics/{t}/stats: retention and storage): by status, how
// long they are kept, the rows, when the oldest finished, and how many
// are past their retention, which the retirer deletes in paced batches.
function storageTable(stats) {
  const retention = stats.retention || {};
  const storage = stats.storage || {};
  return el('section', { id: 'storage-section' },
    table('storage', ['Status', 'Kept for', 'Rows', 'Oldest finished', 'Past retention'], endedStatuses.map((st) => {
      const s = storage[st] || {};
      const age = s.oldest_ended_at ? Date.now() - Date.parse(s.oldest_ended_at) : null;
      return el('tr', { 'data-status': st },
        el('td', { class: 'status' }, st),
        el('td', { class: 'kept' }, keptFor(retention[st + '_ms'])),
        el('td', { class: 'rows num' }, storageCount(s.rows, s.rows_estimated)),
        el('td', { class: 'oldest', title: text(s.oldest_ended_at) }, s.oldest_ended_at ? `${s.oldest_ended_at} (${duration(Math.max(0, age))} ago)` : '—'),
        el('td', { class: 'past num' }, storageCount(s.past_retention, s.past_retention_estimated)));
    })),
    el('p', { class: 'note' }, 'Finished jobs are deleted once past their retention (the topic\'s own, else the server\'s --retain-* flags), in paced batches; pending and firing jobs, and members of a group not yet complete, never are. Change it with PATCH /v1/topics/{topic} {"retention": …} or toc topics retention.'));
}

// jobsSection is the topic's jobs: a page of them with a checkbox on
// each row, and the bar that cancels, fires now or reschedules the ones
// checked (POST /v1/jobs/bulk), then draws the page again.
function jobsSection(name, params) {
  const sel = new Selection('jobs');
  const result = new Message('jobs-bulk-result');
  const list = el('div', { id: 'jobs-list' }, el('p', { class: 'loading' }, 'Loading jobs…'));
  const load = () => listJobs(list, name, params, sel);
  const when = whenInput('bulk');
  const bar = actionBar('jobs-bulk', sel, '/jobs/bulk', [
    { label: 'Cancel', id: 'bulk-cancel', action: 'cancel', verb: 'cancel', cls: 'danger' },
    { label: 'Fire now', id: 'bulk-fire-now', action: 'fire_now', verb: 'fire now' },
    { label: 'Reschedule', id: 'bulk-reschedule', action: 'reschedule', verb: 'reschedule', body: () => ({ fire_at: when.at().toISOString() }) },
  ], load, result, [when.node]);
  return { node: el('section', { id: 'jobs' }, bar, result.node, list), load };
}

// listJobs fills section with a page of the topic's jobs; an error answer
// (the search endpoint missing included) is shown as the API gave it.
async function listJobs(section, name, params, sel) {
  const filters = { status: params.status, biz_id: params.biz_id, key: params.key, fire_after: params.fire_after, fire_before: params.fire_before };
  let page;
  try {
    page = await call('GET', '/jobs' + query({ topic: name, ...filters, limit: jobsPerPage, cursor: params.cursor }));
  } catch (err) {
    if (err.status === 401) throw err;
    section.replaceChildren(el('p', { id: 'jobs-error', class: 'message error', role: 'alert' }, 'The API could not list the jobs: ' + describe(err)));
    return;
  }
  const jobs = page.jobs || [];
  sel.reset();
  section.replaceChildren(
    jobs.length === 0
      ? el('p', { id: 'no-jobs' }, 'No jobs match.')
      : table('jobs-table', [sel.all, 'Job', 'Status', 'Due', 'Key', 'biz_id', 'Attempts', 'Last error'], jobs.map((j) => el('tr', { 'data-job': j.id },
        sel.box(j.id),
        el('td', {}, link(j.id, ['jobs', j.id])),
        el('td', { class: 'status' }, j.status),
        el('td', { class: 'due' }, text(j.fire_at)),
        el('td', {}, text(j.key)),
        el('td', {}, text(j.biz_id)),
        el('td', { class: 'num' }, `${j.attempts} / ${j.max_attempts}`),
        el('td', { class: 'error-text' }, text(j.last_error))))),
    pager(['topics', name], { ...filters, cursor: params.cursor }, 'cursor', page.next_cursor),
  );
}


// delivery says how a topic's due jobs go out: by webhook to each job's
// callback URL, leased by pull workers, or published to a message broker,
// named with the address on it.
function delivery(topic) {
  switch (topic.delivery) {
    case 'pull':
      return `pulled: workers lease its due jobs (POST /v1/topics/${topic.name}/leases)`;
    case 'amqp': {
      const a = topic.amqp;
      return `RabbitMQ ${a.broker}: exchange ${a.exchange ? `"${a.exchange}"` : '(default)'}, routing key "${a.routing_key}"${a.persistent ? '' : ', transient'}`;
    }
    case 'nats':
      return `NATS JetStream ${topic.nats.broker}: subject "${topic.nats.subject}"`;
  }
  return "webhook to each job's callback URL";
}
