// A StormForger-style test case split into modules. Against the bundled target:
//   barrage target --listen 127.0.0.1:8080 &
//   barrage run examples/stormforger/index.mjs --nfr examples/stormforger/requirements.yml
//   barrage run examples/stormforger/index.mjs --define defines.target='"http://127.0.0.1:9090"'
import "./modules/options.js";
import heartbeat from "./scenarios/heartbeat.js";

// --define works on globals: `defines` must not be declared with var/let/const.
defines = {};
const config = {
  target: defines.target || "http://127.0.0.1:8080",
  pings: defines.pings || 3,
};

definition.setTarget(config.target);
definition.session("heartbeat", heartbeat(config));
