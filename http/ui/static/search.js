// Finding a job by id or idempotency key across the topics the token may
// see: the header's box opens #/search?q=, which opens the job's page
// when one job matches and lists them otherwise (GET /v1/jobs/search).

import { call, query } from './api.js';
import { el, text, link, route, table } from './dom.js';

// searchPage: GET /v1/jobs/search?q=. One match opens its job's page in
// place of this one (back goes to the page before the search).
export async function searchPage(view, params) {
  const q = (params.q || '').trim();
  const box = document.getElementById('find-q');
  if (box && box.value !== q) box.value = q;
  if (!q) {
    view.replaceChildren(el('h1', {}, 'Find a job'), el('p', { id: 'no-search' }, 'Type a job id or an idempotency key in the box above.'));
    return;
  }
  const r = await call('GET', '/jobs/search' + query({ q }));
  if (r.jobs.length === 1 && params.list !== '1') {
    location.replace(route(['jobs', r.jobs[0].id]));
    return;
  }
  view.replaceChildren(
    el('h1', {}, 'Find ', el('span', { id: 'search-q' }, q)),
    r.jobs.length === 0
      ? el('p', { id: 'no-search-results' }, `No job has the id or the key ${q} in the ${r.topics_searched} topics searched.`)
      : table('search-results', ['Job', 'Topic', 'Key', 'Status', 'Due'], r.jobs.map((j) => el('tr', { 'data-job': j.id },
        el('td', {}, link(j.id, ['jobs', j.id])),
        el('td', { class: 'topic' }, link(j.topic, ['topics', j.topic])),
        el('td', { class: 'key' }, text(j.key)),
        el('td', { class: 'status' }, j.status),
        el('td', {}, text(j.fire_at))))),
    ...(r.truncated ? [el('p', { id: 'search-truncated', class: 'hint' }, `Keys were looked for in the first ${r.topics_searched} topics by name only: the token sees more. A topic's page finds a key in it.`)] : []),
  );
}

// findForm wires the header's search box: submitting it opens the search
// page of what it holds.
export function findForm(form) {
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const q = new FormData(form).get('q').trim();
    const hash = route(['search'], { q });
    if (location.hash === hash) window.dispatchEvent(new HashChangeEvent('hashchange'));
    else location.hash = hash;
  });
}
