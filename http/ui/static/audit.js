// The audit page: who did which admin or bulk action, when, and how many
// jobs it changed, newest first, filtered by action, topic and caller.

import { call, query } from './api.js';
import { el, text, link, route, table, pager, searchForm, input, select } from './dom.js';

// auditPerPage is the limit of one page of GET /v1/audit.
const auditPerPage = 50;

// actions are those GET /v1/audit?action= takes.
const actions = ['topic.put', 'topic.patch', 'topic.pause', 'topic.resume', 'topic.delete',
  'deadletter.replay', 'deadletter.purge', 'deadletter.replay_bulk', 'deadletter.purge_bulk',
  'jobs.cancel_bulk', 'jobs.reschedule_bulk', 'jobs.cancel_selected', 'jobs.reschedule_selected',
  'jobs.fire_now_selected', 'deadletter.replay_selected', 'deadletter.purge_selected',
  'schedule.pause', 'schedule.resume', 'schedule.delete'];

// auditPage: GET /v1/audit?action=&topic=&who=&cursor=, a page at a time.
export async function auditPage(view, params) {
  const filters = { action: params.action, topic: params.topic, who: params.who };
  const page = await call('GET', '/audit' + query({ ...filters, limit: auditPerPage, cursor: params.cursor }));
  const form = searchForm('audit-search', [
    select('Action', 'action', params.action || '', [['', 'any'], ...actions.map((a) => [a, a])]),
    input('Topic', 'topic', params.topic, { size: 16 }),
    input('Who', 'who', params.who, { size: 12 }),
  ], (f) => { location.hash = route(['audit'], f); });
  view.replaceChildren(
    el('h1', {}, 'Audit log'),
    form,
    page.entries.length === 0
      ? el('p', { id: 'no-audit' }, 'No admin or bulk action recorded yet.')
      : table('audit', ['When', 'Who', 'Action', 'Topic', 'Target', 'Jobs', 'Result'], page.entries.map(auditRow)),
    pager(['audit'], { ...filters, cursor: params.cursor }, 'cursor', page.next_cursor),
  );
}

function auditRow(e) {
  const details = e.details ? JSON.stringify(e.details) : '';
  return el('tr', { 'data-audit': e.id, title: details },
    el('td', { class: 'at', title: new Date(e.at).toLocaleString() }, e.at),
    el('td', { class: 'who' }, e.who),
    el('td', { class: 'action' }, e.action),
    el('td', { class: 'topic' }, e.topic ? link(e.topic, ['topics', e.topic]) : text(null)),
    el('td', { class: 'target' }, text(e.target)),
    el('td', { class: 'jobs num' }, String(e.jobs)),
    el('td', { class: 'result ' + e.result, title: e.error || '' }, e.result === 'ok' ? 'ok' : `failed: ${e.error}`));
}
