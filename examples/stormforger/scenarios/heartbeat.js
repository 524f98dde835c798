// Get a token, then ping with it.
export default function heartbeat(config) {
  return function (session) {
    session.get("/random/get_token?channel=:channel", {
      tag: "get_token",
      params: { channel: "news" },
      extraction: { jsonpath: { token: "token" } },
    });
    session.check("token_received", session.getVar("token"), "!=", "");
    session.times(config.pings, function (context) {
      context.get("/ping?token=:token&delay=20", { tag: "ping" });
      context.waitExp(0.2);
    });
  };
}
