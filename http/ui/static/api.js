// Calls to toc's REST API under /v1, with the token the user logged in
// with. The token lives in sessionStorage (this tab only, gone when it
// closes) and travels only in the Authorization header, never in a URL.

const tokenKey = 'toc.token';

export const token = {
  // get returns the token, "" when logged in without one (auth off), or
  // null when not logged in.
  get: () => sessionStorage.getItem(tokenKey),
  set: (t) => sessionStorage.setItem(tokenKey, t),
  clear: () => sessionStorage.removeItem(tokenKey),
};

// APIError is an error answer: the HTTP status and the API's code,
// message and field.
export class APIError extends Error {
  constructor(status, code, message, field) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field;
  }
}

// exact keeps an integer too large for a double (a biz_id is a uint64) as
// the digits it came as, where the browser can (JSON.rawJSON).
function exact(key, value, ctx) {
  if (typeof value === 'number' && !Number.isSafeInteger(value) && ctx && /^-?\d+$/.test(ctx.source)) {
    return JSON.rawJSON(ctx.source);
  }
  return value;
}
const reviver = typeof JSON.rawJSON === 'function' ? exact : undefined;

// call sends method path (under /v1) with body as JSON, when given, and
// returns the decoded answer; an error answer throws an APIError. A token
// in opts.token is used instead of the stored one; opts.ifMatch, a job's
// version, is sent as If-Match, so that a change of a job that changed
// since it was shown answers 412 version_mismatch and changes nothing.
export async function call(method, path, body, opts = {}) {
  const headers = { Accept: 'application/json' };
  if (opts.ifMatch) headers['If-Match'] = `"${opts.ifMatch}"`;
  const t = 'token' in opts ? opts.token : token.get();
  if (t) headers.Authorization = 'Bearer ' + t;
  const init = { method, headers, cache: 'no-store', credentials: 'omit' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch('/v1' + path, init);
  } catch (err) {
    throw new APIError(0, 'network', 'the API did not answer: ' + err.message);
  }
  const raw = await resp.text();
  let data = null;
  try {
    data = raw ? JSON.parse(raw, reviver) : null;
  } catch {
    data = null;
  }
  if (!resp.ok) {
    const e = (data && data.error) || {};
    throw new APIError(resp.status, e.code || 'http_error', e.message || resp.statusText || 'no message', e.field);
  }
  return data;
}

// path joins escaped segments: path('topics', name, 'stats').
export function path(...segments) {
  return '/' + segments.map((s) => encodeURIComponent(String(s))).join('/');
}

// query makes "?k=v&..." of the non-empty values, or "".
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v != null && v !== '') q.set(k, v);
  }
  const s = q.toString();
  return s ? '?' + s : '';
}
