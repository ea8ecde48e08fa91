// Acting on many jobs: a checkbox on each row of a list, one to select
// them all, and a bar of actions on the ones checked, each asking for a
// confirmation, then saying what the API did: "N changed, M could not:
// why" (POST /v1/jobs/bulk, POST /v1/deadletters/bulk).

import { call } from './api.js';
import { el, button, describe } from './dom.js';

// shownFailures bounds the failed jobs the result line names one by one.
const shownFailures = 10;

// Selection is the checked rows of a list, redrawn with the list: box
// makes a row's checkbox cell, all is the header's select-all box.
export class Selection {
  constructor(prefix) {
    this.boxes = [];
    this.listeners = [];
    this.all = el('input', { type: 'checkbox', id: prefix + '-select-all', 'aria-label': 'Select every job shown', onchange: () => this.checkAll() });
    this.count = el('span', { id: prefix + '-selected', class: 'selected-count' }, '0 selected');
  }

  // reset forgets the rows of the list drawn before.
  reset() {
    this.boxes = [];
    this.changed();
  }

  // box is the cell of the row of job id.
  box(id) {
    const b = el('input', { type: 'checkbox', class: 'select', value: id, 'aria-label': `Select job ${id}`, onchange: () => this.changed() });
    this.boxes.push(b);
    return el('td', { class: 'select' }, b);
  }

  checkAll() {
    for (const b of this.boxes) b.checked = this.all.checked;
    this.changed();
  }

  ids() {
    return this.boxes.filter((b) => b.checked).map((b) => b.value);
  }

  changed() {
    const n = this.ids().length;
    this.count.textContent = `${n} selected`;
    this.all.checked = n > 0 && n === this.boxes.length;
    this.all.indeterminate = n > 0 && n < this.boxes.length;
    for (const f of this.listeners) f(n);
  }
}

// plural is "1 job", "2 jobs".
const plural = (n, noun) => `${n} ${noun}${n === 1 ? '' : 's'}`;

// outcome is the result line of a bulk call's answer.
export function outcome(r) {
  const failed = r.failed || [];
  const head = `${r.changed} changed, ${failed.length} could not`;
  if (failed.length === 0) return head + '.';
  const why = failed.slice(0, shownFailures).map((f) => `job ${f.id}: ${f.error.code} (${f.error.message})`);
  if (failed.length > shownFailures) why.push(`and ${failed.length - shownFailures} more`);
  return `${head}: ${why.join('; ')}.`;
}

// actionBar is the bar of a list's bulk actions: for each of actions
// ({label, id, verb, body, cls}), a button that asks to confirm ("Confirm:
// cancel 3 jobs"), then POSTs {action, ids, ...body()} to path, redraws
// the list with refresh and shows the outcome in result. extra are more
// controls (the reschedule time).
export function actionBar(id, sel, path, actions, refresh, result, extra = []) {
  const buttons = actions.map((a) => {
    const b = button(a.label, () => act(a), {
      id: a.id,
      cls: a.cls,
      confirmLabel: () => `Confirm: ${a.verb} ${plural(sel.ids().length, 'job')}`,
      enabled: () => sel.ids().length > 0,
    });
    b.disabled = true;
    return b;
  });
  sel.listeners.push((n) => { for (const b of buttons) b.disabled = n === 0; });
  async function act(a) {
    // The line of the action before goes: the one shown is this one's.
    result.node.hidden = true;
    result.node.textContent = '';
    const ids = sel.ids();
    let body;
    try {
      body = { action: a.action, ids, ...(a.body ? a.body() : {}) };
    } catch (err) {
      result.show(describe(err), 'error');
      return;
    }
    let r;
    try {
      r = await call('POST', path, body);
    } catch (err) {
      result.error(err);
      return;
    }
    const said = outcome(r);
    try {
      await refresh();
    } catch (err) {
      result.show(said + ' The list could not be drawn again: ' + describe(err), 'error');
      return;
    }
    result.show(said, r.failed.length === 0 ? 'ok' : r.changed === 0 ? 'error' : 'warn');
  }
  return el('div', { id, class: 'bulk-bar actions' }, sel.count, buttons, extra);
}

// localInput formats t for a datetime-local input: local time, to the
// minute.
function localInput(t) {
  const p = (n) => String(n).padStart(2, '0');
  return `${t.getFullYear()}-${p(t.getMonth() + 1)}-${p(t.getDate())}T${p(t.getHours())}:${p(t.getMinutes())}`;
}

// whenInput is a datetime-local input in the browser's local time, an
// hour ahead to start with, shown beside it in UTC too; at() is the time
// it holds, or throws when it holds none.
export function whenInput(prefix) {
  const input = el('input', { type: 'datetime-local', id: prefix + '-when', value: localInput(new Date(Date.now() + 3_600_000)) });
  const utc = el('span', { id: prefix + '-when-utc', class: 'hint' });
  const show = () => {
    const t = new Date(input.value);
    utc.textContent = isNaN(t) ? 'no time chosen' : `${Intl.DateTimeFormat().resolvedOptions().timeZone} time; ${t.toISOString()} UTC`;
  };
  input.addEventListener('input', show);
  show();
  return {
    node: el('label', { class: 'inline' }, 'to', input, utc),
    at() {
      const t = new Date(input.value);
      if (isNaN(t)) throw new Error('Choose the time to reschedule to.');
      return t;
    },
  };
}
