// The schedules page: every recurring schedule with its rule and next
// fire times, paused, resumed or deleted a row at a time.

import { call, path, query } from './api.js';
import { el, text, link, table, Message, button, pager } from './dom.js';

// schedulesPerPage is the limit of one page of GET /v1/schedules.
const schedulesPerPage = 50;

// fireTimes shows up to three next fire times, each in UTC and in the
// browser's zone, and how many more there are.
function fireTimes(times) {
  if (!times.length) return el('span', { class: 'none' }, 'none left');
  const shown = times.slice(0, 3).map((t) => el('li', { title: new Date(t).toLocaleString() }, t));
  return el('ul', { class: 'fire-times' }, shown, times.length > 3 ? el('li', { class: 'more' }, `+${times.length - 3} more`) : null);
}

function rule(s) {
  return s.cron ? `cron ${s.cron} (${s.time_zone})` : `every ${s.every_ms} ms`;
}

// schedulesPage: GET /v1/schedules, a page at a time by cursor.
export async function schedulesPage(view, params) {
  const page = await call('GET', '/schedules' + query({ limit: schedulesPerPage, cursor: params.cursor }));
  const message = new Message();
  const rows = page.schedules.map((s) => scheduleRow(s, message));
  view.replaceChildren(
    el('h1', {}, 'Schedules'),
    message.node,
    page.schedules.length === 0
      ? el('p', { id: 'no-schedules' }, 'No schedules: POST /v1/schedules, or toc schedules create, makes one.')
      : table('schedules', ['Schedule', 'Rule', 'Topic', 'Catch-up', 'State', 'Next fire times', 'Actions'], rows),
    pager(['schedules'], { cursor: params.cursor }, 'cursor', page.next_cursor),
  );
}

function scheduleRow(s, message) {
  const state = el('td', { class: 'state' });
  const times = el('td', { class: 'next' });
  const pause = button('Pause', () => act('pause'), { cls: 'pause' });
  const resume = button('Resume', () => act('resume'), { cls: 'resume' });
  const row = el('tr', { 'data-schedule': s.id },
    el('td', { class: 'id' }, s.id),
    el('td', { class: 'rule' }, rule(s)),
    el('td', { class: 'topic' }, link(s.job.topic, ['topics', s.job.topic])),
    el('td', { class: 'catch-up' }, text(s.catch_up)),
    state, times,
    el('td', { class: 'row-actions' }, pause, resume,
      button('Delete', () => remove(), { cls: 'delete', confirmLabel: 'Delete: sure?' })));
  const show = (v) => {
    state.textContent = v.paused ? 'paused' : 'active';
    pause.hidden = v.paused;
    resume.hidden = !v.paused;
    times.replaceChildren(v.paused ? el('span', { class: 'none' }, 'none while paused') : fireTimes(v.next_fire_times));
  };
  async function act(what) {
    try {
      show(await call('POST', path('schedules', s.id, what)));
      message.ok(`Schedule ${s.id} ${what === 'pause' ? 'paused' : 'resumed'}.`);
    } catch (err) {
      message.error(err);
    }
  }
  async function remove() {
    try {
      await call('DELETE', path('schedules', s.id));
      row.remove();
      message.ok(`Schedule ${s.id} deleted; the jobs it made stay.`);
    } catch (err) {
      message.error(err);
    }
  }
  show(s);
  return row;
}
