// Runs Python files under the MicroPython the browser edge uses, with the edge's modules
// on /lib exactly as the boot script lays them out: package __init__ files empty, the
// modules from pysrc. Usage: node run.mjs ROOT SCRIPT.py FILE... (the site's list).
import { readFileSync } from "node:fs";
import { join } from "node:path";

const [root, script, ...edgeFiles] = process.argv.slice(2);
const { loadMicroPython } = await import(
  join(root, "node_modules/@micropython/micropython-webassembly-pyscript/micropython.mjs")
);
const mp = await loadMicroPython({ stdout: (line) => console.log(line), stderr: (line) => console.error(line) });
const files = Object.fromEntries(
  edgeFiles.map((file) => [file, file.endsWith("/__init__.py") ? "" : readFileSync(join(root, "pysrc", file), "utf8")]),
);
for (const [file, text] of Object.entries(files)) {
  const path = `/lib/${file}`;
  mp.FS.mkdirTree(path.slice(0, path.lastIndexOf("/")));
  mp.FS.writeFile(path, text);
}
mp.runPython(readFileSync(script, "utf8"));
