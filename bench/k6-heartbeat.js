// The heartbeat session as a k6 script (bench/k6-vs-barrage.sh runs it unmodified with k6
// and with barrage): a token POST, json() + check, 3-6 pings with the token, no think time.
// `Accept-Encoding: identity` on both sides: the bundled target would otherwise gzip every
// small JSON answer and measure itself instead of the generator.
import http from "k6/http";
import { check } from "k6";

const BASE = __ENV.BASE || "http://127.0.0.1:8080";
const params = { headers: { "Accept-Encoding": "identity" } };

export const options = { vus: 50, duration: "10s" };

export default function () {
  const res = http.post(`${BASE}/random/get_token?channel=${(__ITER % 20) + 1}`, null, params);
  const token = res.json().token;
  check(res, { "token present": (r) => r.status === 200 && token !== undefined });
  const pings = 3 + Math.floor(Math.random() * 4);
  for (let i = 0; i < pings; i++) {
    http.get(`${BASE}/ping?token=${token}`, params);
  }
}
