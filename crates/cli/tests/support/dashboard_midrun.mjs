// Opens barrage's live dashboard in headless Chromium while the run goes on, over the
// DevTools protocol on a pipe (--remote-debugging-pipe: no npm packages, no port), waits
// until MIN_FRAMES server-sent-event frames have been drawn, then reports what the page holds
// (frames, points per chart, whether the run had ended) as one JSON line and saves a
// screenshot. Usage: node dashboard_midrun.mjs URL SCREENSHOT.png MIN_FRAMES TIMEOUT_MS
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [url, screenshot, minFrames, timeoutMs] = process.argv.slice(2);
const chromium = process.env.CHROMIUM || "/usr/bin/chromium";
const profile = mkdtempSync(join(tmpdir(), "barrage-cdp-"));
const browser = spawn(chromium, [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
  "--disable-dev-shm-usage", "--no-first-run", "--hide-scrollbars", "--window-size=1280,900",
  `--user-data-dir=${profile}`, "--remote-debugging-pipe", "about:blank",
], { stdio: ["ignore", "ignore", "ignore", "pipe", "pipe"] });
const [toBrowser, fromBrowser] = [browser.stdio[3], browser.stdio[4]];

let nextId = 1;
const waiting = new Map();
let buffer = Buffer.alloc(0);
fromBrowser.on("data", chunk => {
  buffer = Buffer.concat([buffer, chunk]);
  let end;
  while ((end = buffer.indexOf(0)) >= 0) {
    const message = JSON.parse(buffer.subarray(0, end).toString("utf8"));
    buffer = buffer.subarray(end + 1);
    const pending = waiting.get(message.id);
    if (pending) {
      waiting.delete(message.id);
      message.error ? pending.reject(new Error(JSON.stringify(message.error))) : pending.resolve(message.result);
    }
  }
});

function send(method, params = {}, sessionId) {
  const id = nextId++;
  toBrowser.write(JSON.stringify({ id, method, params, sessionId }) + "\0");
  return new Promise((resolve, reject) => waiting.set(id, { resolve, reject }));
}

const sleep = ms => new Promise(r => setTimeout(r, ms));

async function main() {
  const { targetId } = await send("Target.createTarget", { url });
  const { sessionId } = await send("Target.attachToTarget", { targetId, flatten: true });
  const state = `(() => {
    const points = {};
    for (const [key, values] of Object.entries(history.series)) points[key] = values.length;
    return JSON.stringify({
      frames: (history.series.vus || []).length,
      points,
      status: document.getElementById("status").textContent,
      ended: document.getElementById("done").style.display === "block",
    });
  })()`;
  const deadline = Date.now() + Number(timeoutMs);
  let seen = null;
  while (Date.now() < deadline) {
    const { result } = await send("Runtime.evaluate", { expression: state, returnByValue: true }, sessionId);
    seen = result.value ? JSON.parse(result.value) : null;
    if (seen && seen.frames >= Number(minFrames)) break;
    await sleep(200);
  }
  const { data } = await send("Page.captureScreenshot", { format: "png" }, sessionId);
  writeFileSync(screenshot, Buffer.from(data, "base64"));
  process.stdout.write(JSON.stringify(seen) + "\n");
}

const exited = new Promise(resolve => browser.once("exit", resolve));
try {
  await main();
} finally {
  browser.kill("SIGKILL");
  await exited;
  // Chromium's helpers may still write into the profile for a moment: best effort.
  try {
    rmSync(profile, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  } catch {}
}
process.exit(0);
