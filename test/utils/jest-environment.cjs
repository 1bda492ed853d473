// Jest's node environment, plus: what a test file registered with Node itself is released when the
// file ends. Jest loads each file's modules afresh, so src/metrics/metrics.ts runs prom-client's
// collectDefaultMetrics once per file; that registers a PerformanceObserver (GC durations) and starts
// an event-loop-delay histogram (a timer every 10 ms) with Node, once per process by design, and
// never stops them. Node's list of observers outlives the file and keeps the observer's callback, and
// through it the file's whole module graph, alive: about 30 MB an e2e file, 1.5 GB a worker by the
// end of `npm test`. See docs/architecture.md, "Tests".
const perfHooks = require('node:perf_hooks');
const { TestEnvironment } = require('jest-environment-node');

/** What the running test file opened; a worker runs one file at a time. */
let opened = null;

const observe = perfHooks.PerformanceObserver.prototype.observe;
perfHooks.PerformanceObserver.prototype.observe = function (...args) {
  opened?.push(() => this.disconnect());
  return observe.apply(this, args);
};

const monitorEventLoopDelay = perfHooks.monitorEventLoopDelay;
perfHooks.monitorEventLoopDelay = function (...args) {
  const histogram = monitorEventLoopDelay.apply(this, args);
  opened?.push(() => histogram.disable());
  return histogram;
};

module.exports = class ReleasingEnvironment extends TestEnvironment {
  async setup() {
    opened = [];
    await super.setup();
  }

  async teardown() {
    for (const close of opened ?? []) close();
    opened = null;
    await super.teardown();
  }
};
