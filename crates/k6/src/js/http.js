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

export class Response {
  constructor(raw, method, url) {
    this.status = raw.status;
    this.status_text = STATUS_TEXT[raw.status] || (raw.status ? String(raw.status) : "");
    this.body = raw.body;
    this.headers = raw.headers;
    this.timings = raw.timings;
    this.url = url;
    this.proto = raw.status ? "HTTP/1.1" : "";
    this.error = raw.error;
    this.error_code = raw.error ? 1000 : 0;
    this.request = { method: method, url: url };
  }

  json(selector) {
    return select(JSON.parse(this.body), selector);
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
    hasType = hasType || name.toLowerCase() === "content-type";
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
  const target = String(url);
  const raw = N.request(String(method).toUpperCase(), target, payload, headers, timeoutMillis(params.timeout));
  return new Response(raw, String(method).toUpperCase(), target);
}

export function get(url, params) { return request("GET", url, null, params); }
export function head(url, params) { return request("HEAD", url, null, params); }
export function options(url, body, params) { return request("OPTIONS", url, body, params); }
export function post(url, body, params) { return request("POST", url, body, params); }
export function put(url, body, params) { return request("PUT", url, body, params); }
export function patch(url, body, params) { return request("PATCH", url, body, params); }
export function del(url, body, params) { return request("DELETE", url, body, params); }

export default { request, get, head, options, post, put, patch, del, Response };
