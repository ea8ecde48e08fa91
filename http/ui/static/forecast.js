// A topic's forecast: GET /v1/topics/{topic}/forecast drawn as a bar
// chart in plain SVG, one bar per bucket, with a form to choose the range
// and the step. Each bar carries its bucket in data-start and data-count,
// and says both in its <title> (the tooltip).

import { call, path } from './api.js';
import { el, describe } from './dom.js';

const svgNS = 'http://www.w3.org/2000/svg';

// The chart's box, in SVG units (it scales to the page's width), and the
// margins that hold the axes' labels.
const width = 960;
const height = 260;
const margin = { top: 14, right: 16, bottom: 52, left: 64 };

// xLabels is about how many bucket starts the x axis names.
const xLabels = 8;

// svg makes an SVG element, as el makes an HTML one: attributes, and
// children that are nodes or text.
function svg(tag, attrs = {}, ...children) {
  const e = document.createElementNS(svgNS, tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v != null) e.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c != null) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

// defaults are the form's values when the route gives none: from the
// start of this hour (UTC), a day, by the hour.
function defaults() {
  const from = new Date();
  from.setUTCMinutes(0, 0, 0);
  const to = new Date(from.getTime() + 24 * 3_600_000);
  return { from: iso(from), to: iso(to), step: '1h' };
}

// iso writes a time as the API takes it, without milliseconds.
function iso(d) {
  return d.toISOString().replace('.000Z', 'Z');
}

// label names a bucket start on the x axis: the time of day (UTC), and
// the date when the range spans more than a day or the step is a day or
// more.
function label(start, long) {
  const s = start.replace('.000Z', 'Z');
  return long ? s.slice(5, 16).replace('T', ' ') : s.slice(11, 16);
}

// forecastSection is the topic page's forecast: the form, then the chart
// of the range in params (forecast_from, forecast_to, forecast_step),
// which go into the route so that a chart can be linked to.
export function forecastSection(name, params, go) {
  const d = defaults();
  const values = { from: params.forecast_from || d.from, to: params.forecast_to || d.to, step: params.forecast_step || d.step };
  const input = (lbl, key, size) => el('label', {}, lbl, el('input', { name: key, value: values[key], size }));
  const form = el('form', { id: 'forecast-form', class: 'inline' },
    input('From (RFC 3339)', 'from', 22), input('To (RFC 3339)', 'to', 22), input('Step (15m, 1h, 24h)', 'step', 8),
    el('button', { type: 'submit' }, 'Show'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const f = Object.fromEntries(new FormData(form));
    go({ forecast_from: f.from, forecast_to: f.to, forecast_step: f.step });
  });
  const chart = el('div', { id: 'forecast', class: 'forecast' }, el('p', { class: 'loading' }, 'Loading the forecast…'));
  const section = el('section', { id: 'forecast-section' }, form, chart);
  return { node: section, load: () => loadForecast(chart, name, values) };
}

// loadForecast fills box with the chart, or with the API's error (a 400
// names the parameter at fault).
async function loadForecast(box, name, values) {
  let f;
  try {
    f = await call('GET', path('topics', name, 'forecast') + '?' + new URLSearchParams(values));
  } catch (err) {
    if (err.status === 401) throw err;
    box.replaceChildren(el('p', { id: 'forecast-error', class: 'message error', role: 'alert' }, 'No forecast: ' + describe(err)));
    box.dataset.loaded = 'true';
    return;
  }
  const total = f.buckets.reduce((n, b) => n + b.count, 0);
  const partial = f.complete ? [] : [el('p', { id: 'forecast-partial', class: 'message error' },
    `More jobs than a forecast counts: counted up to ${f.counted_to}; the buckets from there on are at least what they show.`)];
  box.replaceChildren(
    el('p', { id: 'forecast-total' }, `${total} job${total === 1 ? '' : 's'} due from ${f.from} to ${f.to}, by ${f.step}.`),
    ...partial,
    drawChart(f, values.step));
  box.dataset.loaded = 'true';
}

// drawChart is the SVG of f: a bar per bucket over a count axis from 0 to
// the largest count, with gridlines, and bucket starts under the bars;
// step is the step as the user wrote it.
function drawChart(f, step) {
  const n = f.buckets.length;
  const top = Math.max(1, ...f.buckets.map((b) => b.count));
  const plotW = width - margin.left - margin.right;
  const plotH = height - margin.top - margin.bottom;
  const slot = plotW / n;
  const barW = Math.max(1, slot * 0.8);
  const y = (c) => margin.top + plotH - (c / top) * plotH;
  const spanMs = Date.parse(f.to) - Date.parse(f.from);
  const long = spanMs > 24 * 3_600_000 || Date.parse(f.buckets[Math.min(1, n - 1)].start) - Date.parse(f.from) >= 24 * 3_600_000;

  const grid = [];
  for (const c of [...new Set([0, Math.round(top / 2), top])]) {
    grid.push(svg('line', { class: 'grid', x1: margin.left, x2: width - margin.right, y1: y(c), y2: y(c) }),
      svg('text', { class: 'y-label', x: margin.left - 8, y: y(c) + 4, 'text-anchor': 'end' }, c));
  }
  const bars = f.buckets.map((b, i) => {
    const x = margin.left + i * slot + (slot - barW) / 2;
    const h = margin.top + plotH - y(b.count);
    return svg('rect', { class: 'bar', x, y: y(b.count), width: barW, height: h, 'data-start': b.start, 'data-count': b.count },
      svg('title', {}, `${b.start}: ${b.count} job${b.count === 1 ? '' : 's'}`));
  });
  const every = Math.max(1, Math.ceil(n / xLabels));
  const ticks = [];
  for (let i = 0; i < n; i += every) {
    const x = margin.left + i * slot + slot / 2;
    ticks.push(svg('line', { class: 'tick', x1: x, x2: x, y1: margin.top + plotH, y2: margin.top + plotH + 5 }),
      svg('text', { class: 'x-label', x, y: margin.top + plotH + 18, 'text-anchor': 'middle' }, label(f.buckets[i].start, long)));
  }
  return svg('svg', { id: 'forecast-chart', viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': `Jobs of ${f.topic} due per ${f.step}` },
    grid, bars, ticks,
    svg('line', { class: 'axis', x1: margin.left, x2: width - margin.right, y1: margin.top + plotH, y2: margin.top + plotH }),
    svg('line', { class: 'axis', x1: margin.left, x2: margin.left, y1: margin.top, y2: margin.top + plotH }),
    svg('text', { class: 'axis-title', x: margin.left + plotW / 2, y: height - 8, 'text-anchor': 'middle' },
      `Start of each bucket of ${step} (UTC)`),
    svg('text', { class: 'axis-title', x: 16, y: margin.top + plotH / 2, 'text-anchor': 'middle', transform: `rotate(-90 16 ${margin.top + plotH / 2})` },
      'Jobs due'));
}
