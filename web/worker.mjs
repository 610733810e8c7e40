// Module worker for the pagecontext core: boots Pyodide from this server's own files and
// hands every message to Python. The browser forces this file to be JavaScript; all
// protocol logic lives in pagecontext.browser.worker.
//
// The boot restores a memory snapshot made at build time (web/snapshot.mjs), with the
// packages installed and the core imported; if there is none, or it fails, the worker
// logs why and boots Pyodide normally. performance.mark()s in this worker's timeline
// name the steps: pagecontext:worker-start, snapshot-opened (detail: "cache", "peer" or
// "network"), snapshot-unpacked; on a restore, runtime-imported (pyodide.asm.mjs),
// wasm-opened ("cache", "peer" or "network"), wasm-instantiated, prerun, snapshot-placed
// (the bundle's memory and library in place); runtime-loaded ("snapshot" or "fresh"),
// snapshot-failed (why), packages-loaded, module-imported, worker-started,
// snapshot-kept once the bundle and the wasm are in the Cache API; and stdlib-loaded or
// site-packages-loaded if Python, restored, reads the standard library zip or an
// installed file that the bundle leaves out (see lazyFile in snapshot.mjs). Between the
// frames (peerCopies, sendRuntime): runtime-offered and peer-offered or peer-silent in a
// child's worker, runtime-wanted and runtime-closed (a port done with: how many wants
// came on it, how many of its files were answered) in an embedder's;
// cache-refused and peer-refused (the URL) for a copy that is not the pinned one.
performance.mark("pagecontext:worker-start");
// The runtime's files between the two frames' workers (docs/architecture.md, "One
// download of the runtime"). A child frame's worker (web/boot.mjs names it
// `pagecontext-<role>-child`) asks its boot script at once (`runtime-peer`; the boot
// script listens from the worker's creation, the edge only later), and its boot looks
// for copies only once it has the answer: `runtime-offered`, with the port on which its
// embedder offers its copies, or with none; never longer than PEER_PORT_MS. Any other
// worker looks at once. An embedder's worker is handed a port to send its copies on
// (`runtime-wanted`). Taken here, before any other listener sees them: they are not the
// edge's messages.
const PEER_PORT_MS = 1000;
let peer = null;
let peerLooked = false;
let givePeer;
const peerKnown = new Promise((resolve) => {
  givePeer = resolve;
});
const isChild = self.name.endsWith("-child");
if (isChild) setTimeout(() => givePeer(), PEER_PORT_MS);
else givePeer();
// Done with the embedder's copies (the boot looked, or has no snapshot to restore).
function dropPeer() {
  peerLooked = true;
  peer?.close();
}
self.addEventListener("message", (event) => {
  const kind = event.data && event.data.kind;
  if (kind !== "runtime-offered" && kind !== "runtime-wanted") return;
  event.stopImmediatePropagation();
  mark(kind);
  const [port] = event.ports;
  if (kind === "runtime-wanted") {
    if (port) sendRuntime(port);
    return;
  }
  if (port && peer === null && !peerLooked) peer = peerCopies(port);
  else if (port) doneWith(port);
  givePeer();
});
// The embedder cannot see a port close: told, it closes its end and stops preparing
// what this worker will not read (sendRuntime).
function doneWith(port) {
  port.postMessage({ done: true });
  port.close();
}
if (isChild) self.postMessage({ kind: "runtime-peer" });
const early = [];
// Messages that arrive while Python boots are kept, in order, not lost.
self.onmessage = (event) => early.push(event);

// Python sees JS values only after Pyodide converted them (a BigInt becomes an int, and a
// proxy of an ArrayBuffer's prototype throws), so the one check that needs JavaScript's
// own types runs here: is a port message plain data, as structured clone of JSON makes?
// Returns "" (plain and finite: Python reads it as JSON text), "non-finite" (plain, but
// with NaN or an infinity, which JSON text would turn into null: Python reads it
// value by value, and the core refuses it with a receipt), or why it is not plain data.
// Structured clone keeps shared references, so a message of a few hundred bytes can read
// as a tree of billions of values, or as megabytes of text: the walk visits at most
// MAX_VISITS values and counts the characters of at most `maxChars` in strings and keys
// ("too-large"; a message within the core's size limits has far fewer); one nested deeper
// than `maxDepth` is "too-deep" (integration.PLAIN_DATA_MAX_DEPTH, which Python passes).
const MAX_VISITS = 100000;
function plainDataProblem(value, maxChars, maxDepth) {
  const budget = { left: MAX_VISITS, chars: maxChars, depth: maxDepth };
  // The message object is at depth 1, as the core counts it (docs/protocol.md 8.3).
  return plainDataWalk(value, 1, budget);
}

// The envelope's scalar fields of a message that is not read further, for the core to
// answer a command among them (its messageId readable) with a `rejected` receipt, as it
// answers one that does not validate. Only own data properties, strings of at most
// HEAD_CHARS and finite numbers are taken; null if the message is not an object.
const HEAD = ["protocol", "version", "type", "messageId", "pageInstanceId", "conversationId"];
const HEAD_CHARS = 256;
function headOf(value) {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return null;
  const head = {};
  for (const key of HEAD) {
    const field = Object.getOwnPropertyDescriptor(value, key);
    const item = field && field.value;
    if ((typeof item === "string" && item.length <= HEAD_CHARS) || (typeof item === "number" && Number.isFinite(item))) head[key] = item;
  }
  return head;
}
function plainDataWalk(value, depth, budget) {
  if ((budget.left -= 1) < 0) return "too-large";
  if (value === null) return "";
  switch (typeof value) {
    case "string": return (budget.chars -= value.length) < 0 ? "too-large" : "";
    case "boolean": return "";
    case "number": return Number.isFinite(value) ? "" : "non-finite";
    case "object": break;
    default: return "not-json"; // bigint, undefined
  }
  if (depth > budget.depth) return "too-deep";
  let found = "";
  if (Array.isArray(value)) {
    for (const item of value) {
      const problem = plainDataWalk(item, depth + 1, budget);
      if (problem && problem !== "non-finite") return problem;
      found ||= problem;
    }
    return found;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return "not-plain"; // Map, Date, ArrayBuffer, …
  for (const key of Object.keys(value)) {
    if ((budget.chars -= key.length) < 0) return "too-large";
    const problem = plainDataWalk(value[key], depth + 1, budget);
    if (problem && problem !== "non-finite") return problem;
    found ||= problem;
  }
  return found;
}

// Listens on the bound port for Python: each message is checked here (plainDataProblem)
// and queued, plain data as its JSON text, anything else as {problem, value}; the queue
// goes to `deliver` in one call once the messages already waiting have arrived (a wake-up
// posted on a private channel runs after them). One call into Python per burst instead of
// one per message, and one string for each run of up to RUN_TEXTS JSON texts, joined by
// newlines (which JSON.stringify never writes): Python reads each array item across the
// boundary at a cost, and splits one string in C. (An unbounded run would make Python
// hold a burst's whole text at once, and grow the memory for it.) Returns {close()},
// which stops listening and drops what is queued. A message whose text would pass
// `maxChars` (far past the core's own size limit) is "too-large" here, unread by Python.
const RUN_TEXTS = 128;
// A run also stops short of RUN_CHARS characters: 128 texts each near the limit of a page
// whose maxMessageBytes is LIMIT_MAX (4 * 1048576 + 65536 characters) would join past
// V8's longest string (2**29 - 24), and the RangeError, uncaught, would end the worker
// (tests/worker/listen_port.mjs runs this part of the file, from MAX_VISITS, in Node.js).
const RUN_CHARS = 1 << 24;
function listenPort(port, deliver, maxChars, maxDepth) {
  if (!Number.isInteger(maxChars) || !Number.isInteger(maxDepth)) throw new TypeError("listenPort needs maxChars and maxDepth");
  let queue = [];
  let run = 0; // texts in the queue's last item, if it is a string
  let scheduled = false;
  const wake = new MessageChannel();
  wake.port1.onmessage = () => {
    scheduled = false;
    if (!queue.length) return;
    const batch = queue;
    queue = [];
    deliver(batch);
  };
  port.onmessage = (event) => {
    const data = event.data;
    let problem = plainDataProblem(data, maxChars, maxDepth);
    const text = problem === "" ? JSON.stringify(data) : "";
    if (text.length > maxChars) problem = "too-large";
    const last = queue.length - 1;
    if (problem !== "") {
      // Only a non-finite message is read further (value by value); of any other, its
      // envelope's scalar fields.
      const nonFinite = problem === "non-finite";
      queue.push({ problem, value: nonFinite ? data : null, head: nonFinite ? null : headOf(data) });
    } else if (last >= 0 && typeof queue[last] === "string" && run < RUN_TEXTS && queue[last].length + text.length < RUN_CHARS) {
      queue[last] += "\n" + text;
      run += 1;
    } else {
      queue.push(text);
      run = 1;
    }
    schedule();
  };
  // A message this realm cannot deserialize (a WebAssembly.Module from another agent
  // cluster, say) arrives as `messageerror`, with no data: counted as not plain data.
  port.onmessageerror = () => {
    queue.push({ problem: "not-plain", value: null, head: null });
    schedule();
  };
  function schedule() {
    if (!scheduled) {
      scheduled = true;
      wake.port2.postMessage(null);
    }
  }
  return {
    close() {
      port.onmessage = null;
      port.onmessageerror = null;
      wake.port1.onmessage = null;
      wake.port1.close();
      wake.port2.close();
      queue = [];
    },
  };
}

// Resolve against this module, not the worker's location: a sandboxed frame starts the
// worker from a data: URL that imports this file.
const here = (path) => new URL(path, import.meta.url).href;
const mark = (step, detail) => performance.mark(`pagecontext:${step}`, detail === undefined ? {} : { detail });
// The edge listens once MicroPython is up, which may be after this worker has something
// to say (it failed, or its runtime is up): a message posted before anyone listens is
// lost, so what this script says waits for the edge's first message (`init`, sent once
// the edge listens). Python answers `init`, so it posts directly.
const unsent = [];
let edgeListens = false;
self.addEventListener("message", () => {
  edgeListens = true;
  for (const message of unsent.splice(0)) self.postMessage(message);
}, { once: true });
function toEdge(message) {
  if (edgeListens) self.postMessage(message);
  else unsent.push(message);
}

// Tells the frame's edge that the runtime is instantiated: the heaviest part of this
// worker's boot is over, and an embedder whose `childLoad` is "staggered" loads its
// child frame now, so the two frames' heaviest steps do not share the cores. (A restore
// that fails after instantiating is followed by a normal boot that says it again; the
// edge loads its child once.)
function announceRuntime() {
  toEdge({ kind: "runtime" });
}
// A snapshot boot that makes no progress for this long is abandoned for a normal boot
// (withStallLimit).
const SNAPSHOT_STALL_MS = 30_000;
// What Pyodide installs as the standard library before a restore: an empty zip (no
// request). The restored Python has imported what the core needs; the real zip becomes
// a lazy file (web/snapshot.mjs), downloaded only if Python reads it.
const EMPTY_ZIP = "data:application/zip;base64,UEsFBgAAAAAAAAAAAAAAAAAAAAAAAA==";

// The whole body of `url`, synchronously (Python reads files synchronously; a worker
// may); marks `step` once it is in.
function fetchSync(url, step) {
  const request = new XMLHttpRequest();
  request.open("GET", url, false);
  request.responseType = "arraybuffer";
  request.send();
  if (request.status !== 200) throw new Error(`${url}: HTTP ${request.status}`);
  mark(step);
  return new Uint8Array(request.response);
}
// What a restore reads, the snapshot bundle and the runtime's wasm, as the worker last
// read it (decoded), by URL, in the Cache API: a later visit copies it from there (tens
// of ms) instead of decoding it again from the HTTP cache (hundreds, on a busy machine:
// one process decodes every cached body for the whole browser). Opaque origins and, in
// some browsers, third-party frames have no Cache API; they read the HTTP cache.
const SNAPSHOT_CACHE = "pagecontext-snapshot";

// The SHA-256 of `bytes`, in hex.
async function sha256Hex(bytes) {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

// Where a restore may find a copy of a file instead of asking the server: each has a
// `name` (the detail of the marks that say which it came from), match(url, pin) (a
// Response, or undefined; `pin`: the {sha256, bytes} runtime.json gives the file),
// delete(url), and `checked`: whether match() answers only with bytes it has checked.
// Neither is trusted: a copy is used only if its bytes are the ones runtime.json, read
// from this worker's own server, pins.
//
// The Cache API's copies: any script of this origin can write to its Cache API, and a
// copy it wrote would otherwise run in this worker on every later visit.
function cacheCopies(cache) {
  return {
    name: "cache",
    match: (url) => cache.match(url),
    delete: (url) => cache.delete(url),
    checked: false,
  };
}

// A child frame's copies from its embedder (web/boot.mjs asks the embedder; its worker's
// sendRuntime answers), on `port`: first the SHA-256s of the files the embedder has (the
// pins of its worker's runtime.json, sent by its boot script); then, for each file this
// worker has no copy of its own and the embedder has the pinned one, {want: sha256},
// answered with the file's bytes once the embedder's own boot is over ({sha256,
// bytes}), and until then, each second, with how many bytes of its runtime files the
// embedder's boot has read ({coming: sha256, read}; a message an earlier child ignores).
// The bytes come whole, so they are checked before anything reads them (a copy that is
// not the pinned one, by its length, then its SHA-256, is refused: `peer-refused`),
// unlike the Cache API's, which stream in as they are checked. Only the first offer
// counts, and of it two SHA-256s at most. The worker asks its server instead when the
// embedder offers nothing within PEER_OFFER_MS (one of an earlier version, say), or
// when a file's bytes have not come PEER_QUIET_MS after its want or after the last
// `coming` whose `read` grew (an embedder still downloading on a slow link; each such
// `coming` is also progress for this worker's own restore: withStallLimit), and never
// later than PEER_LONGEST_MS after its want: then it is done with the embedder for this
// boot, and asks it for nothing more. (The cap is long: a child binds only once its
// embedder's worker is ready, the moment it sends its copies, so downloading the same
// 9 MB beside an embedder still downloading on a slow link never binds it sooner.)
// close() tells the embedder it is done ({done: true}), then drops the port and whatever
// came on it unused.
const PEER_OFFER_MS = 500;
const PEER_QUIET_MS = 10_000;
const PEER_LONGEST_MS = 600_000;
function peerCopies(port) {
  let offered;
  const offer = new Promise((resolve) => {
    offered = resolve;
  });
  let heard = false; // an offer came, or none will be taken
  const silent = setTimeout(() => {
    heard = true;
    mark("peer-silent");
    offered();
  }, PEER_OFFER_MS);
  // SHA-256 offered -> null until asked for, then its wait: {resolve(ArrayBuffer or
  // null), coming(read)}. Asked for once: a file's entry is gone once it is answered.
  const wants = new Map();
  let closed = false;
  port.onmessage = ({ data }) => {
    if (data === null || typeof data !== "object") return;
    if (Array.isArray(data.offer)) {
      if (heard) return;
      heard = true;
      clearTimeout(silent);
      mark("peer-offered");
      for (const sha256 of data.offer.slice(0, 2)) {
        if (typeof sha256 === "string") wants.set(sha256, null);
      }
      offered();
      return;
    }
    if (typeof data.coming === "string") {
      wants.get(data.coming)?.coming(data.read);
      return;
    }
    wants.get(data.sha256)?.resolve(data.bytes instanceof ArrayBuffer ? data.bytes : null);
  };
  // The bytes of the file `sha256`, or null once the embedder has gone quiet.
  function ask(sha256) {
    return new Promise((resolve) => {
      const since = performance.now();
      let timer;
      let read = -1;
      const quiet = () => {
        clearTimeout(timer);
        const left = Math.min(PEER_QUIET_MS, since + PEER_LONGEST_MS - performance.now());
        // Given up: this boot is done with the embedder (which would still send this
        // file, and for which the other one would be waited for as long).
        timer = setTimeout(close, left);
      };
      const wait = {
        resolve(bytes) {
          clearTimeout(timer);
          wants.delete(sha256);
          if (bytes) progressed();
          resolve(bytes);
        },
        coming(count) {
          if (!Number.isFinite(count) || count <= read) return;
          read = count;
          progressed();
          quiet();
        },
      };
      wants.set(sha256, wait);
      quiet();
      port.postMessage({ want: sha256 });
    });
  }
  return {
    name: "peer",
    checked: true,
    async match(url, { sha256, bytes: size }) {
      await offer;
      // Not offered, or asked for already.
      if (wants.get(sha256) !== null) return undefined;
      const bytes = await ask(sha256);
      if (!bytes) return undefined;
      // Not hashed at all if its length is not the pinned file's.
      if (bytes.byteLength !== size || (await sha256Hex(bytes)) !== sha256) {
        mark("peer-refused", url);
        return undefined;
      }
      // A stream of the bytes as they came: `new Response(bytes)` would copy them (38 MB
      // more for the collector to free while the conversation starts).
      return new Response(new ReadableStream({
        start(controller) {
          controller.enqueue(new Uint8Array(bytes));
          controller.close();
        },
      }));
    },
    async delete() {},
    close,
  };
  function close() {
    if (closed) return;
    closed = true;
    clearTimeout(silent);
    offered();
    port.onmessage = null;
    doneWith(port);
    for (const wait of [...wants.values()]) wait?.resolve(null);
    wants.clear();
  }
}

// The body of the first copy of `url` among `copies` whose bytes are the ones
// runtime.json pins (`pin`), with where it came from, else undefined. A copy that is not
// the pinned one is deleted where it was, and marked (`cache-refused`, `peer-refused`).
async function verifiedCopy(copies, url, pin) {
  for (const copy of copies) {
    const found = await copy.match(url, pin).catch(() => undefined);
    if (!found) continue;
    if (copy.checked) return { body: found.body, from: copy.name };
    const bytes = await found.arrayBuffer().catch(() => undefined);
    if (bytes && typeof pin.sha256 === "string" && (await sha256Hex(bytes)) === pin.sha256) return { body: bytes, from: copy.name };
    await copy.delete(url).catch(() => {});
    mark(`${copy.name}-refused`, url);
  }
  return undefined;
}

async function snapshotCache() {
  try {
    return await caches.open(SNAPSHOT_CACHE);
  } catch {
    return null;
  }
}

// What an embedder's worker sends its child's worker on `port` (see peerCopies): for
// each file the child asks for ({want: sha256}) that is one of the two its own
// runtime.json pins, the snapshot bundle and the runtime's wasm, what it holds of it, as
// {sha256, bytes}, once its own boot is over, so that the child's restore never competes
// with its own for the cores (bytes null if its boot failed). Until then, every
// PEER_BEAT_MS, how many bytes of its runtime files its boot has read ({coming: sha256,
// read}), so that on a slow first visit the child waits for an embedder that is still
// downloading rather than download the same files beside it. From the Cache API where
// its boot kept them, else from its server (the HTTP cache). Each of the two is sent
// once per port; any other want (another file, one asked again) is answered with bytes
// null at once, so that the child never waits for it. The port is closed
// (`runtime-closed`: {wants, answered}) once both files are answered, or when the child
// says it is done with it ({done: true}: it has what it needs, or gave up waiting),
// whatever it asked for: nothing is then read or sent for it. Nothing else is sent: the
// child checks each file against its own pins.
const PEER_BEAT_MS = 1000;
function sendRuntime(port) {
  const asked = new Set();
  let wants = 0;
  let answered = 0;
  let open = true;
  const close = () => {
    open = false;
    port.onmessage = null;
    port.close();
    mark("runtime-closed", { wants, answered });
  };
  port.onmessage = async ({ data }) => {
    if (data === null || typeof data !== "object") return;
    if (data.done === true) return close();
    const sha256 = data.want;
    if (typeof sha256 !== "string") return;
    wants += 1;
    const files = await runtimeFiles; // null: runtime.json did not load, nothing to send
    const urls = asked.has(sha256) ? undefined : files?.get(sha256);
    let bytes = null;
    if (urls) {
      asked.add(sha256);
      const beat = setInterval(() => open && port.postMessage({ coming: sha256, read: received }), PEER_BEAT_MS);
      const ok = await booted;
      clearInterval(beat);
      if (!open) return; // the child is done with the port: nothing to read for it
      // A worker whose boot failed sends nothing (bytes null, at once): its frame ends it
      // soon, which would leave the child waiting for bytes that never come.
      if (ok) {
        try {
          bytes = await ownCopy(urls, await snapshotCache());
        } catch {
          // The file is not to be had: the child asks its server.
        }
      }
    }
    if (!open) return;
    port.postMessage({ sha256, bytes }, bytes ? [bytes] : []);
    if (urls && (answered += 1) === files.size) close();
  };
}

// The runtime's wasm in Pyodide's folder `indexURL` (absolute), as Pyodide fetches it.
function wasmURLIn(indexURL) {
  return new URL(indexURL + "pyodide.asm.wasm").href;
}

// The two files runtime.json pins, by their SHA-256, the snapshot bundle first (the
// order of an offer): the URLs of their parts.
function pinnedFiles(runtime) {
  const files = new Map(runtime.snapshot ? [[runtime.snapshot.sha256, runtime.snapshot.parts.map(here)]] : []);
  files.set(runtime.pyodide.wasmSha256, [wasmURLIn(here(runtime.pyodide.indexURL))]);
  return files;
}

// The whole of a file this worker's boot read (its parts, `urls`, concatenated): the
// Cache API's copy if it kept one, else the server's.
async function ownCopy(urls, cache) {
  const kept = cache && (await cache.match(urls[0]).catch(() => undefined));
  if (kept) return kept.arrayBuffer();
  const parts = await Promise.all(urls.map(async (url) => (await fetchOK(url)).blob()));
  return new Blob(parts).arrayBuffer();
}

// The parts' bodies, one after the other, as one stream (all parts are fetched at once).
function concatenated(responses) {
  let next = 0;
  let reader = null;
  return new ReadableStream({
    async pull(controller) {
      for (;;) {
        if (!reader) {
          if (next === responses.length) return controller.close();
          reader = (await responses[next++]).body.getReader();
        }
        const { done, value } = await reader.read();
        if (!done) return controller.enqueue(value);
        reader = null;
      }
    },
    cancel(reason) {
      for (const response of responses.slice(next)) response.then((r) => r.body.cancel(reason), () => {});
      return reader?.cancel(reason);
    },
  });
}

// A copy (the Cache API's, the embedder's) that is not the one runtime.json pins.
class CopyRefused extends Error {}

// The bundle's bytes: from the first of `copies` that has one, else from the server
// (its parts, under the first one's URL). Returns {body, verified, keep}: a copy streams
// in at once, while `verified` (null for the server's bytes) checks its SHA-256 against
// `pin.sha256` and rejects with CopyRefused if it is not the pinned one; the restore
// places nothing before it resolves; `from` names the copy (null: the server's). keep()
// (after the boot, off its critical path) stores in `cache` what the server sent.
async function bundleStream(urls, pin, signal, copies, cache) {
  const key = urls[0];
  for (const copy of copies) {
    const found = await copy.match(key, pin).catch(() => undefined);
    if (!found || !found.body) continue;
    mark("snapshot-opened", copy.name);
    if (copy.checked) return { body: found.body, verified: null, keep: null, from: copy.name };
    const [body, tee] = found.body.tee();
    const verified = new Response(tee).arrayBuffer().then(sha256Hex).then((hash) => {
      if (hash !== pin.sha256) throw new CopyRefused(`the ${copy.name} copy of ${key} is not the pinned one`);
    });
    verified.catch(() => {});
    return { body, verified, keep: null, from: copy.name };
  }
  const responses = urls.map((url) => fetchOK(url, { signal }));
  for (const response of responses) response.catch(() => {});
  await responses[0];
  mark("snapshot-opened", "network");
  const whole = counted(concatenated(responses));
  if (!cache) return { body: whole, verified: null, keep: null, from: null };
  const chunks = [];
  const body = whole.pipeThrough(
    new TransformStream({
      transform(chunk, controller) {
        chunks.push(chunk);
        controller.enqueue(chunk);
      },
    }),
  );
  const keep = async () => {
    const blob = new Blob(chunks);
    chunks.length = 0;
    await cache.put(key, new Response(blob, { headers: { "Content-Type": "application/octet-stream" } }));
  };
  return { body, verified: null, keep, from: null };
}

// While the snapshot restores, Pyodide's fetch of the runtime's wasm (`url`; it uses the
// worker's global fetch) is answered from the first of `copies` that has it, else from
// the server; a copy only if its bytes are the ones pinned (`pin`). Returns {done()
// (the global fetch as it was), keep() (stores the server's wasm in `cache`, if any)}.
function runtimeWasm(url, pin, copies, cache) {
  const fetchFromServer = self.fetch;
  // Read (and checked) now, while the runtime's JavaScript loads, so that the bytes are
  // in memory by the time Pyodide asks for them.
  let early = verifiedCopy(copies, url, pin);
  // The server's response, a second reader of the body Pyodide compiles, when there is a
  // cache to keep it in: the Cache API gets the bytes decoded once, not a second decode
  // from the HTTP cache. (Without one, a second reader would only hold the bytes.)
  let fetched = null;
  self.fetch = async (input, init) => {
    if (new URL(String(input instanceof Request ? input.url : input)).href !== url) return fetchFromServer(input, init);
    const copy = await early;
    const body = copy?.body;
    // A stream is read once: a second fetch of the wasm, if any, asks the server.
    if (body instanceof ReadableStream) copy.body = null;
    mark("wasm-opened", body ? copy.from : "network");
    if (body) return new Response(body, { headers: { "Content-Type": "application/wasm" } });
    const response = await fetchFromServer(input, init);
    if (!response.ok) return response;
    if (cache) fetched = response.clone();
    // Compiled as wasm whatever type the server gave it: a static host that serves
    // `.wasm` as application/octet-stream would otherwise stop the runtime's compile.
    const headers = new Headers(response.headers);
    headers.set("Content-Type", "application/wasm");
    return new Response(counted(response.body), { headers });
  };
  return {
    done() {
      self.fetch = fetchFromServer;
      early = null; // the bytes, 9.6 MB, are not kept after the restore
    },
    async keep() {
      const response = fetched;
      fetched = null;
      if (!response) return; // read from a copy, never answered by the server, or no cache
      await cache.put(url, new Response(response.body, { headers: { "Content-Type": "application/wasm" } }));
    },
  };
}

// Restore the snapshot in `body` (the bundle's bytes, as they arrive); resolves to
// Pyodide with the bundle's packages installed and imported. The bundle streams in
// while Pyodide fetches its runtime; the restore waits in a preRun for the rest.
async function restoreSnapshot(body, verified, options, loadPyodide, createModule, helpers, signal) {
  const {
    AFTER_RESTORE,
    copyRuns,
    lazyFile,
    lazyFiles,
    openBundle,
    preloadDynlibs,
    readTar,
    wrapInstantiate,
    writeFiles,
    xorBase,
  } = await helpers;
  const bundle = openBundle(body);
  bundle.complete.then(() => mark("snapshot-unpacked"), () => {});
  let failed;
  const failure = new Promise((_resolve, reject) => {
    failed = reject;
  });
  const pyodide = await loadPyodide({
    ...options,
    stdLibURL: EMPTY_ZIP,
    // Only its length is read before the restore, which waits for the preRun below.
    _loadSnapshot: bundle.memory,
    async createPyodideModule(settings) {
      // The static data as instantiation wrote it, before anything runs (see xorBase).
      let baseKey;
      wrapInstantiate(settings, (memory) => {
        mark("wasm-instantiated");
        announceRuntime();
        return bundle.meta
          .then((meta) => {
            baseKey = copyRuns(memory, meta.base.runs);
          })
          .catch(failed);
      });
      settings.preRun.push((Module) => {
        mark("prerun");
        Module.addRunDependency("pagecontext-snapshot");
        // Nothing of a copy (the Cache API's, the embedder's) is placed (its library
        // instantiated, its memory restored) before its bytes are known to be the pinned
        // ones.
        Promise.all([bundle.complete, verified])
          .then(([{ meta, libs, memory }]) => {
            if (Module.API.sitePackages !== meta.sitePackages) {
              throw new Error(`the snapshot has site-packages at ${meta.sitePackages}, not ${Module.API.sitePackages}`);
            }
            xorBase(memory, baseKey, meta.base);
            baseKey = null;
            preloadDynlibs(Module, libs);
            // Pyodide asks for the snapshot's size as INITIAL_MEMORY, which is ignored (pyodide#6254).
            Module.growMemory(memory.length);
            mark("snapshot-placed");
            Module.removeRunDependency("pagecontext-snapshot");
          })
          .catch(failed);
      });
      // An error in the preRun above would otherwise leave the runtime waiting forever.
      return Promise.race([(await createModule)(settings), failure]);
    },
  });
  signal.throwIfAborted();
  mark("runtime-loaded", "snapshot");
  // Pyodide keeps its options, and these two hold on to the bundle, restored already.
  delete pyodide._api.config._loadSnapshot;
  delete pyodide._api.config.createPyodideModule;
  const { meta, files } = await bundle.complete;
  const stdlibURL = options.indexURL + "python_stdlib.zip";
  pyodide.FS.unlink(meta.stdlib.path); // the empty zip
  lazyFile(pyodide.FS, meta.stdlib.path, meta.stdlib.bytes, () => fetchSync(stdlibURL, "stdlib-loaded"));
  writeFiles(pyodide.FS, meta.sitePackages, files);
  const { url, files: listing } = meta.lazyFiles;
  lazyFiles(pyodide.FS, meta.sitePackages, listing, () => readTar(fetchSync(here(url), "site-packages-loaded")));
  pyodide.runPython(AFTER_RESTORE);
  return pyodide;
}

// Boot from the snapshot bundle; resolves to {pyodide, keep (null, or a function that
// stores in the Cache API what this visit read from the server, and forgets older
// copies)}, or rejects (and forgets the cached copies).
// A copy in the Cache API that is not the pinned one is deleted, and the boot starts
// again from the server's bytes (`useCache` false).
async function bootFromSnapshot(snapshot, wasmPin, options, loadPyodide, createModule, helpers, signal, useCache = true) {
  const urls = snapshot.parts.map(here);
  const wasmURL = wasmURLIn(options.indexURL);
  const cache = useCache ? await snapshotCache() : null;
  if (useCache) await peerKnown;
  // The Cache API's copies first (this origin's own), then the embedder's.
  const copies = useCache ? [cache && cacheCopies(cache), peer].filter(Boolean) : [];
  peerLooked = true;
  // Installed with no copies too: the server's wasm is counted as the restore's progress.
  const wasm = runtimeWasm(wasmURL, wasmPin, copies, cache);
  // A boot given up (withStallLimit) leaves the global fetch as it was for the next one.
  signal.addEventListener("abort", () => wasm.done(), { once: true });
  let verified = null;
  let from = null;
  try {
    let body, keepBundle;
    ({ body, verified, keep: keepBundle, from } = await bundleStream(urls, { sha256: snapshot.sha256, bytes: snapshot.bytes }, signal, copies, cache));
    const pyodide = await restoreSnapshot(body, verified, options, loadPyodide, createModule, helpers, signal);
    const keep = cache && (async () => {
      await keepBundle?.();
      await wasm.keep();
      for (const request of await cache.keys()) {
        if (request.url !== urls[0] && request.url !== wasmURL) await cache.delete(request);
      }
    });
    return { pyodide, keep };
  } catch (error) {
    await cache?.delete(urls[0]).catch(() => {});
    await cache?.delete(wasmURL).catch(() => {});
    // A copy that failed in any way (it may not even parse) is refused if its bytes are
    // not the pinned ones: the boot starts again from the server.
    const refused = error instanceof CopyRefused || (verified && (await verified.then(() => false, () => true)));
    if (!refused) throw error;
    mark(`${from}-refused`, urls[0]);
    // The global fetch as it was, before the retry (which needs no answer from a copy).
    wasm.done();
    return bootFromSnapshot(snapshot, wasmPin, options, loadPyodide, createModule, helpers, signal, false);
  } finally {
    wasm.done();
  }
}

// How many bytes of the runtime's files this worker's boot has read from its server,
// and when it last read any or heard that its embedder did (progressed()).
let received = 0;
let lastProgress = 0;
function progressed(bytes = 0) {
  received += bytes;
  lastProgress = performance.now();
}

// On a slow first visit, the frame says how much of the runtime's files the boot has
// read: from PROGRESS_AFTER_MS after the boot's start (a boot from the caches is over by
// then) and each PROGRESS_EVERY_MS while it grows, until the worker has started or failed
// (stopProgress), it posts {kind: "progress", read, total} (bytes as decoded; the frame's
// boot script shows it). Posted directly, not held for the edge: its listener is the boot
// script's, there from the worker's start.
const PROGRESS_AFTER_MS = 2000;
const PROGRESS_EVERY_MS = 1000;
let progressBeat = null;
function reportProgress(total) {
  let said = -1;
  const tell = () => {
    // Nothing read from the network (the files come from a copy): nothing to say.
    if (received === said || received === 0) return;
    said = received;
    self.postMessage({ kind: "progress", read: Math.min(received, total), total });
  };
  progressBeat = setTimeout(() => {
    tell();
    progressBeat = setInterval(tell, PROGRESS_EVERY_MS);
  }, PROGRESS_AFTER_MS);
}
function stopProgress() {
  clearTimeout(progressBeat);
  clearInterval(progressBeat);
  progressBeat = null;
}

// `start(signal)`'s result, or a rejection once `ms` have passed with no progress (the
// boot read no byte of the runtime's files, and heard of none read for it: then
// `signal` aborts). A boot that is still downloading on a slow link is not given up;
// one that is stuck, or that has read everything and does not end, is.
async function withStallLimit(ms, start) {
  const controller = new AbortController();
  let timer;
  progressed();
  const late = new Promise((_resolve, reject) => {
    const check = () => {
      const left = lastProgress + ms - performance.now();
      if (left > 0) {
        timer = setTimeout(check, left);
        return;
      }
      const error = new Error(`no progress in ${ms} ms`);
      controller.abort(error);
      reject(error);
    };
    timer = setTimeout(check, ms);
  });
  try {
    return await Promise.race([start(controller.signal), late]);
  } finally {
    clearTimeout(timer);
  }
}

// A stream of `body`'s chunks, each counted as progress (withStallLimit) as it is read.
function counted(body) {
  return body.pipeThrough(new TransformStream({
    transform(chunk, controller) {
      progressed(chunk.byteLength);
      controller.enqueue(chunk);
    },
  }));
}

// `fetch(url, init)`'s response, or a rejection naming the URL and the status when it is
// not a success.
async function fetchOK(url, init) {
  const response = await fetch(url, init);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return response;
}

// Loaded alongside runtime.json.
const snapshotHelpers = import(here("/web/snapshot.mjs"));
snapshotHelpers.catch(() => {});
const runtimeRead = fetchOK(here("/py/runtime.json")).then((response) => response.json());
// The files this worker sends a child that asks for them (sendRuntime; null if
// runtime.json did not load). Their SHA-256s are told to its boot script as soon as
// runtime.json is read (none if it is not): an embedder offers its child this worker's
// files, not the pins of a runtime.json its main thread read earlier (a single-page app
// that mounts again after a deploy).
const runtimeFiles = runtimeRead.then(pinnedFiles).catch(() => null);
runtimeFiles.then((files) => self.postMessage({ kind: "runtime-pins", pins: files ? [...files.keys()] : [] }));
// This worker's boot is over, and what it keeps is in the Cache API (true), or it has
// failed (false): what sendRuntime waits for.
let bootEnded;
const booted = new Promise((resolve) => {
  bootEnded = resolve;
});

try {
  const runtime = await runtimeRead;
  const indexURL = here(runtime.pyodide.indexURL);
  const options = {
    indexURL,
    lockFileURL: here(runtime.lockFileURL),
    packageBaseUrl: here("/wheels/"),
  };
  // Pyodide tells a classic worker from a module worker by calling importScripts, which
  // throws in a module worker. Under Trusted Types (the sandboxed panel's data: worker
  // keeps its document's policy) that call with a string is also reported as a
  // violation; this one throws as a module worker's does, and reports nothing.
  globalThis.importScripts = () => {
    throw new TypeError("a module worker has no importScripts");
  };
  const pyodideModule = import(indexURL + "pyodide.mjs");
  pyodideModule.catch(() => {});
  let pyodide = null;
  let keep = null;
  let installed = [];
  if (runtime.snapshot) {
    reportProgress(runtime.snapshot.bytes + runtime.pyodide.wasmBytes);
    // Fetched now, alongside the snapshot bundle.
    const createModule = import(indexURL + "pyodide.asm.mjs").then((m) => {
      mark("runtime-imported");
      return m.default;
    });
    createModule.catch(() => {});
    try {
      const { loadPyodide } = await pyodideModule;
      ({ pyodide, keep } = await withStallLimit(SNAPSHOT_STALL_MS, (signal) =>
        bootFromSnapshot(runtime.snapshot, { sha256: runtime.pyodide.wasmSha256, bytes: runtime.pyodide.wasmBytes }, options, loadPyodide, createModule, snapshotHelpers, signal),
      ));
      installed = runtime.snapshot.packages || runtime.packages;
    } catch (error) {
      console.warn("pagecontext: the boot snapshot did not restore; booting without it.", error);
      mark("snapshot-failed", String(error));
    }
  }
  dropPeer();
  stopProgress();
  if (!pyodide) {
    const { loadPyodide } = await pyodideModule;
    // The lock is read here rather than by Pyodide, so that a missing one is named by
    // its URL and status (from a server that no longer has this build's files, Pyodide
    // would report only an error page that is not JSON).
    const { lockFileURL, ...fresh } = options;
    const lockFileContents = fetchOK(lockFileURL).then((response) => response.json());
    lockFileContents.catch(() => {}); // Pyodide awaits it later; its failure is reported then
    pyodide = await loadPyodide({ ...fresh, lockFileContents });
    mark("runtime-loaded", "fresh");
    announceRuntime();
  }
  const missing = runtime.packages.filter((name) => !installed.includes(name));
  if (missing.length) {
    // loadPackage resolves even when a package did not load (a 404, a hash that does not
    // match): it only reports it. The boot fails with that report, not with the import
    // error that would follow.
    const problems = [];
    await pyodide.loadPackage(missing, { messageCallback: () => {}, errorCallback: (text) => problems.push(text) });
    if (problems.length) throw new Error(`packages did not load: ${problems.join("; ")}`);
  }
  mark("packages-loaded");
  const worker = pyodide.pyimport("pagecontext.browser.worker");
  mark("module-imported");
  worker.start(self, early, listenPort);
  mark("worker-started");
  (keep ? keep().then(() => mark("snapshot-kept"), () => {}) : Promise.resolve()).then(() => bootEnded(true));
} catch (error) {
  dropPeer();
  stopProgress();
  bootEnded(false);
  toEdge({ kind: "failed", error: String((error && error.stack) || error) });
  // Nothing will read what the edge sends from now on: it is no longer kept, and a port
  // it hands over is closed, so its peer is not left talking to nobody.
  const drop = (event) => { for (const port of event.ports || []) port.close(); };
  self.onmessage = drop;
  early.splice(0).forEach(drop);
}
