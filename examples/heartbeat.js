// A TV heartbeat API: each client picks a channel, gets a token, then pings with it 3-6 times.
// Run it against the bundled target:
//   barrage target --listen 127.0.0.1:8080 &
//   barrage run examples/heartbeat.js
definition.setTarget("http://127.0.0.1:8080");
definition.setArrivalPhases([{ duration: 10, rate: 100 }]);
definition.setTestOptions({ timeout: 5, gracePeriod: 10 });

definition.session("heartbeat", function (session) {
  var channels = session.ds.loadStructured("channels.csv");
  var channel = session.ds.pickFrom(channels);
  session.post("/random/get_token?channel=:id&delay=20", {
    tag: "get_token",
    params: { id: channel.get("id") },
    extraction: { jsonpath: { token: "$.token" } },
  });
  session.assert("token present", session.getVar("token"), "!=", "");
  session.times(session.ds.generate("random_number", { range: [3, 6] }), function (s) {
    s.get("/ping?token=:token&delay=20", { tag: "ping" });
    s.waitExp(0.2);
  });
});
