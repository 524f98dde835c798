// Memory per VU (bench/k6-vs-barrage.sh --memory): each VU sends a request, then sleeps 5 s
// (the run lasts 8 s), so the run mostly holds N idle VUs with their connections.
import http from "k6/http";
import { sleep } from "k6";

const BASE = __ENV.BASE || "http://127.0.0.1:8080";

export default function () {
  http.get(`${BASE}/ping?token=none`, { headers: { "Accept-Encoding": "identity" } });
  sleep(5);
}
