// Boot script for a pagecontext frame: starts the core's Worker first (so Pyodide loads
// while the page renders), then MicroPython on the main thread with the edge's Python
// sources. The browser forces this file to be JavaScript; the edge itself is Python.
//
// Two ways in (docs/integration.md):
// - a page with a <script type="application/json" id="pc-config"> block is mounted at
//   once, and its config.apps run;
// - a single-page app imports `mount` and `unmount` from this module and mounts the
//   embed where a route needs it: `const embed = await mount(config)`, later
//   `embed.unmount()`. Unmounting ends the worker, removes every listener and drops
//   every proxy; MicroPython and the edge's sources stay loaded for the next mount.
const here = (path) => new URL(path, import.meta.url).href;
// Each boot step runs in its own task, so no step adds to another's main-thread time.
const nextTask = () => new Promise((resolve) => setTimeout(resolve, 0));

// MicroPython cannot catch a JavaScript exception, so the few calls that may throw on
// hostile input or a locked-down browser are wrapped here and never throw. `post` is
// also the one place the edge posts to another window (tests spy on it there).
const toJson = (value, replacer) => { try { const text = JSON.stringify(value, replacer); return typeof text === "string" ? text : null; } catch { return null; } };
const SCALARS = new Set(["string", "number", "boolean"]);
// The longest key or string a flat window message may hold (no handshake's is over 64).
const FLAT_CHARS = 256;
const SAFE = BigInt(Number.MAX_SAFE_INTEGER);
// Half a character (a surrogate without its other half) as JSON.stringify writes it:
// `\udXXX`, the only characters it writes as such escapes.
const HALF_WRITTEN = /\\ud[89a-f][0-9a-f]{2}/;
// `value` as JSON text; null if it holds a number JSON cannot write (NaN, an infinity,
// which JSON.stringify would write as null; a Number object's too, whose value it
// writes) or half a character.
const wholeJson = (value) => {
  let finite = true;
  const text = toJson(value, (key, item) => {
    const number = item instanceof Number ? item.valueOf() : item;
    if (typeof number === "number" && !Number.isFinite(number)) finite = false;
    return item;
  });
  // Without its escaped backslashes, an escape left in the text is a real one.
  return finite && text !== null && !HALF_WRITTEN.test(text.replace(/\\\\/g, "")) ? text : null;
};
// What a child frame posts to ask its embedder for the runtime's files (askForRuntime),
// as `flat` writes it.
const RUNTIME_REQUEST = JSON.stringify({ pagecontextRuntime: "wanted" });
const RETIRE_MS = 1000;
// The workers retired (host.retire): one that failed is ended while its frame stays
// mounted, and offers its child none of the runtime's files (answerRuntimeRequests).
const retired = new WeakSet();
// The window each child frame was last loaded in (`host.navigate`, `frameMoved`).
const loadedIn = new WeakMap();
// Whether `frame`, loaded without a `src` (in a page loaded by Back or Forward), was
// taken out of the document and put back since: its browsing context, and with it its
// window, is a new one, which holds an empty document (a frame with a `src` loads it
// again instead). Told by the window, not the document, which the embedder of a
// sandboxed frame cannot read.
function frameMoved(frame) {
  const loaded = loadedIn.get(frame);
  return loaded !== undefined && frame.getAttribute("src") === null && frame.contentWindow !== loaded;
}
// Whether `element` holds a highlight's mark (host.highlighted).
const highlightMarked = (element, words) => element.hasAttribute("data-pc-highlight") || words.includes(element.getAttribute("aria-description"));
// After the saved state's key, the key of the question typed and not sent (host.keepDraft).
const DRAFT = ":draft";
// The name of the item `storageUsable` writes and removes, to learn whether storage is
// usable before anything is saved.
const STORAGE_PROBE = "pagecontext-storage-probe";
// The positions a frame may take (integration.POSITIONS), published on <html>.
const POSITIONS = ["embedder", "child"];
globalThis.pagecontextHost = {
  json: toJson,
  // A message from the edge's own worker as JSON text. Pyodide hands a Python integer
  // over as a Number only strictly inside ±Number.MAX_SAFE_INTEGER, and those two
  // numbers themselves as BigInts, which JSON.stringify refuses: such a BigInt is
  // written as the Number it equals. null for one past that range (no protocol value is).
  worker(value) {
    return toJson(value) ?? toJson(value, (key, item) => (typeof item === "bigint" && item >= -SAFE && item <= SAFE ? Number(item) : item));
  },
  // A window message as JSON text if it is a flat object of at most 16 scalars, none of
  // its keys and strings over FLAT_CHARS characters, as every handshake message is; null
  // for anything else, unread: structured clone keeps shared references, so the JSON of
  // a message of a few hundred bytes can be gigabytes, and a long string, handed to
  // MicroPython and parsed there, would hold the main thread some 5 microseconds a
  // character (10 s for 2 MB).
  flat(value) {
    if (value === null || typeof value !== "object" || Array.isArray(value)) return null;
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) return null;
    const keys = Object.keys(value);
    if (keys.length > 16) return null;
    for (const key of keys) {
      const item = value[key];
      if (item !== null && !SCALARS.has(typeof item)) return null;
      if (key.length > FLAT_CHARS || (typeof item === "string" && item.length > FLAT_CHARS)) return null;
    }
    return toJson(value);
  },
  // True for exactly the request a child's boot script posts for the runtime's files:
  // answered by this script (answerRuntimeRequests), not a message for the edge.
  runtimeRequest(value) {
    return globalThis.pagecontextHost.flat(value) === RUNTIME_REQUEST;
  },
  // The registry's side of the page (the edge keeps one Map per component and asks
  // these for what it needs): a table of thousands of rows is read in one call each
  // time it reports a render, not element by element across MicroPython's boundary,
  // which cost ~0.1 ms an element (200 rows were a task over 50 ms).
  // The objects of `component`: its `data-pc-resource-ref` elements whose nearest
  // component is it (a component nested in it reports its own), as a Map from ref to
  // element in the document's order; of two elements with one ref, the last.
  objects(component) {
    const found = new Map();
    for (const element of component.querySelectorAll("[data-pc-resource-ref]")) {
      if (element.closest("[data-pc-component]") === component) found.set(element.getAttribute("data-pc-resource-ref"), element);
    }
    return found;
  },
  // The element of object `ref` in `objects` (a Map `objects` made), or null; `ref` as
  // JSON text when `json` (MicroPython hands JavaScript a string only up to a NUL: a ref
  // holding one comes as its JSON, whose escape carries it).
  object(objects, ref, json) {
    return objects.get(json ? JSON.parse(ref) : ref) ?? null;
  },
  // The refs in `objects`, in the document's order.
  refs(objects) {
    return [...objects.keys()];
  },
  // The elements in `objects` with a highlight's mark (`data-pc-highlight`, or one of
  // `words`, what a highlight says to a screen reader, as their `aria-description`,
  // which goes with the highlight also where the page took the highlight off itself),
  // or, given a `tone`, with a highlight of that tone.
  highlighted(objects, tone, words) {
    const marked = tone ? (element) => element.getAttribute("data-pc-highlight") === tone : (element) => highlightMarked(element, words);
    return [...objects.values()].filter(marked);
  },
  // The elements in `before` that no longer stand for their ref in `after` (null: in
  // none), and that carry a mark: a highlight's (`words` as for `highlighted`), the
  // selection's `aria-selected`, or that are `selected` (the element the edge marked
  // selected, whatever the page has since written in its `aria-selected`: a list that
  // recycles its rows may reset it).
  replaced(before, after, selected, words) {
    const marked = (element) => element === selected || highlightMarked(element, words) || element.getAttribute("aria-selected") === "true";
    return [...before].filter(([ref, element]) => after?.get(ref) !== element && marked(element)).map(([, element]) => element);
  },
  // Whether `element` is drawn where the user could see it: it has a box with an area
  // (an SVG shape, a line among them, a length: its box leaves out the stroke), and
  // neither `visibility: hidden` nor `opacity: 0` is on it or an ancestor. A browser
  // without `checkVisibility` is not asked the last; its options are named both ways
  // browsers have named them. What an ancestor clips away (a collapsed accordion's
  // `max-height: 0; overflow: hidden`) counts as drawn, as what is scrolled out of view
  // does: telling the two apart is the browser's layout, not a box's size.
  seen(element) {
    const svg = element instanceof SVGElement;
    const drawn = (box) => (svg ? box.width > 0 || box.height > 0 : box.width > 0 && box.height > 0);
    if (![...element.getClientRects()].some(drawn)) return false;
    if (typeof element.checkVisibility !== "function") return true;
    return element.checkVisibility({ visibilityProperty: true, opacityProperty: true, checkVisibilityCSS: true, checkOpacity: true });
  },
  // Scroll `element` into view (a `locate` that leaves the keyboard's focus), unless that
  // takes the element holding the focus out of view (the assistant's frame where the
  // user types, below the table on a narrow screen; a field of the page's): then every
  // scroll goes back as it was. Returns whether it stayed scrolled (docs/protocol.md 8.16).
  scrollKeepingFocus(element) {
    const focused = document.activeElement;
    const inView = (el) => {
      const box = el.getBoundingClientRect();
      return box.bottom > 0 && box.right > 0 && box.top < innerHeight && box.left < innerWidth;
    };
    const held = focused && focused !== document.body && inView(focused);
    const scrolled = [];
    for (let node = element.parentElement; held && node; node = node.parentElement) {
      scrolled.push([node, node.scrollTop, node.scrollLeft]);
    }
    // Instantly: a smooth scroll would move the focused element after this looked.
    element.scrollIntoView({ block: "nearest", behavior: "instant" });
    if (!held || inView(focused)) return true;
    for (const [node, top, left] of scrolled) node.scrollTo({ top, left, behavior: "instant" });
    return false;
  },
  // A page event's detail as JSON text; null if it holds a number JSON cannot write or
  // half a character (`wholeJson`).
  detail(value) {
    return wholeJson(value);
  },
  // JSON a page wrote in an attribute, as JavaScript reads it, written again for the
  // edge's MicroPython reader; null where JSON.parse refuses it (MicroPython's reader
  // takes more: `007`, `1.`), or it holds a number that is not finite (1e999 reads as
  // Infinity) or half a character (`wholeJson`). Written again, a character
  // outside the BMP is itself: MicroPython reads its escaped pair (`\ud83d\ude00`) as
  // two broken halves.
  reread(text) {
    try {
      return wholeJson(JSON.parse(text));
    } catch {
      return null;
    }
  },
  // The saved state has two copies: this tab's own (sessionStorage: a reload of this tab
  // reads it back, whatever another tab of the assistant saved since) and the latest
  // any tab saved (localStorage: a new tab continues from it). `key` names its owner
  // (integration.saved_state_key): the saved states of other owners under `prefix` (an
  // earlier user of this browser, or one without an owner) are removed, not kept. An
  // empty key (no owner known) reads nothing and saves nothing.
  load(key, prefix) {
    let found = null;
    for (const name of ["sessionStorage", "localStorage"]) {
      try {
        const store = window[name];
        // The keys read first, then removed: a removal may reorder what key(index) gives.
        const names = Array.from({ length: store.length }, (_, index) => store.key(index));
        for (const other of names) {
          if (other !== null && other !== key && other !== key + DRAFT && other.startsWith(prefix)) store.removeItem(other);
        }
        const text = key ? store.getItem(key) : null;
        if (found === null && text !== null) found = text;
      } catch { /* denied */ }
    }
    return found;
  },
  // Whether a saved state can be kept under `key` now: a write to either storage that
  // goes through. False with no key (no owner known), or when the browser denies this
  // frame its storage (blocked third-party storage) or it is full. The probe's item is
  // removed at once, and its name is under no owner's prefix.
  storageUsable(key) {
    if (!key) return false;
    for (const name of ["sessionStorage", "localStorage"]) {
      try {
        window[name].setItem(STORAGE_PROBE, "");
        window[name].removeItem(STORAGE_PROBE);
        return true;
      } catch { /* denied or full */ }
    }
    return false;
  },
  // The question typed and not sent when the panel's document goes (a reload), kept for
  // this tab's next one: in sessionStorage beside the saved state, under its key (so
  // `load` removes another owner's), and read once. Nothing is kept without a key.
  keepDraft(key, text) {
    if (!key) return;
    try {
      if (text) window.sessionStorage.setItem(key + DRAFT, text);
      else window.sessionStorage.removeItem(key + DRAFT);
    } catch { /* denied or full: the draft is not kept */ }
  },
  takeDraft(key) {
    if (!key) return "";
    try {
      const text = window.sessionStorage.getItem(key + DRAFT);
      window.sessionStorage.removeItem(key + DRAFT);
      return text || "";
    } catch {
      return "";
    }
  },
  // Whether this tab holds a saved state of its own under `key` (sessionStorage: a reload
  // of the tab), rather than only the latest another tab saved (localStorage).
  ownSaved(key) {
    try {
      return Boolean(key) && window.sessionStorage.getItem(key) !== null;
    } catch {
      return false;
    }
  },
  // A MutationObserver of `target` that calls `handler` with no arguments, so that its
  // records (each holding every node its mutation removed) never reach MicroPython,
  // whose proxies keep a JS object until its collector runs (ProxyOwner.observe_quietly).
  observeQuietly(target, options, handler) {
    const observer = new MutationObserver(() => handler());
    observer.observe(target, options);
    return observer;
  },
  // Load `url` in the child `frame`. A frame whose `src` names no document of its own
  // (none, or the empty one the edge empties a replacing frame to) is loaded by setting
  // `src`, which a frame taken out of the document and put back loads again (its child
  // then announces itself and is given a fresh nonce). Any other load replaces the
  // frame's entry in the session history, so that neither a nonce sent anew nor a frame
  // emptied adds an entry the browser's Back would stop at, or drops the ones Forward
  // would go to. So does a first load in a page the browser loaded by Back or Forward:
  // its frame may hold the document it restored from the session history, and its `src`
  // stays unset; once such a frame is moved (`moved`), it is loaded by setting `src`.
  navigate(frame, url) {
    const inside = frame.contentWindow;
    const src = frame.getAttribute("src");
    const restored = performance.getEntriesByType("navigation")[0]?.type === "back_forward";
    const fresh = (src === null || src === "about:blank") && (!restored || frameMoved(frame));
    if (inside === null || fresh) frame.src = url;
    else inside.location.replace(url);
    loadedIn.set(frame, frame.contentWindow);
  },
  moved: frameMoved,
  // `value` resolved against `base`, or null where `new URL()` cannot parse it.
  url(value, base) { try { return new URL(value, base).href; } catch { return null; } },
  // The worker's `persist` message, its text stored as it came: the saved state (the
  // whole conversation) never goes through Python on the main thread. null: another
  // message; false: storage is denied.
  persist(key, message) {
    if (message === null || typeof message !== "object" || message.kind !== "persist") return null;
    if (typeof message.text !== "string" || !key) return false;
    // A copy that cannot be written (storage denied or full) is removed: an older copy
    // left there would be read back on a reload or in a new tab as if it were the
    // conversation, without what was said since.
    let own = false;
    try { window.sessionStorage.setItem(key, message.text); own = true; } catch {
      // Not this tab's older copy on a reload, then: the shared one, if it is newer.
      try { window.sessionStorage.removeItem(key); } catch { /* denied */ }
    }
    let shared = false;
    try { window.localStorage.setItem(key, message.text); shared = true; } catch {
      try { window.localStorage.removeItem(key); } catch { /* denied */ }
    }
    return own || shared;
  },
  // End an unmounted edge's worker, or a failed one, once it has said `bye` to the peer
  // (it answers `bye-sent`), or after RETIRE_MS if it does not answer (still booting, or
  // failed): a peer told `bye` unbinds at once, where one never told would wait for the
  // deadlines of whatever it had sent.
  retire(worker) {
    retired.add(worker);
    const end = () => { clearTimeout(timer); worker.removeEventListener("message", answered); worker.terminate(); };
    const answered = (event) => { if (event.data && event.data.kind === "bye-sent") end(); };
    const timer = setTimeout(end, RETIRE_MS);
    worker.addEventListener("message", answered);
    worker.postMessage({ kind: "bye" });
  },
  post(target, message, targetOrigin, transfer) {
    try { target.postMessage(message, targetOrigin, transfer || []); return true; } catch { return false; }
  },
};

// Says `state` on <html> and in a `pagecontext:state` event (every key present), for
// a mount that has no edge to say it: `error` (with `failed`) or none.
function announce(state, error = null) {
  const data = document.documentElement.dataset;
  data.pcState = state;
  if (error === null) {
    delete data.pcError;
    delete data.pcErrorField;
  } else {
    data.pcError = error;
  }
  const detail = { state, connection: null, revision: null, sharedRevision: null, child: null, error };
  document.dispatchEvent(new CustomEvent("pagecontext:state", { detail }));
}

function fail(reason) {
  announce("failed", reason);
}

let runtimeLoading = null;

// MicroPython with the edge's sources: loaded once per document, on the first mount.
// A load that failed is forgotten, so that a later mount tries again.
function edgeRuntime() {
  if (!runtimeLoading) {
    runtimeLoading = loadEdgeRuntime();
    runtimeLoading.catch(() => { runtimeLoading = null; });
  }
  return runtimeLoading;
}

// A response that is not 200 is an error here, named with its URL; with `integrity`
// (runtime.json's digest of the file), so is one whose bytes are not those.
async function fetched(url, integrity) {
  let response;
  try {
    response = await fetch(url, integrity ? { integrity } : undefined);
  } catch (error) {
    throw new Error(integrity ? `${url}: not loaded or not the build's bytes (${error.message})` : `${url}: ${error.message}`);
  }
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return response;
}

// A file of the build that runs on the main thread (the edge's and the apps' bytecode):
// fetched with the digest runtime.json names for it. A file it names no digest for is
// not one of the build's, and is not fetched at all.
function buildFile(url, integrity) {
  if (typeof integrity !== "string" || !integrity) {
    return Promise.reject(new Error(`${url}: not one of the build's files (py/runtime.json names no digest for it)`));
  }
  return fetched(url, integrity);
}

async function loadEdgeRuntime() {
  const runtime = await (await fetched(here("/py/runtime.json"))).json();
  const [{ loadMicroPython }, sources] = await Promise.all([
    import(here(runtime.micropython.module)),
    Promise.all(
      runtime.edge.files.map(async (file) => [file, new Uint8Array(await (await buildFile(here(runtime.edge.base + file), runtime.edge.integrity?.[file])).arrayBuffer())]),
    ),
  ]);
  const mp = await loadMicroPython({ stdout: (line) => console.log(line), stderr: (line) => console.error(line) });
  await nextTask();
  for (const [file, code] of sources) {
    const path = `/lib/${file}`;
    mp.FS.mkdirTree(path.slice(0, path.lastIndexOf("/")));
    mp.FS.writeFile(path, code);
  }
  performance.mark("pagecontext:micropython-ready");
  // The edge's modules are listed dependencies first: each is imported in its own task.
  let edge = null;
  for (const [file] of sources) {
    if (!file.endsWith(".mpy")) continue;
    await nextTask();
    edge = mp.pyimport(file.slice(0, -".mpy".length).replaceAll("/", "."));
  }
  performance.mark("pagecontext:edge-imported");
  await nextTask();
  return { runtime, mp, edge };
}

// The one URL this document starts its worker from. A sandboxed frame has an opaque
// origin, and a worker script must be same-origin with its document: such a frame starts
// the worker from a data: URL that imports the real one (Chromium refuses module workers
// from blob: URLs there).
function workerScriptURL() {
  const url = new URL("/web/worker.mjs", import.meta.url).href;
  return self.origin === "null" ? `data:text/javascript,import ${encodeURIComponent(JSON.stringify(url))};` : url;
}

// A page that enforces Trusted Types (its policy says `require-trusted-types-for
// 'script'`) lets a script start a worker only from a TrustedScriptURL, which only a
// policy the page allows by name can make. pagecontext's policy is named "pagecontext"
// and makes one URL: its worker's, refusing any other. Made once per document, as this
// module loads (a single-page app that mounts later has the name taken from then on,
// not by whichever script asks first), when the browser has Trusted Types; `null` when
// the page's `trusted-types` directive does not allow the name, or a script that ran
// before this module took it (then the worker starts from the plain URL, which only a
// page that does not enforce Trusted Types accepts).
const scriptURLPolicy = makeScriptURLPolicy();

function makeScriptURLPolicy() {
  try {
    return globalThis.trustedTypes?.createPolicy("pagecontext", {
      createScriptURL: (given) => {
        if (given !== workerScriptURL()) throw new TypeError(`pagecontext: not the worker's URL: ${given}`);
        return given;
      },
    }) ?? null;
  } catch {
    return null; // the page's trusted-types directive does not name "pagecontext"
  }
}

function trustedWorkerURL() {
  const url = workerScriptURL();
  return scriptURLPolicy ? scriptURLPolicy.createScriptURL(url) : url;
}

// The worker's `error` event (its script did not load, or it stopped on an uncaught
// error) before the edge listens: handed to the edge once it has begun. Throws when the
// page's policy refuses the worker (Trusted Types, above). A child frame's worker is
// named so (`pagecontext-assistant-child`): only it waits for its embedder's port.
function startWorker(role, position, onError) {
  const name = `pagecontext-${role}${position === "child" ? "-child" : ""}`;
  const worker = new Worker(trustedWorkerURL(), { type: "module", name });
  worker.addEventListener("error", (event) => onError(event.message || ""));
  return worker;
}

// Why a worker could not be started, and what the page's author can do about it.
const TRUSTED_TYPES_HINT = "; the page requires Trusted Types: its trusted-types directive must allow the name pagecontext, and no other script may take it";
function workerRefused(error) {
  const enforced = globalThis.trustedTypes && scriptURLPolicy === null;
  const hint = enforced ? TRUSTED_TYPES_HINT : "";
  return `worker: the browser refused to start the worker (${error && error.message})${hint}`;
}

// One download of the runtime for the two frames (docs/architecture.md): the two frames
// are two sites, whose HTTP caches the browser keeps apart, so each would download the
// same 9 MB. A child frame asks its embedder for its copies of the runtime's wasm and
// the snapshot bundle: it posts `{pagecontextRuntime: "wanted"}` with a port to its
// parent (on `peerOrigin`) and hands the other end to its worker. The embedder answers
// its own child frame only, from `peerOrigin` (or an opaque origin, if it sandboxed the
// frame), RUNTIME_ANSWERS times at most per mount: with the SHA-256s of its worker's
// files (the pins of the runtime.json its worker read: workerPins; at once, unless the
// worker has not read it yet), then, from its worker, with the bytes of those the child
// asks for; a request past that number gets an empty offer, as does every request when
// the worker could not read runtime.json or failed. The child's
// worker uses a file only if its bytes are the ones its own runtime.json pins;
// otherwise, or when the embedder says nothing, it reads its own server's
// (web/worker.mjs, peerCopies and sendRuntime).
const RUNTIME_ANSWERS = 4;

// `value` if it is an exact origin ("https://host[:port]", as the edge requires of
// `peerOrigin`), else null: the request is posted to that origin only.
function exactOrigin(value) {
  try {
    const origin = new URL(value).origin;
    return origin !== "null" && origin === value ? origin : null;
  } catch {
    return null;
  }
}

// A child's request to its parent; the port its worker reads the answer on, or null.
function askForRuntime(config) {
  const parentOrigin = exactOrigin(config.peerOrigin);
  if (window.parent === window || parentOrigin === null) return null;
  const channel = new MessageChannel();
  if (globalThis.pagecontextHost.post(window.parent, JSON.parse(RUNTIME_REQUEST), parentOrigin, [channel.port2])) {
    return channel.port1;
  }
  channel.port1.close();
  return null;
}

// A child's worker asks, as it starts, for the port on which its embedder offers the
// runtime's files (`runtime-peer`): answered `runtime-offered`, with `port` (null if the
// request could not be posted: then with none), and never seen by the edge.
function givePeerPort(worker, port) {
  const answer = (event) => {
    if (!event.data || event.data.kind !== "runtime-peer") return;
    event.stopImmediatePropagation();
    worker.removeEventListener("message", answer);
    worker.postMessage({ kind: "runtime-offered" }, port ? [port] : []);
  };
  worker.addEventListener("message", answer);
}

// The SHA-256s of the files `worker` sends a child that asks for them, as it tells them
// once it has read its runtime.json (web/worker.mjs; none if it cannot, or if the worker
// fails first): what an embedder offers. Its message is taken here whenever it comes,
// never seen by the edge.
function workerPins(worker) {
  return new Promise((resolve) => {
    const take = (event) => {
      if (!event.data || event.data.kind !== "runtime-pins") return;
      event.stopImmediatePropagation();
      worker.removeEventListener("message", take);
      const { pins } = event.data;
      resolve(Array.isArray(pins) ? pins.filter((pin) => typeof pin === "string") : []);
    };
    worker.addEventListener("message", take);
    worker.addEventListener("error", () => resolve([]), { once: true });
  });
}

// Listens until `handle` is unmounted (or no longer mounted: a refused config, a runtime
// that did not load); returns what stops it. A message's data is read only once its
// window and origin are the child's (structured clone reads it then, not before).
function answerRuntimeRequests(handle, config) {
  let left = RUNTIME_ANSWERS;
  const waiting = new Set(); // ports whose offer waits for the worker's pins
  const stop = () => {
    window.removeEventListener("message", answer);
    for (const port of waiting) port.close();
    waiting.clear();
  };
  const answer = (event) => {
    if (mounted !== handle || !handle.worker) {
      stop();
      return;
    }
    const frame = document.querySelector("[data-pc-child]");
    if (!event.isTrusted || !frame || event.source === null || event.source !== frame.contentWindow) return;
    const opaque = frame.hasAttribute("sandbox") && !frame.sandbox.contains("allow-same-origin");
    if (event.origin !== (opaque ? "null" : config.peerOrigin)) return;
    // Exactly the request a child's boot script posts, the one its edge leaves to this
    // listener (any other message there is the edge's to count).
    if (!globalThis.pagecontextHost.runtimeRequest(event.data)) return;
    const [port] = event.ports;
    if (!port || event.ports.length !== 1) return;
    if (left <= 0) {
      port.postMessage({ offer: [] });
      port.close();
      return;
    }
    left -= 1;
    waiting.add(port);
    handle.pins.then((pins) => {
      if (!waiting.delete(port)) return; // closed by stop()
      if (mounted !== handle || !handle.worker) {
        port.close();
        return;
      }
      // A worker that failed is ended (the edge retires it): the child reads its own.
      if (retired.has(handle.worker)) pins = [];
      port.postMessage({ offer: pins });
      if (pins.length) handle.worker.postMessage({ kind: "runtime-wanted" }, [port]);
      else port.close();
    });
  };
  window.addEventListener("message", answer);
  return stop;
}

let mounted = null;

// The state in words, in every element of the page marked `data-pc-state-text` (a live
// region, so that a screen reader hears it change): written on each `pagecontext:state`,
// by the frame's role (an assistant that is ready waits for its page, and one bound says
// it is connected to the page: "Assistant connected" is the page's word for the same).
const STATE_WORDS = {
  booting: "Connecting…",
  ready: "Connecting…",
  connecting: "Connecting…",
  bound: "Assistant connected",
  failed: "The assistant could not start: reload the page to try again",
  closed: "",
};
// An assistant's own words where they differ from the page's.
const ASSISTANT_WORDS = {
  ready: "Waiting for the page…",
  connecting: "Waiting for the page…",
  bound: "Connected to the page",
};
// A config the edge refused (`config:`), or a policy that keeps pagecontext from starting
// its worker, is the page's setup, which a reload does not mend.
const SETUP_FAILED = "The assistant could not start: it is not set up correctly on this page";
// A boot timeout is not final: the runtime may still be downloading on a slow link, and the
// frame moves on to `ready` if it gets there (docs/integration.md, timeouts.bootMs). A
// reload would only start that download again.
const SLOW_START = "The assistant is taking longer than usual to start…";
// A frame whose worker had started (it was `ready` or further) and then failed did start.
const STOPPED = "The assistant stopped: reload the page to try again";
// An embedder waiting for its child (`ready`, `connecting`) once the child is reported
// `silent` past `timeouts.childMs` (its server is down, it failed, its policy names
// another page) or `refused` (this page's worker refused its handshake): not
// "Connecting…" for good. A child that answers takes the report away.
const CHILD_WORDS = {
  silent: "The assistant is not answering",
  refused: "The assistant could not connect to this page",
};
const setupFailure = (error) => typeof error === "string" && (error.startsWith("config:") || error.endsWith(TRUSTED_TYPES_HINT));

// What the page's Content-Security-Policy blocked of pagecontext's own, from this script's
// start: compiling WebAssembly (`wasm-eval`: MicroPython's, without 'wasm-unsafe-eval'),
// a request for one of its files (OWN_PATHS, at the boot script's origin: `connect-src`,
// `script-src`, ...), or the frame of its peer (`frame-src`). A frame that then fails,
// or whose child stays silent, is set up wrong (a reload mends nothing): its words say
// so, and the console names each block once, with the directive to mend. The page's own
// blocked requests are not counted, nor what a report-only policy reports.
const blocked = [];
const OWN_PATHS = ["/web/", "/py/", "/vendor/", "/wheels/"];
const PEER_DIRECTIVES = ["frame-src", "child-src"];
let blockedPeer = null;
const blockedOrigin = (uri) => { try { return new URL(uri).origin; } catch { return null; } };
document.addEventListener("securitypolicyviolation", (event) => {
  // A report-only policy blocks nothing (the browser says what it would have blocked).
  if (event.disposition !== "enforce") return;
  const uri = event.blockedURI;
  const origin = blockedOrigin(uri);
  const own = origin === new URL(import.meta.url).origin && OWN_PATHS.some((path) => new URL(uri).pathname.startsWith(path));
  const peer = origin !== null && origin === blockedPeer && PEER_DIRECTIVES.includes(event.effectiveDirective);
  const ours = uri === "wasm-eval" || own || peer;
  const said = `${event.effectiveDirective} blocked ${origin === null ? `'${uri}'` : uri}`;
  if (!ours || blocked.includes(said) || blocked.length >= 8) return;
  blocked.push(said);
  console.error(`pagecontext: the page's Content-Security-Policy ${said}: allow it as docs/integration.md ("Five minutes", step 1) lists`);
  const data = document.documentElement.dataset;
  sayState(data.pcState, data.pcError, data.pcChildState || null);
});
let stateRole = null;
// Whether this mount's frame has been `ready` (or further) since it mounted.
let started = false;
// How much of the runtime's files the worker's boot has read, in percent rounded down to
// tens (its `progress` messages, on a slow first visit), while the frame is still
// starting; null otherwise.
let bootProgress = null;

// A boot timeout: the frame is still starting (SLOW_START).
const slowStart = (state, error) => state === "failed" && typeof error === "string" && error.startsWith("boot-timeout:");

function sayState(state, error, child = null) {
  const table = stateRole === "assistant" && Object.hasOwn(ASSISTANT_WORDS, state) ? ASSISTANT_WORDS : STATE_WORDS;
  let words = Object.hasOwn(table, state) ? table[state] : "";
  // A page's child is its assistant; a workbench's (an assistant's) is the page.
  const childSaid = stateRole !== "assistant" && Object.hasOwn(CHILD_WORDS, child);
  if ((state === "ready" || state === "connecting") && childSaid) words = CHILD_WORDS[child];
  const policyBlocked = blocked.length > 0 && (state === "failed" || child === "silent");
  const slow = slowStart(state, error);
  if (["ready", "connecting", "bound"].includes(state)) started = true;
  if ((state === "failed" && setupFailure(error)) || policyBlocked) words = SETUP_FAILED;
  else if (slow) words = SLOW_START;
  else if (state === "failed" && started) words = STOPPED;
  if (state === "booting" || slow) {
    if (bootProgress !== null) words += ` (${bootProgress}% downloaded)`;
  } else if (bootProgress !== null) {
    bootProgress = null;
    delete document.documentElement.dataset.pcBootProgress;
  }
  for (const element of document.querySelectorAll("[data-pc-state-text]")) {
    if (element.textContent !== words) element.textContent = words;
  }
}
document.addEventListener("pagecontext:state", (event) => sayState(event.detail?.state, event.detail?.error, event.detail?.child));

// The worker's `progress` (reportProgress in worker.mjs): published on <html
// data-pc-boot-progress> and in the state's words while the frame is starting.
function showProgress(worker) {
  worker.addEventListener("message", (event) => {
    const { kind, read, total } = event.data || {};
    if (kind !== "progress" || !(total > 0) || !(read >= 0)) return;
    const data = document.documentElement.dataset;
    if (data.pcState !== "booting" && !slowStart(data.pcState, data.pcError)) return;
    const percent = Math.min(99, Math.floor((100 * read) / total));
    data.pcBootProgress = String(percent);
    // In the words, by tens: a live region that changed each second would keep a screen
    // reader talking for the whole download.
    const tens = percent - (percent % 10);
    if (tens === bootProgress) return;
    bootProgress = tens;
    sayState(data.pcState, data.pcError);
  });
}

// What the user does on a page before its edge listens (MicroPython loads meanwhile):
// its clicks and selection events, kept in order, the last EARLY_MAX of them, and handed
// to the edge once it has begun (`replay`), so that a row selected then is not lost.
const EARLY_EVENTS = ["click", "pagecontext:select", "pagecontext:share", "pagecontext:clear"];
const EARLY_MAX = 64;

function holdEarlyEvents() {
  const events = [];
  const keep = (event) => {
    events.push(event);
    if (events.length > EARLY_MAX) events.shift();
  };
  // The integration's events in the capture phase, as the edge takes them: one
  // dispatched on an element without `bubbles` reaches the document only there.
  const capture = (name) => name !== "click";
  for (const name of EARLY_EVENTS) document.addEventListener(name, keep, capture(name));
  const stop = () => {
    for (const name of EARLY_EVENTS) document.removeEventListener(name, keep, capture(name));
  };
  return { events, stop };
}

/**
 * Mount pagecontext in this document with `config` (docs/integration.md); resolves to a
 * handle `{ edge, unmount() }` once the edge runs. One mount at a time per document.
 * A config the edge refuses fails loudly (<html data-pc-state="failed" data-pc-error>)
 * and the handle's `edge` is null.
 */
export async function mount(config) {
  if (config?.apps !== undefined) {
    console.warn("pagecontext: mount() does not run config.apps (only a config block does): a single-page app runs its own code (docs/integration.md)");
  }
  return mountConfig(config);
}

async function mountConfig(config) {
  if (config === null || typeof config !== "object" || Array.isArray(config)) {
    throw new TypeError("pagecontext: mount(config) needs the config object (docs/integration.md)");
  }
  if (mounted) throw new Error("pagecontext: already mounted; call unmount() first");
  config = { ...config };
  // "auto" (the default): a page framed by an assistant workbench is its child; on its
  // own it embeds its assistant panel.
  if (config.position === undefined || config.position === "auto") config.position = window.parent === window ? "embedder" : "child";
  // A mount after a refused one starts with no error.
  const data = document.documentElement.dataset;
  delete data.pcError;
  delete data.pcErrorField;
  data.pcState = "booting";
  stateRole = config.role;
  blockedPeer = typeof config.peerOrigin === "string" ? blockedOrigin(config.peerOrigin) : null;
  started = false;
  bootProgress = null;
  delete data.pcBootProgress;
  sayState("booting");
  // Only a position the edge may take: a wrong one is its config error to report.
  if (POSITIONS.includes(config.position)) data.pcPosition = config.position;
  else delete data.pcPosition;
  let workerError = null;
  let worker;
  try {
    worker = startWorker(config.role, config.position, (message) => {
      if (workerError === null) workerError = message;
    });
  } catch (error) {
    // Loudly, as a refused config: nothing stays mounted, the handle's edge is null.
    const reason = workerRefused(error);
    fail(reason);
    console.error(`pagecontext: ${reason}`);
    return Object.freeze({ edge: null, unmount() {} });
  }
  showProgress(worker);
  if (config.position === "child") givePeerPort(worker, askForRuntime(config));
  const early = config.role === "page" ? holdEarlyEvents() : { events: [], stop() {} };
  const handle = { edge: null, worker, pins: workerPins(worker), early, unmount: () => unmountHandle(handle) };
  mounted = handle;
  if (config.position === "embedder") handle.stopAnswering = answerRuntimeRequests(handle, config);
  try {
    await mountSteps(config, handle, () => workerError);
    // What the page gets: the edge and `unmount`, not the worker or the handle's state.
    return Object.freeze({ edge: handle.edge, unmount: handle.unmount });
  } finally {
    early.stop();
  }
}

// The rest of `mount`, once its handle is made: `workerError()` is the worker's error
// that came before the edge listened, if any.
async function mountSteps(config, handle, workerError) {
  const { worker } = handle;
  let edge;
  try {
    ({ edge } = await edgeRuntime());
  } catch (error) {
    // MicroPython or the edge's sources did not load: this mount fails loudly, and
    // the next one loads them again.
    if (mounted === handle) {
      mounted = null;
      worker.terminate();
      fail(`runtime: the edge's runtime did not load (${error && error.message})`);
    }
    throw error;
  }
  // The edge starts in three steps, each a task of its own: the config checked, the
  // edge made, then its listeners, its `init` to the worker and its handshake.
  // Unmounted between two steps, it stops there (unmount ends the worker; an edge made
  // but not begun holds nothing else, and publishes nothing more).
  if (mounted !== handle) {
    worker.terminate(); // unmounted while MicroPython loaded
    return handle;
  }
  const host = globalThis.pagecontextHost;
  const checked = edge.check(config, worker, host);
  if (checked === null) {
    // Refused, loudly: the worker is stopped, and nothing stays mounted.
    mounted = null;
    return handle;
  }
  await nextTask();
  if (mounted !== handle) return handle;
  const started = edge.Edge(checked, worker, host);
  await nextTask();
  if (mounted !== handle) return handle;
  handle.edge = started;
  handle.early.stop();
  started.begin();
  // From now on the edge listens to the worker's errors itself.
  if (workerError() !== null) started.worker_failed(workerError());
  if (handle.early.events.length) started.replay(handle.early.events);
  handle.early.events.length = 0;
  globalThis.pagecontext = started;
  performance.mark("pagecontext:edge-started");
  return handle;
}

function unmountHandle(handle) {
  if (mounted !== handle) return;
  mounted = null;
  handle.stopAnswering?.();
  const { edge } = handle;
  if (edge) edge.close(); // listeners, proxies; the worker says bye, then ends; says `closed`
  else handle.worker.terminate();
  handle.edge = null;
  handle.worker = null;
  globalThis.pagecontext = null;
  if (!edge) announce("closed"); // unmounted while loading: no edge to say it
}

/** Unmount whatever `mount` mounted in this document; nothing if nothing is mounted. */
export function unmount() {
  if (mounted) mounted.unmount();
}

// A page with a config block is mounted at once.
const block = document.getElementById("pc-config");
if (block) {
  // The edge checks every option; only what it cannot see is checked here: the block
  // must hold a JSON object.
  let config = null;
  try {
    config = JSON.parse(block.textContent);
    if (config === null || typeof config !== "object" || Array.isArray(config)) {
      throw new Error(`it holds ${config === null ? "null" : Array.isArray(config) ? "an array" : `a ${typeof config}`}`);
    }
  } catch (error) {
    const reason = `config: the <script type="application/json" id="pc-config"> block must hold a JSON object (${error.message})`;
    config = null;
    fail(reason);
    console.error(`pagecontext: ${reason}`);
  }
  if (config) await autoMount(config);
}

// Mount the config block's `config`, then run the page's own MicroPython apps.
async function autoMount(config) {
  await mountConfig(config);
  await nextTask();
  // The page's own MicroPython modules (config.apps), each with an async main().
  // They run even when the edge refused the config (the page works without its
  // assistant), so a name is used only if it is a plain module name: it becomes Python
  // source below.
  const { runtime, mp } = await edgeRuntime();
  const moduleName = /^[A-Za-z_][A-Za-z0-9_]*$/;
  for (const app of (Array.isArray(config.apps) ? config.apps : []).filter((name) => moduleName.test(name))) {
    const code = new Uint8Array(await (await buildFile(here(`${runtime.apps.base}${app}.mpy`), runtime.apps.integrity?.[app])).arrayBuffer());
    mp.FS.writeFile(`/lib/${app}.mpy`, code);
    await mp.runPythonAsync(`import ${app}\nawait ${app}.main()`);
  }
}
