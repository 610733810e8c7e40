// Module worker for the pagecontext core: boots Pyodide from this server's own files and
// hands every message to Python. The browser forces this file to be JavaScript; all
// protocol logic lives in pagecontext.browser.worker.
const early = [];
// Messages that arrive while Python boots are kept, in order, not lost.
self.onmessage = (event) => early.push(event);

// Python sees JS values only after Pyodide converted them (a BigInt becomes an int, and a
// proxy of an ArrayBuffer's prototype throws), so the one check that needs JavaScript's
// own types runs here: is a port message plain data, as structured clone of JSON makes?
// Returns "" (plain and finite: Python reads it as JSON text), "non-finite" (plain, but
// with NaN or an infinity, which JSON text would turn into null: Python reads it
// value by value, and the core refuses it with a receipt), or why it is not plain data.
function plainDataProblem(value, depth = 0) {
  if (value === null) return "";
  switch (typeof value) {
    case "string": case "boolean": return "";
    case "number": return Number.isFinite(value) ? "" : "non-finite";
    case "object": break;
    default: return "not-json"; // bigint, undefined
  }
  if (depth > 16) return "too-deep";
  let found = "";
  if (Array.isArray(value)) {
    for (const item of value) {
      const problem = plainDataProblem(item, depth + 1);
      if (problem && problem !== "non-finite") return problem;
      found ||= problem;
    }
    return found;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return "not-plain"; // Map, Date, ArrayBuffer, …
  for (const key of Object.keys(value)) {
    const problem = plainDataProblem(value[key], depth + 1);
    if (problem && problem !== "non-finite") return problem;
    found ||= problem;
  }
  return found;
}

// Resolve against this module, not the worker's location: a sandboxed frame starts the
// worker from a data: URL that imports this file.
const here = (path) => new URL(path, import.meta.url).href;

try {
  const runtime = await (await fetch(here("/py/runtime.json"))).json();
  const indexURL = here(runtime.pyodide.indexURL);
  const { loadPyodide } = await import(indexURL + "pyodide.mjs");
  const pyodide = await loadPyodide({
    indexURL,
    lockFileURL: here(runtime.lockFileURL),
    packageBaseUrl: here("/wheels/"),
    fullStdLib: false,
  });
  await pyodide.loadPackage(runtime.packages, { messageCallback: () => {} });
  const worker = pyodide.pyimport("pagecontext.browser.worker");
  worker.start(self, early, plainDataProblem);
} catch (error) {
  self.postMessage({ kind: "failed", error: String((error && error.stack) || error) });
}
