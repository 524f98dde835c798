// The heartbeat scenario for closed virtual users (bench/scenario-closed.sh): no server
// delays, no think times, keep-alive, and no `Accept-Encoding: gzip` — the bundled target
// gzips each small JSON answer at a cost that caps it near 3,000 POST/s on one core, which
// would measure the target instead of the generator (wrk sends no Accept-Encoding either).
definition.setTarget("http://127.0.0.1:8080");
definition.setVirtualUsers({ vus: 50, duration: 10 });
definition.setTestOptions({ timeout: 5, compression: false });
definition.session("heartbeat", function (session) {
  var row = session.ds.pickFrom(session.ds.loadStructured("../examples/channels.csv"));
  session.post("/random/get_token?channel=:id", {
    tag: "get_token",
    params: { id: row.get("id") },
    extraction: { jsonpath: { token: "$.token" } },
  });
  session.assert("token present", session.getVar("token"), "!=", "");
  session.times(session.ds.generate("random_number", { range: [3, 6] }), function (s) {
    s.get("/ping?token=:token", { tag: "ping" });
  });
});
