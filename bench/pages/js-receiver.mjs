// The plain-JavaScript baseline of the receiver benchmark: a module worker that speaks to
// the bench page exactly like the core worker (/web/worker.mjs) as an assistant child,
// and makes the same checks on every context message as the Python path:
//
//   worker.mjs's plainDataProblem  -> models.parse_message (_inspect_json, _check_size,
//   _check_envelope, the pydantic model with extra="forbid" and strict types,
//   _check_limits) -> receiver.ContextReceiver.receive -> AssistantSession: the latest
//   `state` and `persist` messages posted to the worker scope on the next timer turn,
//   coalesced as the core worker does, and held while the page has not read the last
//   state (its `state-read`), as the core worker holds them for the edge.
//
// It is a benchmark baseline, not a second implementation: it only handles what the
// benchmark sends (init, port, bound, context, selection-cleared, diagnose).

const PROTOCOL = "pagecontext";
const VERSION = 1;
const LIMITS = {
  maxIdChars: 256,
  maxFilterKeys: 32,
  maxSnapshotFields: 64,
  maxStringChars: 1024,
  maxMessageBytes: 16384,
  maxDepth: 8,
};
const MAX_SAFE_INTEGER = Number.MAX_SAFE_INTEGER;
const MESSAGE_ID = /^[A-Za-z0-9_-]{1,64}$/;
const NONCE = /^[A-Za-z0-9_-]{22}$/;
const OBSERVED_AT = /^([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})\.[0-9]{3}Z$/;
const FORBIDDEN_KEYS = new Set(["__proto__", "constructor", "prototype"]);
const ENVELOPE_KEYS = ["protocol", "version", "type", "messageId", "pageInstanceId", "conversationId"];
const CONTEXT_KEYS = new Set([...ENVELOPE_KEYS, "selectionRevision", "selection"]);
const CLEARED_KEYS = new Set([...ENVELOPE_KEYS, "selectionRevision"]);
const SELECTION_REQUIRED = ["pageId", "componentId", "resourceRef", "observedAt", "filters"];
const SELECTION_KEYS = new Set([...SELECTION_REQUIRED, "snapshot"]);
const encoder = new TextEncoder();

// Copied from web/worker.mjs: the check the Python path runs before conversion, with
// its bounds on the values visited and the characters read (the worker's for the
// default size limit: 4 x 16,384 + 65,536). "" (plain and finite), "non-finite" (plain,
// with NaN or an infinity: read value by value, and refused), or why it is not plain data.
const MAX_VISITS = 100000;
const MAX_CHARS = 131072;
function plainDataProblem(value) {
  // The message object is at depth 1, as the core counts it.
  return plainDataWalk(value, 1, { left: MAX_VISITS, chars: MAX_CHARS });
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
  if (depth > 16) return "too-deep";
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

class Rejected extends Error {
  constructor(reason) {
    super(reason);
    this.reason = reason;
  }
}

const isPlainObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);
// models.Scalar: a number is at most MAX_SAFE_INTEGER either way (_SafeInt, _FiniteFloat).
const isScalar = (value) =>
  value === null || typeof value === "string" || typeof value === "boolean"
  || (typeof value === "number" && Math.abs(value) <= MAX_SAFE_INTEGER);
const isIdentifier = (value) => typeof value === "string" && value.length >= 1;

// models._inspect_json: keys, depth and value types in one walk; the longest string.
function inspectJson(raw) {
  let longest = 0;
  let budget = LIMITS.maxMessageBytes;
  const stack = [[raw, 1]];
  while (stack.length) {
    const [value, depth] = stack.pop();
    budget -= 1;
    if (budget < 0) throw new Rejected("too-large");
    if (typeof value === "string") {
      if (value.length > longest) longest = value.length;
    } else if (value === null || typeof value === "boolean") {
      continue;
    } else if (typeof value === "number") {
      if (!Number.isFinite(value)) throw new Rejected("not-json");
    } else if (Array.isArray(value)) {
      if (depth > LIMITS.maxDepth) throw new Rejected("too-deep");
      for (const item of value) stack.push([item, depth + 1]);
    } else if (typeof value === "object") {
      if (depth > LIMITS.maxDepth) throw new Rejected("too-deep");
      for (const key of Object.keys(value)) {
        if (FORBIDDEN_KEYS.has(key)) throw new Rejected("forbidden-key");
        if (key.length > longest) longest = key.length;
        stack.push([value[key], depth + 1]);
      }
    } else {
      throw new Rejected("not-json");
    }
  }
  return longest;
}

// models._check_size: compact JSON, UTF-8 bytes (encoded only when the text could be
// over the limit, as models.parse_context_json does).
function checkSize(text) {
  if (typeof text.isWellFormed === "function" && !text.isWellFormed()) throw new Rejected("not-json");
  if (text.length * 4 <= LIMITS.maxMessageBytes) return;
  if (encoder.encode(text).length > LIMITS.maxMessageBytes) throw new Rejected("too-large");
}

// models._strings_within_limits: from the text alone, no string can be a forbidden key
// or over the string limit (a string is never longer than the text, and without escapes
// a forbidden key appears in it as it is).
const FORBIDDEN_QUOTED = [...FORBIDDEN_KEYS].map((key) => `"${key}"`);
function stringsWithinLimits(text) {
  if (text.length > LIMITS.maxStringChars || text.includes("\\")) return false;
  for (const quoted of FORBIDDEN_QUOTED) if (text.includes(quoted)) return false;
  return true;
}

function checkEnvelope(raw) {
  if (raw.protocol !== PROTOCOL || !("version" in raw)) throw new Rejected("malformed");
  if (raw.version !== VERSION) throw new Rejected("unsupported-version");
}

function exactKeys(value, allowed, required) {
  for (const key of Object.keys(value)) if (!allowed.has(key)) throw new Rejected("malformed");
  for (const key of required) if (!(key in value)) throw new Rejected("malformed");
}

function checkRevision(value) {
  if (!Number.isSafeInteger(value) || value < 1 || value > MAX_SAFE_INTEGER) throw new Rejected("malformed");
}

// The pattern admits "2024-13-45T99:99:99.999Z"; a time the user saw must exist.
function checkObservedAt(value) {
  const match = typeof value === "string" ? OBSERVED_AT.exec(value) : null;
  if (!match) throw new Rejected("malformed");
  const [year, month, day, hour, minute, second] = match.slice(1).map(Number);
  // setUTCFullYear, not Date.UTC, which reads the years 0-99 as 1900-1999.
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, 0);
  if (year < 1 || date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1
      || date.getUTCDate() !== day || date.getUTCHours() !== hour
      || date.getUTCMinutes() !== minute || date.getUTCSeconds() !== second) {
    throw new Rejected("malformed");
  }
}

function checkSelection(selection) {
  if (!isPlainObject(selection)) throw new Rejected("malformed");
  exactKeys(selection, SELECTION_KEYS, SELECTION_REQUIRED);
  if (!isIdentifier(selection.pageId) || !isIdentifier(selection.componentId)
      || !isIdentifier(selection.resourceRef)) {
    throw new Rejected("malformed");
  }
  checkObservedAt(selection.observedAt);
  const { filters, snapshot } = selection;
  if (!isPlainObject(filters)) throw new Rejected("malformed");
  for (const value of Object.values(filters)) {
    if (Array.isArray(value)) {
      for (const item of value) if (!isScalar(item)) throw new Rejected("malformed");
    } else if (!isScalar(value)) {
      throw new Rejected("malformed");
    }
  }
  if (snapshot !== undefined && snapshot !== null) {
    if (!isPlainObject(snapshot)) throw new Rejected("malformed");
    for (const value of Object.values(snapshot)) {
      if (isScalar(value)) continue;
      if (!isPlainObject(value)) throw new Rejected("malformed");
      const keys = Object.keys(value);
      if (keys.length !== 2 || !("value" in value) || !("unit" in value)) throw new Rejected("malformed");
      if (!isScalar(value.value) || typeof value.unit !== "string") throw new Rejected("malformed");
    }
  }
}

// models.parse_message, for the two types the receiver takes; first its fast path
// (models.parse_context_json): a finite message whose text shows every string within
// the limits skips the walk of its values, and one the checks then refuse is checked
// again the long way, so that it is refused for the same reason.
function parseMessage(raw, finite) {
  if (!isPlainObject(raw)) throw new Rejected("malformed");
  const text = JSON.stringify(raw);
  if (finite && stringsWithinLimits(text)) {
    try {
      return checkMessage(raw, text, text.length);
    } catch (error) {
      if (!(error instanceof Rejected)) throw error;
    }
  }
  return checkMessage(raw, text, inspectJson(raw));
}

// The checks after the walk: `longest` is the longest string or key (or a bound on it).
function checkMessage(raw, text, longest) {
  checkSize(text);
  checkEnvelope(raw);
  if (raw.type === "context") exactKeys(raw, CONTEXT_KEYS, CONTEXT_KEYS);
  else if (raw.type === "selection-cleared") exactKeys(raw, CLEARED_KEYS, CLEARED_KEYS);
  else throw new Rejected(raw.type === undefined ? "malformed" : "unexpected-type");
  if (typeof raw.messageId !== "string" || !MESSAGE_ID.test(raw.messageId)) throw new Rejected("malformed");
  if (!isIdentifier(raw.pageInstanceId) || !isIdentifier(raw.conversationId)) throw new Rejected("malformed");
  checkRevision(raw.selectionRevision);
  const ids = [raw.pageInstanceId, raw.conversationId];
  if (raw.type === "context") {
    checkSelection(raw.selection);
    ids.push(raw.selection.pageId, raw.selection.componentId, raw.selection.resourceRef);
  }
  // models._check_limits
  if (longest > LIMITS.maxStringChars) throw new Rejected("over-limit");
  for (const id of ids) if (id.length > LIMITS.maxIdChars) throw new Rejected("over-limit");
  if (raw.type === "context") {
    if (Object.keys(raw.selection.filters).length > LIMITS.maxFilterKeys) throw new Rejected("over-limit");
    const snapshot = raw.selection.snapshot;
    if (snapshot && Object.keys(snapshot).length > LIMITS.maxSnapshotFields) throw new Rejected("over-limit");
  }
  return raw;
}

// receiver.ContextReceiver and the assistant session's state around it.
const session = {
  instanceId: null,
  conversationId: null,
  pageInstanceId: null,
  port: null,
  lastRevision: 0,
  pinned: null,
  refused: {},
  notPlainData: 0,
};

function refuse(reason) {
  session.refused[reason] = (session.refused[reason] || 0) + 1;
}

function state() {
  const pinned = session.pinned;
  const chip = pinned && {
    revision: pinned.selectionRevision,
    pageInstanceId: pinned.pageInstanceId,
    componentId: pinned.selection.componentId,
    resourceRef: pinned.selection.resourceRef,
    observedAt: pinned.selection.observedAt,
    filters: pinned.selection.filters,
    snapshot: pinned.selection.snapshot ?? null,
    restored: false,
  };
  return {
    kind: "state",
    bound: session.port !== null,
    chip,
    command: null,
    refused: { ...session.refused },
    ignoredReceipts: 0,
  };
}

function randomId() {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function onPort(event) {
  const data = event.data;
  const problem = plainDataProblem(data);
  if (problem && problem !== "non-finite") {
    session.notPlainData += 1;
    return;
  }
  let message;
  try {
    message = parseMessage(data, !problem);
  } catch (error) {
    if (!(error instanceof Rejected)) throw error;
    refuse(error.reason);
    post(state());
    return;
  }
  if (message.pageInstanceId !== session.pageInstanceId) refuse("page-instance");
  else if (message.conversationId !== session.conversationId) refuse("conversation-mismatch");
  else if (message.selectionRevision <= session.lastRevision) refuse("stale-revision");
  else {
    session.lastRevision = message.selectionRevision;
    session.pinned = message.type === "context" ? message : null;
    post(state());
    post({
      kind: "persist",
      value: { conversationId: session.conversationId, pinned: session.pinned },
    });
    return;
  }
  post(state());
}

// Only the latest state and persist matter; they go out together on the next timer turn,
// once the page has read the last state.
const pending = new Map();
let flushDue = false;
let stateUnread = false;
function post(message) {
  pending.set(message.kind, message);
  flushSoon();
}
function flushSoon() {
  if (flushDue || stateUnread) return;
  flushDue = true;
  setTimeout(() => {
    flushDue = false;
    if (stateUnread) return;
    for (const queued of pending.values()) send(queued);
    pending.clear();
  }, 0);
}
function send(message) {
  if (message.kind === "state") stateUnread = true;
  self.postMessage(message);
}

function connect(message, port) {
  const peer = message.peer || {};
  const keys = Object.keys(peer).sort().join(",");
  if (keys !== "pageInstanceId,protocol,role,type,version" || peer.protocol !== PROTOCOL
      || peer.version !== VERSION || peer.type !== "connect" || peer.role !== "page"
      || !isIdentifier(peer.pageInstanceId) || typeof message.nonce !== "string" || !NONCE.test(message.nonce)) {
    port.close();
    self.postMessage({ kind: "refused", reason: "malformed" });
    return;
  }
  session.pageInstanceId = peer.pageInstanceId;
  session.lastRevision = 0;
  session.pinned = null;
  session.port = port;
  port.onmessage = (event) => awaitBound(event, port);
  port.postMessage({
    protocol: PROTOCOL,
    version: VERSION,
    type: "connected",
    messageId: randomId(),
    pageInstanceId: session.pageInstanceId,
    conversationId: session.conversationId,
    role: "assistant",
    instanceId: session.instanceId,
    nonce: message.nonce,
  });
}

// The embedder's first message after `connected` must be its `bound`, naming this
// binding; only then is the port read for contexts (docs/protocol.md 8.12; the bench's
// embedder always sends it, so the core's leniency for older embedders is left out).
function awaitBound(event, port) {
  const data = event.data;
  const keys = data !== null && typeof data === "object" && !Array.isArray(data) ? Object.keys(data).sort().join(",") : "";
  const envelope = [...ENVELOPE_KEYS].sort().join(",");
  if (keys !== envelope || data.protocol !== PROTOCOL || data.version !== VERSION || data.type !== "bound"
      || typeof data.messageId !== "string" || !MESSAGE_ID.test(data.messageId)
      || data.pageInstanceId !== session.pageInstanceId || data.conversationId !== session.conversationId) {
    port.close();
    self.postMessage({ kind: "refused", reason: "not-bound" });
    return;
  }
  port.onmessage = onPort;
  self.postMessage({ kind: "bound", connection: 1 });
  post(state());
}

self.onmessage = (event) => {
  const message = event.data;
  switch (message.kind) {
    case "init":
      session.instanceId = message.instanceId;
      session.conversationId = message.conversationId;
      post(state());
      self.postMessage({ kind: "ready" });
      break;
    case "port":
      connect(message, event.ports[0]);
      break;
    case "state-read":
      stateUnread = false;
      if (pending.size) flushSoon();
      break;
    case "diagnose":
      self.postMessage({
        kind: "diagnostics",
        seq: message.seq,
        contexts: { ...session.refused },
        refused: Object.values(session.refused).reduce((a, b) => a + b, 0),
        notPlainData: session.notPlainData,
      });
      break;
    default:
      break;
  }
};
