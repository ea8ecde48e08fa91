// The series charts: GET /v1/series (every topic) or GET
// /v1/topics/{topic}/series drawn with uPlot (uplot.iife.min.js, a
// pinned npm package copied here: see ../lib/package.json), over a range
// chosen in a picker, in local time or UTC, refreshed every 5 s while the
// tab is shown. The numbers drawn are also in a table under the charts,
// and each chart's element holds its uPlot instance (.uplot), whose data
// is what it draws; the section's data-query is the last request,
// data-drawn the one whose answer is drawn, data-loaded counts the
// answers, data-refresh says whether it refreshes (on, paused, off).

import { call, path, query } from './api.js';
import { el, describe } from './dom.js';

/* global uPlot */

// refreshMs is how often a range that ends now is fetched again.
const refreshMs = 5000;

// ranges are the picker's choices: how far back from now, in minutes;
// custom takes a from and a to.
const ranges = [['15m', 15, 'Last 15 min'], ['1h', 60, 'Last hour'], ['6h', 360, 'Last 6 hours'], ['24h', 1440, 'Last 24 hours'], ['custom', 0, 'Custom']];

// charts are the charts drawn, each of some fields of a bucket.
const charts = [
  { id: 'fires', title: 'Attempts and failures', lines: [
    ['fires', 'fires', '#2563eb', (b) => b.fires],
    ['4xx', 'failed 4xx', '#f59e0b', (b) => b.failures['4xx']],
    ['5xx', 'failed 5xx', '#dc2626', (b) => b.failures['5xx']],
    ['timeout', 'timed out', '#7c3aed', (b) => b.failures.timeout],
    ['other', 'failed, other', '#6b7280', (b) => b.failures.other],
    ['dead', 'dead letters', '#111827', (b) => b.dead],
  ] },
  { id: 'lateness', title: 'Lateness (ms, upper bound of its bucket)', lines: [
    ['p50', 'p50', '#059669', (b) => b.lateness_p50_ms],
    ['p99', 'p99', '#dc2626', (b) => b.lateness_p99_ms],
  ] },
  { id: 'load', title: 'In flight and throttled', lines: [
    ['in_flight', 'in flight (most at once)', '#2563eb', (b) => b.in_flight],
    ['throttled', 'throttled claims', '#f59e0b', (b) => b.throttled],
  ] },
];

// seriesData is the uPlot data of chart c from an answer's buckets: the
// bucket starts in seconds, then one array per line (null: no value).
export function seriesData(c, buckets) {
  return [buckets.map((b) => Date.parse(b.start) / 1000), ...c.lines.map(([, , , f]) => buckets.map(f))];
}

// localInput is the value of a datetime-local input showing d, in UTC or
// in the browser's time zone.
function localInput(d, utc) {
  const shifted = utc ? d : new Date(d.getTime() - d.getTimezoneOffset() * 60_000);
  return shifted.toISOString().slice(0, 16);
}

// fromInput reads a datetime-local input's value as a time in UTC or in
// the browser's time zone; null when empty or not a time.
function fromInput(v, utc) {
  if (!v) return null;
  const d = new Date(utc ? v + 'Z' : v);
  return Number.isNaN(d.getTime()) ? null : d;
}

// shown writes a time for the page, in UTC or local time.
function shown(iso, utc) {
  const d = new Date(iso);
  return utc ? d.toISOString().slice(0, 19).replace('T', ' ') + ' UTC' : d.toLocaleString();
}

// chartsSection returns the section of the series of topic (every topic
// when null), and load, which draws it and starts the auto-refresh; it
// stops once the section has left the page.
export function chartsSection(topic) {
  const state = { range: '1h', utc: false, from: null, to: null };
  const picker = el('select', { id: 'series-range', name: 'range', 'aria-label': 'Time range' },
    ranges.map(([v, , label]) => el('option', { value: v, selected: v === state.range }, label)));
  const fromIn = el('input', { type: 'datetime-local', id: 'series-from', name: 'from' });
  const toIn = el('input', { type: 'datetime-local', id: 'series-to', name: 'to' });
  const custom = el('span', { class: 'series-custom', hidden: true },
    el('label', {}, 'From ', fromIn), ' ', el('label', {}, 'To ', toIn), ' ',
    el('button', { type: 'submit', id: 'series-apply' }, 'Show'));
  const utcBox = el('input', { type: 'checkbox', id: 'series-utc', name: 'utc' });
  const form = el('form', { id: 'series-form', class: 'search' }, picker, ' ', custom, ' ',
    el('label', { class: 'toggle' }, utcBox, 'UTC'));
  const status = el('p', { id: 'series-status', class: 'hint' });
  const error = el('p', { id: 'series-error', class: 'message error', role: 'alert', hidden: true });
  const plots = el('div', { class: 'series-charts' }, charts.map((c) => el('div', { id: 'chart-' + c.id, class: 'series-chart' })));
  const numbers = el('details', { class: 'series-numbers' }, el('summary', {}, 'The numbers drawn'), el('div', { id: 'series-table' }));
  const node = el('section', { id: 'series', 'data-loaded': '0', 'data-refresh': 'on' }, form, status, error, plots, numbers);
  let answer = null;
  let timer = null;
  let drawnUTC = null;

  // request is the path of the current range's query.
  function request() {
    const base = topic == null ? '/series' : path('topics', topic, 'series');
    if (state.range === 'custom') return base + query({ from: state.from && state.from.toISOString(), to: state.to && state.to.toISOString() });
    const minutes = ranges.find(([v]) => v === state.range)[1];
    return base + query({ from: new Date(Date.now() - minutes * 60_000).toISOString() });
  }

  async function refresh() {
    if (!node.isConnected) return stop(); // the page moved on
    const req = request();
    node.dataset.query = req;
    try {
      const a = await call('GET', req);
      if (node.dataset.query !== req) return; // a later request is under way
      answer = a;
      error.hidden = true;
      draw();
      node.dataset.drawn = req;
      node.dataset.loaded = String(Number(node.dataset.loaded) + 1);
    } catch (err) {
      error.textContent = 'The API could not give the series: ' + describe(err);
      error.hidden = false;
      node.dataset.loaded = String(Number(node.dataset.loaded) + 1);
    }
  }

  function draw() {
    for (const c of charts) {
      const box = plots.querySelector('#chart-' + c.id);
      const width = Math.max(300, (box.clientWidth || 460) - 12);
      const data = seriesData(c, answer.buckets);
      if (box.uplot && drawnUTC === state.utc) {
        box.uplot.setData(data);
        continue;
      }
      if (box.uplot) box.uplot.destroy();
      const opts = {
        title: c.title, width, height: 200,
        series: [{}, ...c.lines.map(([, label, stroke]) => ({ label, stroke, width: 2, spanGaps: false }))],
        scales: { x: { time: true } },
        axes: [{}, { size: 56 }],
      };
      if (state.utc) opts.tzDate = (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC');
      box.uplot = new uPlot(opts, data, box);
    }
    drawnUTC = state.utc;
    drawTable();
    status.textContent = `${shown(answer.from, state.utc)} to ${shown(answer.to, state.utc)}, by ${answer.step}, ` +
      `${answer.members} member${answer.members === 1 ? '' : 's'}; ` + refreshText();
  }

  // drawTable writes the numbers drawn: a row per bucket.
  function drawTable() {
    const heads = ['start', ...charts.flatMap((c) => c.lines.map(([key]) => key))];
    const rows = answer.buckets.map((b) => el('tr', { 'data-start': b.start },
      el('td', {}, shown(b.start, state.utc)),
      charts.flatMap((c) => c.lines.map(([key, , , f]) => el('td', { 'data-key': key }, f(b) == null ? '' : String(f(b)))))));
    numbers.querySelector('#series-table').replaceChildren(el('table', {},
      el('thead', {}, el('tr', {}, heads.map((h) => el('th', { scope: 'col' }, h)))), el('tbody', {}, rows)));
  }

  function refreshText() {
    if (state.range === 'custom') return 'a fixed range: not refreshed';
    return node.dataset.refresh === 'paused' ? 'auto-refresh paused while the tab is hidden' : `refreshed every ${refreshMs / 1000} s`;
  }

  function start() {
    clearInterval(timer);
    timer = null;
    const live = state.range !== 'custom';
    node.dataset.refresh = !live ? 'off' : document.hidden ? 'paused' : 'on';
    if (live && !document.hidden) timer = setInterval(refresh, refreshMs);
  }

  function stop() {
    clearInterval(timer);
    document.removeEventListener('visibilitychange', onVisibility);
  }

  function onVisibility() {
    if (!node.isConnected) return stop();
    start();
    if (!document.hidden && state.range !== 'custom') refresh();
    else if (answer) status.textContent = status.textContent.replace(/[^;]*$/, ' ' + refreshText());
  }

  picker.addEventListener('change', () => {
    state.range = picker.value;
    custom.hidden = state.range !== 'custom';
    if (state.range === 'custom') {
      const to = new Date();
      state.from = state.from || new Date(to.getTime() - 3_600_000);
      state.to = state.to || to;
      fromIn.value = localInput(state.from, state.utc);
      toIn.value = localInput(state.to, state.utc);
    }
    start();
    refresh();
  });
  utcBox.addEventListener('change', () => {
    state.utc = utcBox.checked;
    if (state.from) fromIn.value = localInput(state.from, state.utc);
    if (state.to) toIn.value = localInput(state.to, state.utc);
    if (answer) draw();
  });
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    state.from = fromInput(fromIn.value, state.utc);
    state.to = fromInput(toIn.value, state.utc);
    refresh();
  });

  async function load() {
    document.addEventListener('visibilitychange', onVisibility);
    start();
    await refresh();
  }
  return { node, load };
}

// chartsPage is the series of every topic.
export async function chartsPage(view) {
  const s = chartsSection(null);
  view.replaceChildren(el('h1', {}, 'Charts: every topic'),
    el('p', { class: 'hint' }, 'What the cluster did with every topic\'s jobs, by 10 s over the last hour and by the minute over the last day (GET /v1/series). A topic\'s own are on its page.'),
    s.node);
  await s.load();
}
