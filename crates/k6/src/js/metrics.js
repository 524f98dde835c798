// k6/metrics: custom metrics, declared in the init context (the plan lists them), fed by
// add().
const N = globalThis.__k6;

class Metric {
  constructor(name, kind) {
    this.name = String(name);
    this.index = N.metric(this.name, kind);
  }

  add(value, tags) {
    N.add(this.index, Number(value));
  }
}

export class Counter extends Metric { constructor(name) { super(name, "counter"); } }
export class Gauge extends Metric { constructor(name) { super(name, "gauge"); } }
export class Rate extends Metric { constructor(name) { super(name, "rate"); } }
export class Trend extends Metric { constructor(name, isTime) { super(name, "trend"); } }

export default { Counter, Gauge, Rate, Trend };
