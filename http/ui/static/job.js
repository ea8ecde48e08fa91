// A job's page: its fields and payload, its attempts, and cancel,
// reschedule, replay and purge, each showing what the API answered.
// Cancel and reschedule are made on the condition of the version shown
// (If-Match): a job that changed since is left as it is, and the page
// says so.

import { call, path } from './api.js';
import { el, text, link, duration, deadline, table, fields, Message, button, describe } from './dom.js';

// The states in which each action applies; the API has the last word (a
// job that starts firing meanwhile answers 409 in_flight).
const cancellable = ['pending', 'firing'];

// jobPage: GET /v1/jobs/{id} and GET /v1/jobs/{id}/attempts.
export async function jobPage(view, params, id) {
  const [job, attempts] = await Promise.all([call('GET', path('jobs', id)), attemptsSection(id)]);
  const message = new Message();
  const details = el('div', { id: 'job' });
  const fireAt = el('input', { id: 'fire-at', name: 'fire_at', size: 26, placeholder: '2026-01-02T15:04:05Z' });
  let shown = job; // the job as the page shows it
  const cancel = button('Cancel job', () => act(() => call('DELETE', path('jobs', id), undefined, { ifMatch: shown.version }),
    (j) => `Cancelled: job ${j.id} is ${j.status}.`),
    { id: 'cancel', confirmLabel: 'Confirm cancel', cls: 'danger' });
  const reschedule = el('form', { id: 'reschedule', class: 'inline' }, el('label', {}, 'New due time (RFC 3339) ', fireAt),
    el('button', { type: 'submit' }, 'Reschedule'));
  reschedule.addEventListener('submit', (e) => {
    e.preventDefault();
    act(() => call('PATCH', path('jobs', id), { fire_at: fireAt.value.trim() }, { ifMatch: shown.version }),
      (j) => `Rescheduled: job ${j.id} is due ${j.fire_at}.`);
  });
  const replay = button('Replay', () => act(() => call('POST', path('deadletters', id, 'replay')), (j) => `Replayed: job ${j.id} is ${j.status}, due ${j.fire_at}.`),
    { id: 'replay' });
  const purge = button('Purge', () => act(async () => {
    await call('DELETE', path('deadletters', id));
    return call('GET', path('jobs', id));
  }, (j) => `Purged: job ${j.id} is ${j.status}.`), { id: 'purge', confirmLabel: 'Confirm purge', cls: 'danger' });

  // show draws the job and offers the actions its status allows.
  function show(j) {
    shown = j;
    details.replaceChildren(jobFields(j), el('h2', {}, 'Payload'), el('pre', { id: 'job-payload' }, JSON.stringify(j.payload, null, 2)));
    cancel.hidden = !cancellable.includes(j.status);
    reschedule.hidden = !cancellable.includes(j.status);
    replay.hidden = j.status !== 'dead';
    purge.hidden = j.status !== 'dead';
    fireAt.value = j.fire_at;
  }

  // act runs an action that answers the job, shows the job it answered
  // and says so, or shows the API's error.
  async function act(run, said) {
    try {
      const j = await run();
      show(j);
      message.ok(said(j));
    } catch (err) {
      if (err.code === 'version_mismatch') {
        err.message += '. Reload the page to see the job as it is now.';
      }
      message.error(err);
    }
  }

  show(job);
  view.replaceChildren(
    el('h1', {}, 'Job ', el('span', { id: 'job-id' }, job.id)),
    el('p', { class: 'actions' }, cancel, replay, purge),
    reschedule,
    message.node,
    details,
    attempts,
  );
}

// attemptsSection is the job's attempts as a table; an error answer is
// shown in the section, except a refused token, which ends the page.
async function attemptsSection(id) {
  const section = el('section', { id: 'attempts-section' }, el('h2', {}, 'Attempts'));
  let list;
  try {
    ({ attempts: list } = await call('GET', path('jobs', id, 'attempts')));
  } catch (err) {
    if (err.status === 401) throw err;
    section.append(el('p', { id: 'attempts-error', class: 'message error', role: 'alert' }, 'The API could not list the attempts: ' + describe(err)));
    return section;
  }
  list = list || [];
  section.append(list.length === 0
    ? el('p', { id: 'no-attempts' }, 'No attempts recorded (the history is written shortly after each attempt and kept for --attempt-retention).')
    : table('attempts', ['Attempt', 'Started', 'Duration', 'HTTP status', 'Error', 'Response'], list.map((a) => el('tr', { 'data-attempt': a.attempt },
      el('td', { class: 'attempt num' }, text(a.attempt)),
      el('td', { class: 'started' }, text(a.started_at)),
      el('td', { class: 'duration num' }, duration(a.duration_ms)),
      el('td', { class: 'status-code num' }, a.status_code == null ? 'no answer' : String(a.status_code)),
      el('td', { class: 'error-text' }, text(a.error)),
      el('td', { class: 'excerpt' }, a.response_excerpt ? el('pre', {}, a.response_excerpt) : '—')))));
  return section;
}

// windowText tells a job's flexible window: how long after its due time
// it may still fire on time, and until when.
function windowText(j) {
  if (!j.window_ms) {
    return 'none: due at its time';
  }
  const end = new Date(Date.parse(j.fire_at) + j.window_ms).toISOString();
  return `${j.window_ms} ms, until ${end}`;
}

function jobFields(j) {
  return fields('job-fields', [
    ['Topic', link(j.topic, ['topics', j.topic])],
    ['Status', j.status, 'job-status'],
    ['Due', j.fire_at, 'job-fire-at'],
    j.next_attempt_at ? ['Next attempt', j.next_attempt_at, 'job-next-attempt'] : null,
    j.expire_at ? ['Deadline', `${j.expire_at} (${deadline(j.expire_after_ms)})`, 'job-deadline'] : null,
    ['Key', j.key],
    ['biz_id', j.biz_id],
    ['biz_type', j.biz_type],
    ['Priority', j.priority],
    ['Attempts', `${j.attempts} of ${j.max_attempts}`],
    ['Last HTTP status', j.last_status || null],
    ['Last error', j.last_error],
    ['Callback URL', j.callback_url],
    ['Created', j.created_at],
    ['Updated', j.updated_at],
    ['Version', String(j.version), 'job-version'],
    ['Window', windowText(j), 'job-window'],
    ['Concurrency key', j.concurrency_key, 'job-concurrency-key'],
    j.group_id ? ['Group', link(j.group_id, ['groups', j.group_id], undefined, { id: 'job-group' })] : null,
  ].filter(Boolean));
}
