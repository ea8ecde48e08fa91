// A group's page: its state and its members' counts by status, now and
// at completion, with its completion job.

import { call, path } from './api.js';
import { el, text, link, table, fields } from './dom.js';

const statuses = ['pending', 'firing', 'done', 'cancelled', 'dead', 'purged', 'expired'];

// groupPage: GET /v1/groups/{id}.
export async function groupPage(view, params, id) {
  const g = await call('GET', path('groups', id));
  const counts = (c) => statuses.map((s) => el('td', { class: 'num', 'data-status': s }, text(c ? c[s] : null)));
  view.replaceChildren(
    el('h1', {}, 'Group ', el('code', {}, g.id)),
    fields('group-fields', [
      ['State', g.completed ? 'completed' : g.sealed ? 'sealed, waiting for its members' : 'open, taking members', 'group-state'],
      ['Members', String(g.total), 'group-total'],
      ['Created', g.created_at],
      ['Sealed', g.sealed_at || null],
      ['Completed', g.completed_at || null, 'group-completed-at'],
      ['On complete', g.on_complete ? g.on_complete.callback_url : null],
      ['Completion job', g.completion_job_id ? link(g.completion_job_id, ['jobs', g.completion_job_id], undefined, { id: 'group-job' }) : null],
    ]),
    table('group-counts', ['', ...statuses], [
      el('tr', { 'data-row': 'now' }, el('th', { scope: 'row' }, 'Now'), counts(g.counts)),
      g.completed_counts ? el('tr', { 'data-row': 'completed' }, el('th', { scope: 'row' }, 'At completion'), counts(g.completed_counts)) : [],
    ]),
  );
}
