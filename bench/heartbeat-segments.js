// bench/segments.sh: the heartbeat scenario of bench/scenario.sh with thresholds, run whole and
// as segments (the target comes from --target). No Accept-Encoding: the bundled target gzips
// each small JSON answer at a cost that caps it near 3,000 POST/s on one core (see
// heartbeat-closed.js), which would measure the target instead of the generators.
definition.setTarget("http://127.0.0.1:8080");
definition.setArrivalPhases([{ duration: 60, rate: 1000 }]);
definition.setTestOptions({ timeout: 5, gracePeriod: 5, compression: false });
definition.setThresholds({ http_req_failed: "rate<0.01", "http_req_duration{tag:ping}": "p(99)<2000" });
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
