// Building the page. Every value goes in as text (a Text node or an
// attribute), never as HTML: nothing the API returns can become markup.

import { query } from './api.js';

// el makes an element: attrs are attributes, except "class", and "on..."
// which are event listeners; null, undefined and false are left out.
// Children are nodes or values shown as text.
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v == null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'class') e.className = v;
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c == null || c === false) continue;
    e.append(c instanceof Node ? c : text(c));
  }
  return e;
}

// text shows a value of the API: a number too large for a double is kept
// as the digits it came as (see api.js).
export function text(v) {
  if (v == null || v === '') return '—';
  if (typeof JSON.isRawJSON === 'function' && JSON.isRawJSON(v)) return v.rawJSON;
  return String(v);
}

// link is an anchor to a hash route built from path segments and a query.
export function link(label, segments, query, attrs = {}) {
  return el('a', { href: route(segments, query), ...attrs }, label);
}

// route builds "#/a/b?k=v": each segment escaped, empty query values left out.
export function route(segments, params = {}) {
  return '#/' + segments.map(encodeURIComponent).join('/') + query(params);
}

// duration shows milliseconds for a person.
export function duration(ms) {
  if (ms == null) return '—';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 3_600_000) return `${(ms / 60_000).toFixed(1)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

// table makes a table with a header row; rows are <tr> elements.
export function table(id, headers, rows) {
  return el('table', { id },
    el('thead', {}, el('tr', {}, headers.map((h) => el('th', { scope: 'col' }, h)))),
    el('tbody', {}, rows));
}

// fields makes a definition list of [label, value, id] rows.
export function fields(id, rows) {
  return el('dl', { id, class: 'fields' },
    rows.map(([label, value, vid]) => [el('dt', {}, label), el('dd', { id: vid }, value instanceof Node ? value : text(value))]));
}

// Message is a line that tells what the API answered to an action.
export class Message {
  constructor(id = 'message') {
    this.node = el('p', { id, class: 'message', role: 'status', hidden: true });
  }

  ok(s) { this.show(s, 'ok'); }

  error(err) { this.show(describe(err), 'error'); }

  show(s, kind) {
    this.node.textContent = s;
    this.node.className = 'message ' + kind;
    this.node.hidden = false;
  }
}

// describe turns an error of api.js (or any other) into a line.
export function describe(err) {
  if (err && err.status) {
    const field = err.field ? ` (field ${err.field})` : '';
    return `${err.status} ${err.code}: ${err.message}${field}`;
  }
  return String(err && err.message ? err.message : err);
}

// button runs action on click, disabled while it runs; with confirmLabel
// (a label, or a function that makes it when asked) the first click only
// asks, turning into that label, and the second runs it. With enabled,
// the button is enabled after its action only when enabled() says so.
export function button(label, action, { id, confirmLabel, cls, enabled } = {}) {
  const b = el('button', { type: 'button', id, class: cls }, label);
  let armed = false;
  b.addEventListener('click', async () => {
    if (confirmLabel && !armed) {
      armed = true;
      b.textContent = typeof confirmLabel === 'function' ? confirmLabel() : confirmLabel;
      b.classList.add('armed');
      return;
    }
    armed = false;
    b.textContent = label;
    b.classList.remove('armed');
    b.disabled = true;
    try {
      await action();
    } finally {
      b.disabled = enabled ? !enabled() : false;
    }
  });
  return b;
}

// pager is the links to the first and the next page of a cursor-paged list.
export function pager(segments, query, cursorKey, next) {
  const first = query[cursorKey] ? link('« First page', segments, { ...query, [cursorKey]: '' }, { class: 'first' }) : null;
  const more = next ? link('Next page »', segments, { ...query, [cursorKey]: next }, { class: 'next' }) : null;
  return el('p', { class: 'pager' }, first, ' ', more);
}

// searchForm is a form of named text inputs and selects; submitting it
// calls go with the values by name.
export function searchForm(id, controls, go) {
  const form = el('form', { id, class: 'search' }, controls, el('button', { type: 'submit' }, 'Search'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    go(Object.fromEntries(new FormData(form)));
  });
  return form;
}

// input is a labelled text input.
export function input(label, name, value, attrs = {}) {
  return el('label', {}, label, el('input', { name, value: value || '', ...attrs }));
}

// select is a labelled select of options [value, label].
export function select(label, name, value, options, attrs = {}) {
  return el('label', {}, label,
    el('select', { name, ...attrs }, options.map(([v, l]) => el('option', { value: v, selected: v === value }, l))));
}

// deadline is how a deadline rule (expire_after_ms) reads: none, must not
// fire late, or how long after the due time an attempt may still start.
export function deadline(ms) {
  if (ms === null || ms === undefined) return 'none';
  if (ms === 0) return 'must not fire late';
  return `${duration(ms)} after the due time`;
}
