// The dashboard: a single page whose hash routes are the pages, each
// drawn from the REST API with the token given at login.

import { call, token } from './api.js';
import { el, describe, link } from './dom.js';
import { topicsPage, topicPage } from './topics.js';
import { jobPage } from './job.js';
import { deadLettersPage } from './deadletters.js';
import { clusterPage } from './cluster.js';
import { schedulesPage } from './schedules.js';
import { groupPage } from './groups.js';
import { auditPage } from './audit.js';
import { chartsPage } from './charts.js';
import { searchPage, findForm } from './search.js';

// routes map a path to its page, called with the view to fill, the
// query's parameters and the path's captured (decoded) parts.
const routes = [
  [/^\/topics$/, topicsPage],
  [/^\/charts$/, chartsPage],
  [/^\/topics\/([^/]+)$/, topicPage],
  [/^\/jobs\/([^/]+)$/, jobPage],
  [/^\/deadletters$/, deadLettersPage],
  [/^\/schedules$/, schedulesPage],
  [/^\/groups\/([^/]+)$/, groupPage],
  [/^\/cluster$/, clusterPage],
  [/^\/audit$/, auditPage],
  [/^\/search$/, searchPage],
];

const home = '#/topics';

// After login, the page that asked for it; notice says why the login form
// is shown (logged out, token refused).
let after = home;
let notice = null;

function parse(hash) {
  const s = hash.replace(/^#/, '') || home.slice(1);
  const i = s.indexOf('?');
  return {
    path: i < 0 ? s : s.slice(0, i),
    params: Object.fromEntries(new URLSearchParams(i < 0 ? '' : s.slice(i + 1))),
  };
}

function go(hash) {
  if (location.hash === hash) render();
  else location.hash = hash;
}

function toLogin(why) {
  token.clear();
  notice = why;
  location.replace('#/login');
}

async function render() {
  const main = document.getElementById('main');
  const nav = document.getElementById('nav');
  const { path, params } = parse(location.hash);
  if (path === '/logout') {
    toLogin({ kind: 'ok', text: 'Logged out: the token is no longer kept in this tab.' });
    return;
  }
  // With auth off (toc dev) the API answers without a token: no form.
  if (path !== '/login' && token.get() === null && await authOff()) token.set('');
  if (path === '/login' || token.get() === null) {
    if (path !== '/login') after = location.hash || home;
    nav.hidden = true;
    main.replaceChildren(loginForm());
    document.getElementById('token').focus();
    return;
  }
  nav.hidden = false;
  for (const a of nav.querySelectorAll('a')) {
    a.toggleAttribute('aria-current', path.startsWith(a.getAttribute('href').slice(1)));
  }
  // Each render fills a view of its own: a page still loading when the
  // user moves on fills a view no longer shown.
  const view = el('section', { class: 'view' }, el('p', { class: 'loading' }, 'Loading…'));
  main.replaceChildren(view);
  const found = routes.find(([re]) => re.test(path));
  if (!found) {
    view.replaceChildren(el('p', { class: 'message error' }, `No page at ${path}. `), link('Topics', ['topics']));
    return;
  }
  const [re, page] = found;
  try {
    await page(view, params, ...path.match(re).slice(1).map(decodeURIComponent));
  } catch (err) {
    if (err.status === 401) {
      after = location.hash;
      toLogin({ kind: 'error', text: 'The API refused the token: ' + describe(err) });
      return;
    }
    view.replaceChildren(el('p', { class: 'message error', role: 'alert' }, describe(err)));
  }
}

// authOff reports whether the API answers without a token: GET
// /v1/topics, which needs one whenever auth is on.
async function authOff() {
  try {
    await call('GET', '/topics', undefined, { token: '' });
    return true;
  } catch {
    return false;
  }
}

// loginForm asks for the API token and checks it with GET /v1/topics
// before keeping it. With auth off any value, even none, is let in.
function loginForm() {
  const input = el('input', { id: 'token', name: 'token', type: 'password', autocomplete: 'off', spellcheck: 'false' });
  const submit = el('button', { type: 'submit', id: 'login' }, 'Log in');
  const shown = notice;
  notice = null;
  const message = el('p', { id: 'login-error', role: 'alert', hidden: !shown, class: shown ? 'message ' + shown.kind : 'message' }, shown && shown.text);
  const form = el('form', { id: 'login-form', class: 'login' },
    el('h1', {}, 'Log in'),
    el('label', {}, 'API token', input),
    el('p', { class: 'hint' }, 'One of the server\'s tokens (--api-token, or --tokens-file: the dashboard then shows only that token\'s topics). It is kept in this tab only (sessionStorage) and sent as a bearer token.'),
    submit, message);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    submit.disabled = true;
    try {
      await call('GET', '/topics', undefined, { token: input.value });
      token.set(input.value);
      go(after === '#/login' ? home : after);
    } catch (err) {
      message.textContent = (err.status === 401 ? 'Wrong token: ' : '') + describe(err);
      message.className = 'message error';
      message.hidden = false;
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}

findForm(document.getElementById('find'));
window.addEventListener('hashchange', render);
render();
