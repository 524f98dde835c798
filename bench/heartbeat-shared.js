// The heartbeat scenario of bench/scenario.sh (open model, no delays, no think times) with the
// `shared` connection model: arriving clients lease keep-alive connections from a per-worker
// pool instead of connecting and closing one each, and no Accept-Encoding (as wrk sends none;
// the bundled target's gzip of each small answer would otherwise be the bottleneck).
definition.setTarget("http://127.0.0.1:8080");
definition.setArrivalPhases([{ duration: 10, rate: 1000 }]);
definition.setTestOptions({ timeout: 5, gracePeriod: 5, compression: false, connectionModel: "shared", poolSize: 50 });
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
