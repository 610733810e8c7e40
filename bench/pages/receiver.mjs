// The receiver benchmark page (bench/run.py drives it through `window.bench`).
//
// It starts an assistant core as a CHILD worker, exactly as the assistant's edge does
// (`init`, then `port` with a transferred MessageChannel end), and then plays the page:
// it posts context messages on its end of the bound port and times, from the first post,
// until the worker posts the `state` whose chip shows the last revision.
//
// Two receivers run side by side in one browser:
//   "python": the real core worker, /web/worker.mjs (Pyodide, pydantic);
//   "js":     /bench/js-receiver.mjs, plain JavaScript making the same checks.

const WORKERS = {
  python: "/web/worker.mjs",
  js: "/bench/js-receiver.mjs",
};
const TIMEOUT_MS = 180_000;
// This page is served the business page's policy, which enforces Trusted Types and
// allows one policy name, pagecontext's. Standing in for the boot script, this page takes
// it, for the two worker URLs above only.
const workerURLs = globalThis.trustedTypes?.createPolicy("pagecontext", {
  createScriptURL: (url) => {
    if (!Object.values(WORKERS).includes(url)) throw new TypeError(`not a receiver: ${url}`);
    return url;
  },
});

function randomId() {
  // 128 random bits in base64url without padding: 22 characters, like a nonce.
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

// The demo's 60 rows: 12 months x 5 regions, with units sold and revenue in EUR.
const REGIONS = ["North", "South", "East", "West", "Central"];
const ROWS = [];
for (let m = 1; m <= 12; m += 1) {
  for (const [r, region] of REGIONS.entries()) {
    const month = `2026-${String(m).padStart(2, "0")}`;
    const units = 200 + ((m * 37 + r * 91) % 400);
    ROWS.push({
      ref: `sales-${month}-${region.toLowerCase()}`,
      month,
      region,
      unitsSold: units,
      revenueEur: Math.round(units * (23.5 + r * 1.75) * 100) / 100,
    });
  }
}

// A context message as the page's core sends it (models.ContextMessage, camelCase).
function contextMessage(session, revision) {
  const row = ROWS[(revision * 7) % ROWS.length];
  const filters = { from: "2026-01", to: "2026-12" };
  if (revision % 3 === 0) filters.region = row.region;
  return {
    protocol: "pagecontext",
    version: 1,
    type: "context",
    messageId: `${session.messagePrefix}-${revision}`,
    pageInstanceId: session.pageInstanceId,
    conversationId: session.conversationId,
    selectionRevision: revision,
    selection: {
      pageId: "sales-2026",
      componentId: "sales-table",
      resourceRef: row.ref,
      observedAt: new Date().toISOString(),
      filters,
      snapshot: {
        region: row.region,
        month: row.month,
        unitsSold: { value: row.unitsSold, unit: "units" },
        revenueEur: { value: row.revenueEur, unit: "EUR" },
      },
    },
  };
}

// Invalid variants of a valid context message, each with the refusal reason the core
// gives it (the name); `last` is the last committed revision.
function invalidCases(base, last) {
  const cases = [];
  // Each case on a revision of its own: a receiver that wrongly commits one does not
  // make the cases after it read as committed (or as stale) too.
  const add = (name, change) => {
    const message = base();
    const revision = message.selectionRevision;
    change(message);
    cases.push([name, message, revision]);
  };
  add("malformed: extra key", (m) => { m.extra = 1; });
  add("malformed: extra selection key", (m) => { m.selection.color = "red"; });
  add("malformed: extra quantity key", (m) => { m.selection.snapshot.unitsSold.note = "x"; });
  add("malformed: revision 1.5", (m) => { m.selectionRevision = 1.5; });
  add("malformed: revision as string", (m) => { m.selectionRevision = String(m.selectionRevision); });
  add("malformed: revision 0", (m) => { m.selectionRevision = 0; });
  add("malformed: revision past safe integers", (m) => { m.selectionRevision = 2 ** 53; });
  add("malformed: filter number past safe integers", (m) => { m.selection.filters.max = 2 ** 53; });
  add("malformed: quantity value 1e300", (m) => { m.selection.snapshot.unitsSold.value = 1e300; });
  add("malformed: bad messageId", (m) => { m.messageId = "no spaces"; });
  add("malformed: empty resourceRef", (m) => { m.selection.resourceRef = ""; });
  add("malformed: February 30", (m) => { m.selection.observedAt = "2026-02-30T10:00:00.000Z"; });
  add("malformed: observedAt without ms", (m) => { m.selection.observedAt = "2026-02-03T10:00:00Z"; });
  add("malformed: object filter value", (m) => { m.selection.filters.region = { eq: "North" }; });
  add("malformed: missing selection", (m) => { delete m.selection; });
  add("malformed: no protocol", (m) => { delete m.protocol; });
  add("unsupported-version: 2", (m) => { m.version = 2; });
  add("unsupported-version: true", (m) => { m.version = true; });
  add("forbidden-key: __proto__", (m) => { m.selection.filters = JSON.parse('{"__proto__": 1}'); });
  add("forbidden-key: constructor", (m) => { m.selection.snapshot.constructor = 1; });
  add("too-deep: nested lists", (m) => { m.selection.filters.deep = [[[[[[1]]]]]]; });
  add("not-json: NaN", (m) => { m.selection.snapshot.unitsSold.value = NaN; });
  add("not-json: Infinity", (m) => { m.selection.filters.max = Infinity; });
  add("too-large: 20 KiB", (m) => { m.selection.filters.big = Array.from({ length: 20 }, () => "x".repeat(1000)); });
  add("over-limit: string of 1025", (m) => { m.selection.snapshot.region = "x".repeat(1025); });
  add("over-limit: id of 257", (m) => { m.selection.resourceRef = "r".repeat(257); });
  add("over-limit: 33 filters", (m) => { for (let i = 0; i < 33; i += 1) m.selection.filters[`f${i}`] = i; });
  add("over-limit: 65 snapshot fields", (m) => { for (let i = 0; i < 65; i += 1) m.selection.snapshot[`s${i}`] = i; });
  add("page-instance", (m) => { m.pageInstanceId = "another-page"; });
  add("conversation-mismatch", (m) => { m.conversationId = "another-conversation"; });
  if (last >= 1) add("stale-revision", (m) => { m.selectionRevision = last; });
  add("not plain data: Date", (m) => { m.selection.filters.when = new Date(0); });
  add("not plain data: Map", (m) => { m.selection.snapshot = new Map(); });
  return cases;
}

class Session {
  constructor(kind) {
    this.kind = kind;
    this.instanceId = randomId();
    this.conversationId = randomId();
    this.pageInstanceId = randomId();
    this.messagePrefix = randomId();
    this.revision = 0;
    this.waiters = [];
    this.states = 0;
    this.failed = null;
  }

  // Resolve with the first worker message for which `test` returns true.
  waitFor(test, what) {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${this.kind}: timed out waiting for ${what} (${this.states} states)`)),
        TIMEOUT_MS,
      );
      this.waiters.push({
        test,
        resolve: (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      });
    });
  }

  deliver(source, data) {
    const t = performance.now();
    if (source === "worker" && data && data.kind === "state") {
      this.states += 1;
      this.worker.postMessage({ kind: "state-read" }); // as the assistant's edge does
    }
    if (source === "worker" && data && data.kind === "failed") {
      this.failed = String(data.error);
      for (const waiter of this.waiters.splice(0)) waiter.reject(new Error(this.failed));
      return;
    }
    this.waiters = this.waiters.filter((waiter) => {
      if (!waiter.test(source, data)) return true;
      waiter.resolve({ t, data });
      return false;
    });
  }

  async start() {
    const t0 = performance.now();
    const url = WORKERS[this.kind];
    this.worker = new Worker(workerURLs ? workerURLs.createScriptURL(url) : url, { type: "module", name: "pagecontext-assistant" });
    this.worker.onmessage = (event) => this.deliver("worker", event.data);
    this.worker.onerror = (event) => this.deliver("worker", { kind: "failed", error: event.message || "error" });
    const channel = new MessageChannel();
    this.port = channel.port1;
    this.port.onmessage = (event) => this.deliver("port", event.data);
    const nonce = randomId();
    const ready = this.waitFor((source, data) => source === "worker" && data.kind === "ready", "ready");
    // The embedder's part of the handshake: `bound` once `connected` names this binding.
    const connected = this.waitFor((source, data) => source === "port" && data.type === "connected", "connected")
      .then((c) => {
        const message = c.data;
        if (message.nonce !== nonce || message.pageInstanceId !== this.pageInstanceId
            || message.conversationId !== this.conversationId || message.role !== "assistant") {
          throw new Error(`${this.kind}: unexpected connected message ${JSON.stringify(message)}`);
        }
        this.port.postMessage({
          protocol: "pagecontext",
          version: 1,
          type: "bound",
          messageId: randomId(),
          pageInstanceId: this.pageInstanceId,
          conversationId: this.conversationId,
        });
        return c;
      });
    const bound = this.waitFor((source, data) => source === "worker" && data.kind === "bound", "bound");
    this.worker.postMessage({
      kind: "init",
      role: "assistant",
      instanceId: this.instanceId,
      conversationId: this.conversationId,
      restored: {},
    });
    this.worker.postMessage(
      {
        kind: "port",
        position: "child",
        nonce,
        peer: { protocol: "pagecontext", version: 1, type: "connect", role: "page", pageInstanceId: this.pageInstanceId },
      },
      [channel.port2],
    );
    const [r, c] = await Promise.all([ready, connected, bound]);
    return { readyMs: r.t - t0, connectedMs: c.t - t0 };
  }

  // Post `count` context messages with increasing revisions; time from the first post to
  // the state message whose chip shows the last revision.
  async round(count) {
    const first = this.revision + 1;
    const last = first + count - 1;
    let messages = [];
    for (let revision = first; revision <= last; revision += 1) messages.push(contextMessage(this, revision));
    const statesBefore = this.states;
    const done = this.waitFor(
      (source, data) => source === "worker" && data.kind === "state" && data.chip && data.chip.revision === last,
      `the state of revision ${last}`,
    );
    const t0 = performance.now();
    for (const message of messages) this.port.postMessage(message);
    const posted = performance.now();
    messages = null;
    const { t, data } = await done;
    this.revision = last;
    return {
      count,
      ms: t - t0,
      postMs: posted - t0,
      usPerMessage: ((t - t0) * 1000) / count,
      states: this.states - statesBefore,
      lastRef: data.chip.resourceRef,
      refused: data.refused,
    };
  }

  // Post invalid variants of a context message, one at a time, and read each refusal
  // reason from the counters of the `state` the receiver posts after it; then a valid one,
  // which must still be committed. Messages that are not plain data get no state (they
  // are counted apart, in the diagnostics' notPlainData).
  async equivalence() {
    let revision = this.revision;
    const base = () => contextMessage(this, (revision += 1));
    const cases = invalidCases(base, this.revision);
    let counts = { ...(await this.diagnose()).contexts };
    const plainBefore = (await this.diagnose()).notPlainData;
    const outcomes = [];
    for (const [name, message, caseRevision] of cases) {
      if (name.startsWith("not plain data")) {
        this.port.postMessage(message);
        outcomes.push([name, "not plain data"]);
        continue;
      }
      const next = this.waitFor((source, data) => source === "worker" && data.kind === "state", name);
      this.port.postMessage(message);
      const { data } = await next;
      const refused = data.refused || {};
      const reasons = Object.keys(refused).filter((key) => (refused[key] || 0) !== (counts[key] || 0));
      counts = { ...refused };
      const committed = data.chip && data.chip.revision === caseRevision;
      outcomes.push([name, committed ? "committed" : reasons.join(",") || "nothing"]);
    }
    const sentinel = base();
    const done = this.waitFor(
      (source, data) => source === "worker" && data.kind === "state" && data.chip && data.chip.revision === revision,
      "the equivalence sentinel",
    );
    this.port.postMessage(sentinel);
    const { data } = await done;
    this.revision = revision;
    const diagnostics = await this.diagnose();
    const sentinelCommitted = JSON.stringify(data.refused || {}) === JSON.stringify(counts);
    return { outcomes, notPlainData: diagnostics.notPlainData - plainBefore, sentinelCommitted };
  }

  async diagnose() {
    const seq = Math.floor(Math.random() * 1e9);
    const reply = this.waitFor(
      (source, data) => source === "worker" && data.kind === "diagnostics" && data.seq === seq,
      "diagnostics",
    );
    this.worker.postMessage({ kind: "diagnose", seq });
    return (await reply).data;
  }

  stop() {
    this.port.close();
    this.worker.terminate();
  }
}

const sessions = {};

window.bench = {
  async start(kind) {
    sessions[kind] = new Session(kind);
    return sessions[kind].start();
  },
  round(kind, count) {
    return sessions[kind].round(count);
  },
  equivalence(kind) {
    return sessions[kind].equivalence();
  },
  diagnose(kind) {
    return sessions[kind].diagnose();
  },
  stop(kind) {
    sessions[kind].stop();
    delete sessions[kind];
    return true;
  },
};
document.documentElement.dataset.benchReady = "true";
