// Runs tests/runtimes/checks.py in Pyodide (Node.js), with the browser wheels the
// workers install and the project's sources, and prints its outcomes on a RESULT line.
// node run.mjs ROOT
import fs from "node:fs";
import path from "node:path";

const root = process.argv[2];
const { loadPyodide } = await import(path.join(root, "node_modules/pyodide/pyodide.mjs"));
const pyodide = await loadPyodide({ indexURL: path.join(root, "node_modules/pyodide") + "/" });
const wheels = path.join(root, "build/wheels");
const names = fs.readdirSync(wheels).filter((name) => name.endsWith(".whl"));
await pyodide.loadPackage(names.map((name) => path.join(wheels, name)), { messageCallback: () => {} });
pyodide.FS.mkdirTree("/src");
pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: path.join(root, "pysrc") }, "/src");
pyodide.FS.mkdirTree("/checks");
pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: path.join(root, "tests/runtimes") }, "/checks");
const found = pyodide.runPython(`
import sys
sys.path[:0] = ["/src", "/checks"]
import checks
(sys.version_info[:2], checks.outcomes())
`).toJs();
console.log("RESULT " + JSON.stringify({ version: found[0], outcomes: JSON.parse(found[1]) }));
