// Module worker for the pagecontext core: boots Pyodide from this server's own files and
// hands every message to Python. The browser forces this file to be JavaScript; all
// protocol logic lives in pagecontext.browser.worker.
const early = [];
// Messages that arrive while Python boots are kept, in order, not lost.
self.onmessage = (event) => early.push(event);

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
  worker.start(self, early);
} catch (error) {
  self.postMessage({ kind: "failed", error: String((error && error.stack) || error) });
}
