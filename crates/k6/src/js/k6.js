// k6: check, group, sleep, fail (the `k6` module). Natives live on globalThis.__k6.
const N = globalThis.__k6;

export function check(value, sets, tags) {
  let all = true;
  for (const name of Object.keys(sets || {})) {
    const test = sets[name];
    let passed;
    try {
      passed = !!(typeof test === "function" ? test(value) : test);
    } catch (e) {
      passed = false;
    }
    N.check(N.groupPath + name, passed);
    all = all && passed;
  }
  return all;
}

export function group(name, fn) {
  const outer = N.groupPath;
  N.groupPath = outer + String(name) + "::";
  try {
    return fn();
  } finally {
    N.groupPath = outer;
  }
}

export function sleep(seconds) {
  N.sleep(Number(seconds));
}

export function fail(message) {
  throw new Error(message === undefined ? "" : String(message));
}

export default { check, group, sleep, fail };
