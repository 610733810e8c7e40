// Runs Python files under the MicroPython the browser edge uses, with the edge's modules
// on /lib exactly as the boot script lays them out. Usage: node run.mjs ROOT SCRIPT.py
import { readFileSync } from "node:fs";
import { join } from "node:path";

const [root, script] = process.argv.slice(2);
const { loadMicroPython } = await import(
  join(root, "node_modules/@micropython/micropython-webassembly-pyscript/micropython.mjs")
);
const mp = await loadMicroPython({ stdout: (line) => console.log(line), stderr: (line) => console.error(line) });
const files = {
  "pagecontext/__init__.py": "",
  "pagecontext/browser/__init__.py": "",
  "pagecontext/windowrules.py": readFileSync(join(root, "pysrc/pagecontext/windowrules.py"), "utf8"),
  "pagecontext/integration.py": readFileSync(join(root, "pysrc/pagecontext/integration.py"), "utf8"),
  "pagecontext/browser/edge.py": readFileSync(join(root, "pysrc/pagecontext/browser/edge.py"), "utf8"),
};
for (const [file, text] of Object.entries(files)) {
  const path = `/lib/${file}`;
  mp.FS.mkdirTree(path.slice(0, path.lastIndexOf("/")));
  mp.FS.writeFile(path, text);
}
mp.runPython(readFileSync(script, "utf8"));
