// Soak workload for bench/soak.sh: many short open-model sessions (each its own client and
// connection), a jsonpath extraction and two checks per session, for SOAK_MINUTES minutes.
// The target URL and duration come from bench/soak.sh (--target, --duration-limit).
definition.setTarget("http://127.0.0.1:8080");
definition.setArrivalPhases([{ duration: 1800, rate: 40 }]);
definition.setTestOptions({ timeout: 5, gracePeriod: 5 });

definition.session("short", function (session) {
  session.get("/random/get_token?channel=soak", {
    tag: "token",
    extraction: { jsonpath: { token: "$.token" } },
  });
  session.check("token extracted", session.getVar("token"), "!=", "");
  session.get("/ping?token=:token", { tag: "ping", params: { token: session.getVar("token") } });
  session.check("ping is 200", session.lastHttpStatus(), "==", 200);
  session.wait(0.2);
  session.get("/bytes/2048", { tag: "bytes" });
});
