// Boots Pyodide (the npm package), makes its standard library zip a lazyFile of
// web/snapshot.mjs and a package in site-packages lazyFiles from a tar, runs the
// restore step (AFTER_RESTORE) and imports through them, as a restored worker does;
// prints what happened as one JSON line.
//   node lazy_files.mjs <repo root> <tar> <[[path, size], …] of the tar, as JSON>
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [root, tarPath, listingJSON] = process.argv.slice(2);
const { AFTER_RESTORE, lazyFile, lazyFiles, readTar } = await import(
  pathToFileURL(path.join(root, "web", "snapshot.mjs")).href
);
const { loadPyodide } = await import(pathToFileURL(path.join(root, "node_modules", "pyodide", "pyodide.mjs")).href);
const pyodide = await loadPyodide();
const { FS } = pyodide;
const stdlib = pyodide.runPython("import sys; next(p for p in sys.path if p.endswith('.zip'))");
const bytes = FS.readFile(stdlib);
console.warn = () => {}; // the failed loads below warn, as they should

let loads = 0;
let serve = "fail";
FS.unlink(stdlib);
lazyFile(FS, stdlib, bytes.length, () => {
  loads += 1;
  if (serve === "fail") throw new Error("offline");
  if (serve === "short") return bytes.subarray(1);
  return bytes;
});
const result = { size: FS.stat(stdlib).size, expected: bytes.length };

// The package: nothing is read until Python imports it; then the tar, once. After the
// restore step, importing it does not read the standard library zip.
const sitePackages = pyodide.runPython("import site; site.getsitepackages()[0]");
const listing = JSON.parse(listingJSON);
let tarLoads = 0;
lazyFiles(FS, sitePackages, listing, () => {
  tarLoads += 1;
  return readTar(new Uint8Array(fs.readFileSync(tarPath)));
});
result.sizes = listing.map(([name]) => FS.stat(`${sitePackages}/${name}`).size);
result.tarBefore = tarLoads;
pyodide.runPython(AFTER_RESTORE);
result.value = pyodide.runPython("import lazy_pkg.sub\nlazy_pkg.VALUE + lazy_pkg.sub.read()");
result.tarAfter = tarLoads;
result.before = loads;

// The standard library: a module the process has not imported.
const attempt = (name) =>
  pyodide.runPython(`
import importlib
try:
    importlib.import_module(${JSON.stringify(name)})
    result = "imported"
except Exception as error:
    result = type(error).__name__
result`);
result.offline = attempt("colorsys");
result.afterOffline = loads;
serve = "short";
result.short = attempt("colorsys");
serve = "whole";
result.whole = attempt("colorsys");
result.afterWhole = loads;
result.another = attempt("fractions");
result.afterAnother = loads;
result.same = pyodide.runPython("import colorsys; colorsys.rgb_to_hsv(1.0, 0.0, 0.0)").toJs();
console.log("RESULT " + JSON.stringify(result));
