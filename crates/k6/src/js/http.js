// k6/http: requests suspend the VU (natives on globalThis.__k6); a Response wraps what the
// engine answered.
const N = globalThis.__k6;

const STATUS_TEXT = { 200: "200 OK", 201: "201 Created", 204: "204 No Content",
  301: "301 Moved Permanently", 302: "302 Found", 304: "304 Not Modified",
  400: "400 Bad Request", 401: "401 Unauthorized", 403: "403 Forbidden",
  404: "404 Not Found", 500: "500 Internal Server Error", 502: "502 Bad Gateway",
  503: "503 Service Unavailable" };

function select(value, selector) {
  if (selector === undefined || selector === null || selector === "") return value;
  let current = value;
  for (const part of String(selector).split(".")) {
    if (current === null || current === undefined) return undefined;
    if (part === "#") return Array.isArray(current) ? current.length : undefined;
    current = current[part];
  }
  return current;
}

// Responses are made natively (`N.request`) with this class's prototype; each field is read
// from the engine's answer when the script first asks for it (`N.field(this, index)`), and
// objects and strings are then kept on the response, so reading one twice gives the same
// value and a response nobody reads costs next to nothing.
function keep(response, name, value) {
  Object.defineProperty(response, name, { value, writable: true, enumerable: true, configurable: true });
  return value;
}

export class Response {
  get status() { return N.field(this, 0); }
  set status(value) { keep(this, "status", value); }
  get body() { return keep(this, "body", N.field(this, 1)); }
  set body(value) { keep(this, "body", value); }
  get headers() { return keep(this, "headers", N.field(this, 2)); }
  set headers(value) { keep(this, "headers", value); }
  get timings() { return keep(this, "timings", N.field(this, 3)); }
  set timings(value) { keep(this, "timings", value); }
  get error() { return N.field(this, 4); }
  set error(value) { keep(this, "error", value); }
  get url() { return N.field(this, 5); }
  set url(value) { keep(this, "url", value); }
  get status_text() {
    const status = this.status;
    return STATUS_TEXT[status] || (status ? String(status) : "");
  }
  get proto() { return this.status ? "HTTP/1.1" : ""; }
  get error_code() { return this.error ? 1000 : 0; }
  get request() { return keep(this, "request", { method: N.field(this, 6), url: this.url }); }

  json(selector) {
    return select(JSON.parse(this.body), selector);
  }

  toJSON() {
    return {
      status: this.status, status_text: this.status_text, body: this.body, headers: this.headers,
      timings: this.timings, url: this.url, proto: this.proto, error: this.error,
      error_code: this.error_code, request: this.request,
    };
  }
}

function form(object) {
  return Object.keys(object)
    .map((k) => encodeURIComponent(k) + "=" + encodeURIComponent(String(object[k])))
    .join("&");
}

function timeoutMillis(value) {
  if (value === undefined || value === null) return -1;
  if (typeof value === "number") return value;
  return N.durationMillis(String(value));
}

export function request(method, url, body, params) {
  params = params || {};
  const headers = [];
  const given = params.headers || {};
  let hasType = false;
  for (const name of Object.keys(given)) {
    headers.push(name, String(given[name]));
    hasType = hasType || (name.length === 12 && name.toLowerCase() === "content-type");
  }
  let payload = "";
  if (body !== null && body !== undefined) {
    if (typeof body === "object") {
      payload = form(body);
      if (!hasType) headers.push("Content-Type", "application/x-www-form-urlencoded");
    } else {
      payload = String(body);
    }
  }
  if (params.jar !== undefined && params.jar !== null && params.jar !== vuJar) {
    throw new Error("params.jar: only the VU's jar (http.cookieJar()) is supported by barrage yet");
  }
  const cookies = params.cookies || {};
  const pairs = [];
  for (const name of Object.keys(cookies)) {
    const c = cookies[name];
    const value = c !== null && typeof c === "object" ? c.value : c;
    pairs.push(name + "=" + String(value));
  }
  if (pairs.length) headers.push("Cookie", pairs.join("; "));
  const redirects = params.redirects === undefined || params.redirects === null
    ? -1 : Number(params.redirects);
  const verb = String(method).toUpperCase();
  const href = String(url);
  return N.request(Response.prototype, verb, href, payload, headers,
    [timeoutMillis(params.timeout), redirects, N.tagKey === null ? 0 : tagIndex(params, verb, href),
      params.responseCallback === undefined
        ? responseCallback : callbackCode(params.responseCallback, "params.responseCallback")]);
}

// The plan's request tag of a request (see request_tags.rs): its value of the tag key the
// thresholds filter on, k6's `name` and `url` defaulting to the URL.
function tagIndex(params, verb, href) {
  const own = params.tags || {};
  const key = N.tagKey;
  let value = own[key];
  if (value === undefined) {
    if (key === "name" || key === "url") value = href;
    else if (key === "method") value = verb;
  }
  return value === undefined ? 0 : N.tagValues.indexOf(String(value)) + 1;
}

export function get(url, params) { return request("GET", url, null, params); }
export function head(url, params) { return request("HEAD", url, null, params); }
export function options(url, body, params) { return request("OPTIONS", url, body, params); }
export function post(url, body, params) { return request("POST", url, body, params); }
export function put(url, body, params) { return request("PUT", url, body, params); }
export function patch(url, body, params) { return request("PATCH", url, body, params); }
export function del(url, body, params) { return request("DELETE", url, body, params); }

// http.batch: entries are URLs (GET), [method, url, body, params] arrays or
// {method, url, body, params} objects; an array gives an array of responses, an object an
// object of them by key. The requests are sent one after another on the VU's connection
// (k6 sends them in parallel: the same requests, checks and counts, a longer iteration).
function batchEntry(entry) {
  if (typeof entry === "string") return request("GET", entry, null, undefined);
  if (Array.isArray(entry)) return request(entry[0], entry[1], entry[2], entry[3]);
  if (entry !== null && typeof entry === "object") {
    return request(entry.method || "GET", entry.url, entry.body, entry.params);
  }
  throw new TypeError("http.batch: a request is a URL, an array or an object, not " + entry);
}

export function batch(requests) {
  if (Array.isArray(requests)) return requests.map(batchEntry);
  if (requests !== null && typeof requests === "object") {
    const responses = {};
    for (const key of Object.keys(requests)) responses[key] = batchEntry(requests[key]);
    return responses;
  }
  throw new TypeError("http.batch takes an array or an object of requests");
}

// The VU's cookie jar (the engine keeps it, fresh each iteration, fed by every response).
function cookieAttributes(options) {
  const o = options || {};
  let text = "";
  if (o.domain) text += "; Domain=" + o.domain;
  if (o.path) text += "; Path=" + o.path;
  if (o.expires) text += "; Expires=" + o.expires;
  if (o.max_age !== undefined && o.max_age !== null) text += "; Max-Age=" + Number(o.max_age);
  if (o.secure) text += "; Secure";
  if (o.http_only) text += "; HttpOnly";
  return text;
}

const vuJar = {
  set(url, name, value, options) {
    N.jar("set", [String(url), String(name), String(value), cookieAttributes(options)]);
  },
  cookiesForURL(url) {
    const pairs = N.jar("get", [String(url)]);
    const cookies = {};
    for (let i = 0; i + 1 < pairs.length; i += 2) {
      (cookies[pairs[i]] = cookies[pairs[i]] || []).push(pairs[i + 1]);
    }
    return cookies;
  },
  // As k6 does: an expired cookie of that name set at the URL (so at its default path).
  delete(url, name) {
    if (name === undefined || name === null || name === "") throw new Error("cookie: is null");
    N.jar("set", [String(url), String(name), "", "; Max-Age=-1"]);
  },
  clear(url) {
    for (const name of Object.keys(this.cookiesForURL(url))) this.delete(url, name);
  },
};

export function cookieJar() { return vuJar; }

export class CookieJar {
  constructor() {
    throw new Error("new http.CookieJar() is not supported by barrage yet (use the VU's jar, http.cookieJar())");
  }
}

// Response callbacks decide which responses count in http_req_failed (and each redirect hop
// is judged on its own, as in k6). As in k6, only http.expectedStatuses(...) makes one; the
// engine judges each response by the callback's number (-1 k6's default,
// expectedStatuses({min: 200, max: 399}); -2 none).
class ExpectedStatuses {
  constructor(code) { Object.defineProperty(this, "code", { value: code }); }
}

export function expectedStatuses(...statuses) {
  const ranges = [];
  statuses.forEach((status, i) => {
    if (Number.isInteger(status)) {
      ranges.push(status, status);
    } else if (status !== null && typeof status === "object"
        && Number.isInteger(status.min) && Number.isInteger(status.max)) {
      ranges.push(status.min, status.max);
    } else {
      throw new Error("argument number " + (i + 1)
        + " to expectedStatuses was neither an integer nor an object like {min:100, max:200}");
    }
  });
  return new ExpectedStatuses(N.expectedStatuses(ranges));
}

function callbackCode(callback, what) {
  if (callback === null) return -2;
  if (callback instanceof ExpectedStatuses) return callback.code;
  throw new Error(what + ": only callbacks made by http.expectedStatuses(...) are supported, as in k6");
}

let responseCallback = -1;

export function setResponseCallback(callback) {
  responseCallback = callbackCode(callback, "http.setResponseCallback");
}

export default {
  request, get, head, options, post, put, patch, del, batch, expectedStatuses, setResponseCallback,
  cookieJar, CookieJar, Response,
};
