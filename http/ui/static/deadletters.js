// The dead letters page: the dead jobs of every topic, or of one; a
// topic's grouped by why they died, each group with Replay group and
// Purge group; then the dead jobs themselves, filtered by error text and
// paged by cursor, each with Replay and Purge, and with a checkbox: the
// checked ones are replayed or purged together (bulk.js).

import { call, path, query } from './api.js';
import { el, text, link, route, table, Message, button, pager, searchForm, input, select, describe } from './dom.js';
import { Selection, actionBar } from './bulk.js';

const deadPerPage = 50;

// groupLimit is how many dead letters one click of Replay group or Purge
// group acts on, unless the operator asks for fewer (say, ten to try a
// fix) or more; the API's default and its most are 1,000 and 10,000.
const groupLimit = 1000;

// deadLettersPage: GET /v1/deadletters?topic=&error=&limit=&cursor=, and
// with a topic GET /v1/deadletters/summary?topic=. Without a topic in
// the route, the dead jobs of every topic the token may see, in the order
// they died; the groups, and their actions, are a topic's.
export async function deadLettersPage(view, params) {
  const { topics } = await call('GET', '/topics');
  const topic = params.topic || '';
  const form = searchForm('dead-search', [
    select('Topic', 'topic', topic, [['', 'All topics'], ...topics.map((t) => [t.name, t.name])]),
    input('Error contains', 'error', params.error, { size: 24 }),
  ], (f) => { location.hash = route(['deadletters'], f); });
  // cursor, or after: its name in older links.
  const cursor = params.cursor || params.after;
  const filters = { topic, error: params.error };
  const message = new Message();
  const list = el('section', { id: 'dead-list' });
  const sel = new Selection('dead');
  const result = new Message('dead-bulk-result');
  // bulk is the bar that replays or purges the dead jobs checked (POST
  // /v1/deadletters/bulk), after which refresh draws the page again.
  const bulk = (refresh) => el('div', {}, actionBar('dead-bulk', sel, '/deadletters/bulk', [
    { label: 'Replay', id: 'bulk-replay', action: 'replay', verb: 'replay' },
    { label: 'Purge', id: 'bulk-purge', action: 'purge', verb: 'purge', cls: 'danger' },
  ], refresh, result), result.node);
  if (!topic) {
    const refresh = () => fillList(list, filters, cursor, message, sel);
    await refresh();
    view.replaceChildren(
      el('h1', {}, 'Dead letters'),
      form,
      message.node,
      el('p', { id: 'dead-groups-hint', class: 'hint' }, 'Choose a topic to see its dead jobs grouped by why they died, and to replay or purge a group.'),
      el('h2', {}, 'Dead jobs of all topics'),
      bulk(refresh),
      list,
    );
    return;
  }
  const groups = el('section', { id: 'dead-groups-section' });
  const limit = el('input', { id: 'group-limit', type: 'number', min: 1, max: 10000, value: groupLimit, size: 6 });
  // refresh draws the groups and the list again, after a group's action.
  const refresh = () => Promise.all([fillGroups(groups, topic, limit, message, refresh), fillList(list, filters, cursor, message, sel)]);
  await refresh();
  view.replaceChildren(
    el('h1', {}, 'Dead letters'),
    form,
    message.node,
    el('h2', {}, 'Groups'),
    el('p', { class: 'hint' }, el('label', { class: 'inline' }, 'Each click acts on at most', limit, 'dead letters.')),
    groups,
    el('h2', {}, 'Dead jobs'),
    bulk(refresh),
    list,
  );
}

// fillGroups fills section with the topic's dead letters grouped by why
// they died: GET /v1/deadletters/summary.
async function fillGroups(section, topic, limit, message, refresh) {
  const summary = await call('GET', '/deadletters/summary' + query({ topic }));
  const groups = summary.groups || [];
  section.replaceChildren(
    groups.length === 0
      ? el('p', { id: 'no-dead-groups' }, `No dead letters in ${topic}.`)
      : table('dead-groups', ['Why they died', 'Count', 'First seen', 'Last seen', 'Example', 'Actions'], groups.map((g) => groupRow(topic, g, limit, message, refresh))),
    ...(summary.truncated ? [el('p', { id: 'dead-groups-truncated', class: 'hint' }, 'Counted from the first 100,000 dead letters only: there are more.')] : []),
  );
}

// groupRow is a group with Replay group and Purge group: POST
// /v1/deadletters/replay or /purge with the topic and the signature. One
// click acts on at most the limit input's number; when more remain the
// message says so, and a second click continues.
function groupRow(topic, g, limit, message, refresh) {
  const act = (verb, key, label) => async () => {
    let r;
    try {
      r = await call('POST', '/deadletters/' + verb, { topic, signature: g.signature, limit: limit.valueAsNumber || groupLimit });
    } catch (err) {
      message.error(err);
      return;
    }
    const n = r[key] || 0;
    const said = `${label} ${n} dead letter${n === 1 ? '' : 's'} of ${topic} (${g.signature}).` +
      (r.more ? ` More remain: click ${label === 'Replayed' ? 'Replay group' : 'Purge group'} again to continue.` : '');
    try {
      await refresh();
      message.ok(said);
    } catch (err) {
      message.show(said + ' The page could not be drawn again: ' + describe(err), 'error');
    }
  };
  const replay = button('Replay group', act('replay', 'replayed', 'Replayed'), { cls: 'replay-group' });
  const purge = button('Purge group', act('purge', 'purged', 'Purged'), { cls: 'purge-group danger', confirmLabel: 'Confirm purge group' });
  return el('tr', { 'data-signature': g.signature },
    el('td', { class: 'signature error-text' }, text(g.signature)),
    el('td', { class: 'count num' }, text(g.count)),
    el('td', {}, text(g.first_seen)),
    el('td', {}, text(g.last_seen)),
    el('td', { class: 'example' }, g.example_id ? link(text(g.example_id), ['jobs', text(g.example_id)]) : '—'),
    el('td', { class: 'row-actions' }, replay, ' ', purge));
}

// fillList fills section with a page of the dead jobs of the topic, or
// of every topic (with a column of their topics), each with its checkbox
// of sel.
async function fillList(section, filters, cursor, message, sel) {
  const page = await call('GET', '/deadletters' + query({ ...filters, limit: deadPerPage, cursor }));
  const all = !filters.topic;
  sel.reset();
  section.replaceChildren(
    page.jobs.length === 0
      ? el('p', { id: 'no-dead' }, all ? 'No dead jobs match.' : `No dead jobs in ${filters.topic} match.`)
      : table('dead', [sel.all, ...(all ? ['Topic'] : []), 'Job', 'Due', 'Attempts', 'Last status', 'Last error', 'Died', 'State', 'Actions'],
        page.jobs.map((j) => deadRow(j, all, message, sel))),
    pager(['deadletters'], { ...filters, cursor }, 'cursor', page.next_cursor),
  );
}

function deadRow(j, all, message, sel) {
  const state = el('td', { class: 'state' }, j.status);
  const actions = el('td', { class: 'row-actions' });
  const done = (what, answer) => {
    state.textContent = what;
    actions.replaceChildren();
    message.ok(answer);
  };
  const replay = button('Replay', async () => {
    try {
      const r = await call('POST', path('deadletters', j.id, 'replay'));
      done('replayed', `Replayed: job ${r.id} is ${r.status}, due ${r.fire_at}.`);
    } catch (err) {
      message.error(err);
    }
  }, { cls: 'replay' });
  const purge = button('Purge', async () => {
    try {
      await call('DELETE', path('deadletters', j.id));
      done('purged', `Purged: job ${j.id} is kept as purged and never fires.`);
    } catch (err) {
      message.error(err);
    }
  }, { cls: 'purge danger', confirmLabel: 'Confirm purge' });
  actions.append(replay, ' ', purge);
  return el('tr', { 'data-job': j.id },
    sel.box(j.id),
    ...(all ? [el('td', { class: 'topic' }, link(j.topic, ['deadletters'], { topic: j.topic }))] : []),
    el('td', {}, link(j.id, ['jobs', j.id])),
    el('td', {}, text(j.fire_at)),
    el('td', { class: 'num' }, `${j.attempts} / ${j.max_attempts}`),
    el('td', { class: 'num' }, text(j.last_status || null)),
    el('td', { class: 'error-text' }, text(j.last_error)),
    el('td', { class: 'died' }, text(j.died_at)),
    state,
    actions);
}
