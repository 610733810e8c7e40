// Boot script for a pagecontext frame: starts the core's Worker first (so Pyodide loads
// while the page renders), then MicroPython on the main thread with the edge's Python
// sources. The browser forces this file to be JavaScript; the edge itself is Python.
// The config object (docs/integration.md). The edge checks every option; only what it
// cannot see is checked here: the block must exist and hold a JSON object.
let config;
try {
  config = JSON.parse(document.getElementById("pc-config").textContent);
  if (config === null || typeof config !== "object" || Array.isArray(config)) throw new Error("not an object");
} catch (error) {
  const reason = `config: the <script type="application/json" id="pc-config"> block must hold a JSON object (${error.message})`;
  Object.assign(document.documentElement.dataset, { pcState: "failed", pcError: reason });
  document.dispatchEvent(new CustomEvent("pagecontext:state", { detail: { state: "failed", error: reason } }));
  throw new Error(`pagecontext: ${reason}`);
}
// "auto" (the default): a page framed by an assistant workbench is its child; on its
// own it embeds its assistant panel.
if (config.position === undefined || config.position === "auto") config.position = window.parent === window ? "embedder" : "child";
document.documentElement.dataset.pcState = "booting";
document.documentElement.dataset.pcPosition = config.position;
const workerURL = new URL("/web/worker.mjs", import.meta.url).href;
const workerOptions = { type: "module", name: `pagecontext-${config.role}` };
// A sandboxed frame has an opaque origin, and a worker script must be same-origin with
// its document: such a frame starts the worker from a data: URL that imports the real
// one (Chromium refuses module workers from blob: URLs there).
const worker = self.origin === "null"
  ? new Worker(`data:text/javascript,import ${encodeURIComponent(JSON.stringify(workerURL))};`, workerOptions)
  : new Worker(workerURL, workerOptions);
worker.addEventListener("error", (event) => {
  document.documentElement.dataset.pcState = "failed";
  console.error("pagecontext worker failed to start", event.message || "");
});

const here = (path) => new URL(path, import.meta.url).href;
// Each boot step runs in its own task, so no step adds to another's main-thread time.
const nextTask = () => new Promise((resolve) => setTimeout(resolve, 0));
const runtime = await (await fetch(here("/py/runtime.json"))).json();
const [{ loadMicroPython }, sources] = await Promise.all([
  import(here(runtime.micropython.module)),
  Promise.all(
    runtime.edge.files.map(async (file) => [file, new Uint8Array(await (await fetch(here(runtime.edge.base + file))).arrayBuffer())]),
  ),
]);
const mp = await loadMicroPython({ stdout: (line) => console.log(line), stderr: (line) => console.error(line) });
await nextTask();
for (const [file, code] of sources) {
  const path = `/lib/${file}`;
  mp.FS.mkdirTree(path.slice(0, path.lastIndexOf("/")));
  mp.FS.writeFile(path, code);
}
// MicroPython cannot catch a JavaScript exception, so the few calls that may throw on
// hostile input or a locked-down browser are wrapped here and never throw. `post` is
// also the one place the edge posts to another window (tests spy on it there).
globalThis.pagecontextHost = {
  json(value) { try { const text = JSON.stringify(value); return typeof text === "string" ? text : null; } catch { return null; } },
  load(key) { try { return window.localStorage.getItem(key); } catch { return null; } },
  save(key, value) { try { window.localStorage.setItem(key, value); return true; } catch { return false; } },
  post(target, message, targetOrigin, transfer) {
    try { target.postMessage(message, targetOrigin, transfer || []); return true; } catch { return false; }
  },
};
performance.mark("pagecontext:micropython-ready");
await nextTask();
const edge = mp.pyimport("pagecontext.browser.edge");
await nextTask();
globalThis.pagecontext = edge.start(config, worker, globalThis.pagecontextHost);
performance.mark("pagecontext:edge-started");
await nextTask();
// The page's own MicroPython modules (config.apps), each with an async main().
// They run even when the edge refused the config (the page works without its assistant),
// so a name is used only if it is a plain module name: it becomes Python source below.
const moduleName = /^[A-Za-z_][A-Za-z0-9_]*$/;
for (const app of (Array.isArray(config.apps) ? config.apps : []).filter((name) => moduleName.test(name))) {
  const code = new Uint8Array(await (await fetch(here(`${runtime.apps.base}${app}.mpy`))).arrayBuffer());
  mp.FS.writeFile(`/lib/${app}.mpy`, code);
  await mp.runPythonAsync(`import ${app}\nawait ${app}.main()`);
}
