// k6/execution: the running VU, scenario and test (natives on globalThis.__k6).
const N = globalThis.__k6;

export const vu = {
  get idInTest() { return __VU; },
  get idInInstance() { return __VU; },
  get iterationInInstance() { return __ITER; },
  get iterationInScenario() { return __ITER; },
};

export const scenario = {
  get name() { return N.scenario; },
  get executor() { return N.executor; },
  get iterationInTest() { return N.iterationInTest(); },
  get iterationInInstance() { return N.iterationInTest(); },
};

export const instance = {
  get iterationsCompleted() { return N.iterationInTest(); },
};

export const test = {
  abort(reason) {
    N.abort(reason === undefined ? "" : String(reason));
  },
};

export default { vu, scenario, instance, test };
