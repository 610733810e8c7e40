// Module worker for the pagecontext core: boots Pyodide from this origin's own files and
// hands every message to Python. The browser forces this file to be JavaScript; all
// protocol logic lives in pagecontext.browser.worker.
const early = [];
// Messages that arrive while Python boots are kept, in order, not lost.
self.onmessage = (event) => early.push(event);

try {
  const runtime = await (await fetch("/py/runtime.json")).json();
  const { loadPyodide } = await import(runtime.pyodide.indexURL + "pyodide.mjs");
  const pyodide = await loadPyodide({
    indexURL: runtime.pyodide.indexURL,
    lockFileURL: runtime.lockFileURL,
    packageBaseUrl: new URL("/wheels/", self.location.href).href,
    fullStdLib: false,
  });
  await pyodide.loadPackage(runtime.packages, { messageCallback: () => {} });
  const worker = pyodide.pyimport("pagecontext.browser.worker");
  worker.start(self, early);
} catch (error) {
  self.postMessage({ kind: "failed", error: String(error && error.stack || error) });
}
