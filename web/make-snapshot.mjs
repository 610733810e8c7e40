// Build step (Node.js; `pagecontext assemble` runs it, so `make` does): boots Pyodide
// from the site's own runtime files, installs the site-packages, imports the core's
// modules and writes the memory snapshot the worker restores (see ./snapshot.mjs).
//
//   node web/make-snapshot.mjs <pyodide dir> <lock file> <site-packages.tar> <out dir> <module>...
//   node web/make-snapshot.mjs --bytecode <pyodide dir> <lock file> <site-packages.tar> <out dir>
//
// Writes <out dir>/memory.pages and <out dir>/meta.json. Not loaded by any browser.
// With --bytecode it compiles the site-packages' modules instead, and writes their
// bytecode (`__pycache__/*.pyc`, unchecked hashes) under <out dir>, by path: the build
// adds it to the snapshot's site-packages, so that the imports load bytecode and leave
// no compiler's garbage in the memory (the browser gets the sources only, lazily).
import nodeCrypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

import {
  BUNDLE_VERSION,
  checksum,
  copyRuns,
  heapBreak,
  nonZeroRuns,
  preloadDynlibs,
  readTar,
  wrapInstantiate,
  writeFiles,
  xorBase,
} from "./snapshot.mjs";

const bytecode = process.argv[2] === "--bytecode";
const [indexDir, lockFile, tarPath, outDir, ...modules] = process.argv.slice(bytecode ? 3 : 2);
if (!outDir) {
  console.error("usage: make-snapshot.mjs [--bytecode] <pyodide dir> <lock file> <site-packages.tar> <out dir> <module>...");
  process.exit(2);
}
// time.timezone and friends are fixed at import; make them UTC, not this machine's zone.
process.env.TZ = "UTC";
const tarBytes = fs.readFileSync(tarPath);

// Equal inputs make equal bytes, so that a build of unchanged sources keeps the
// snapshot's name (a returning visitor keeps its copy) and anyone can rebuild a bundle
// and compare it. Python reads randomness and clocks as it starts and imports (its
// string-hash secret, `random`'s first state, pydantic-core's hash keys, file times),
// and the memory keeps what it read: while it is made, the randomness is a stream seeded
// by the inputs' digest, and the clocks stand still. None of it is a secret in the
// browser: the snapshot is a public file either way, the worker seeds `random` again as
// it starts, and `secrets` and `os.urandom` read the browser's randomness at each call.
{
  const seed = nodeCrypto.createHash("sha256");
  seed.update(tarBytes).update(fs.readFileSync(lockFile));
  seed.update(JSON.stringify([bytecode, modules]));
  const key = seed.digest();
  let counter = 0;
  let block = Buffer.alloc(0);
  let used = 0;
  const fill = (view) => {
    const bytes = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
    for (let i = 0; i < bytes.length; i += 1) {
      if (used === block.length) {
        block = nodeCrypto.createHash("sha256").update(key).update(String(counter++)).digest();
        used = 0;
      }
      bytes[i] = block[used++];
    }
    return view;
  };
  // Emscripten's randomness in Node.js (getentropy, /dev/urandom), and the Web's.
  nodeCrypto.randomFillSync = fill;
  globalThis.crypto.getRandomValues = fill;
  const time = Date.UTC(1980, 0, 1); // the zips' and tars' fixed time (pagecontext.server.site)
  Date.now = () => time;
  performance.now = () => 0;
}

const files = readTar(new Uint8Array(tarBytes));
const dynlibFiles = [...files.keys()].filter((name) => name.endsWith(".so")).sort();
const compiled = await Promise.all(dynlibFiles.map((name) => WebAssembly.compile(files.get(name))));
const index = path.resolve(indexDir);
const { loadPyodide } = await import(pathToFileURL(path.join(index, "pyodide.mjs")).href);
const { default: createModule } = await import(pathToFileURL(path.join(index, "pyodide.asm.mjs")).href);

let sitePackages;
let baseRuns;
let baseKey;
let placed = [];
const pyodide = await loadPyodide({
  indexURL: index + path.sep,
  lockFileURL: path.resolve(lockFile),
  _makeSnapshot: true,
  createPyodideModule(settings) {
    // The program's name, as in a browser: under Node.js, Emscripten takes this script's
    // path, which the snapshot would keep (sys.executable, the environment's `_`),
    // naming the build machine's checkout and making builds differ by where they ran.
    settings.thisProgram = "./this.program";
    // What instantiation wrote into the memory: the static data.
    wrapInstantiate(settings, (memory) => {
      baseRuns = nonZeroRuns(memory, 0, memory.length);
      baseKey = copyRuns(memory, baseRuns);
    });
    settings.preRun.push((Module) => {
      sitePackages = Module.API.sitePackages;
      const libs = dynlibFiles.map((name, i) => ({ path: `${sitePackages}/${name}`, module: compiled[i] }));
      placed = preloadDynlibs(Module, libs);
    });
    return createModule(settings);
  },
});

// After the boot, as the worker does after restoring (at boot, Pyodide would record
// these packages as loaded in a JavaScript object that a snapshot cannot hold).
writeFiles(pyodide.FS, sitePackages, files);
if (bytecode) {
  pyodide.runPython(`
import compileall
import py_compile
# A file that does not compile gets no bytecode; if it is imported, the import says why.
compileall.compile_dir(
    ${JSON.stringify(sitePackages)}, quiet=2, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH
)
`);
  let written = 0;
  const copy = (dir) => {
    for (const name of pyodide.FS.readdir(dir)) {
      if (name === "." || name === "..") continue;
      const full = `${dir}/${name}`;
      if (pyodide.FS.isDir(pyodide.FS.stat(full).mode)) copy(full);
      else if (name.endsWith(".pyc")) {
        const target = path.join(outDir, full.slice(sitePackages.length + 1));
        fs.mkdirSync(path.dirname(target), { recursive: true });
        fs.writeFileSync(target, pyodide.FS.readFile(full));
        written += 1;
      }
    }
  };
  copy(sitePackages);
  console.log(`bytecode: ${written} modules`);
  process.exit(0);
}
pyodide.runPython(`
import gc
import importlib
import importlib.util
importlib.invalidate_caches()
for name in ${JSON.stringify(modules)}:
    importlib.import_module(name)
# Closes what importlib.metadata keeps open (its zip of the stdlib): a file descriptor
# does not survive a snapshot.
importlib.invalidate_caches()
# That also dropped the zip's directory, which zipimport keeps in memory: a lookup reads
# it again, so that a restored worker imports without reading the zip (it loads the zip
# only for a module it has not imported; see lazyFile in web/snapshot.mjs).
importlib.util.find_spec("pagecontext_snapshot_lookup")
gc.collect()
`);

const open = pyodide.FS.streams
  .map((stream, fd) => (stream && fd > 2 ? `${fd}: ${stream.path}` : null))
  .filter(Boolean);
if (open.length) throw new Error(`files still open at snapshot time: ${open.join(", ")}`);

const { LDSO } = pyodide._module;
const dynlibs = placed.map((lib) => ({
  ...lib,
  global: Boolean(LDSO.loadedLibsByName[lib.path]?.global),
  handles: Object.entries(LDSO.loadedLibsByHandle)
    .filter(([handle, dso]) => Number(handle) !== 0 && dso.name === lib.path)
    .map(([handle]) => Number(handle)),
}));
const imported = pyodide.runPython("import sys; len(sys.modules)");
// zipimport keeps the standard library zip's directory (offsets included) in memory.
const stdlibPath = pyodide.runPython("import sys; next(p for p in sys.path if p.endswith('.zip'))");
const stdlib = { path: stdlibPath, bytes: pyodide.FS.stat(stdlibPath).size };
// Freed heap memory keeps what was last there (objects and buffers of the imports), which
// costs the snapshot bytes for nothing. So everything malloc hands out without growing
// the heap is taken, zeroed and given back. malloc takes from its free pieces before the
// heap's top, and grows the heap (which Emscripten's never shrinks again) only when
// neither has room. So the requests are never larger than what is left of the top
// (mallinfo's keepcost), largest first down to a page; then the free pieces are taken in
// rounds of the smallest request (12 bytes: one 16-byte chunk), each round no more
// requests than the free bytes outside the top could serve at 31 bytes each (so none
// comes from the top). Given back in address order, each piece merges into the one
// before, and the heap's bookkeeping is written once per run of pieces, not into each.
function zeroFreeMemory(Module) {
  const end = heapBreak(Module);
  const info = Module._malloc(64); // struct mallinfo: ten ints
  const stats = () => {
    Module._mallinfo(info);
    const words = Module.HEAPU32.subarray(info >>> 2, (info >>> 2) + 10);
    return { free: words[8], top: words[9] };
  };
  const taken = [];
  let zeroed = 0;
  const take = (size) => {
    const block = Module._malloc(size);
    if (!block) return false;
    Module.HEAPU8.fill(0, block, block + size);
    taken.push(block);
    zeroed += size;
    return true;
  };
  for (let size = 1 << 24; size >= 4096; size >>>= 1) {
    while (size + 64 <= stats().top && take(size));
  }
  // Each round takes at least half of what is left; the last few bytes are not worth it.
  for (let round = 0; round < 64; round += 1) {
    const { free, top } = stats();
    const rounds = Math.floor((free - top) / 32);
    if (rounds < 8) break;
    for (let i = 0; i < rounds && take(12); i += 1);
  }
  taken.sort((a, b) => a - b);
  for (const block of taken) Module._free(block);
  Module._free(info);
  const after = heapBreak(Module);
  if (after !== end) throw new Error(`zeroing free memory moved the heap's break from ${end} to ${after}`);
  return zeroed;
}
const zeroed = zeroFreeMemory(pyodide._module);
const memoryBreak = heapBreak(pyodide._module);
const whole = pyodide.makeMemorySnapshot();
// `whole` is `header` bytes of Pyodide's own state, then the wasm memory. How far the
// memory had grown depends on the peak of the imports above (it grows by a fifth at a
// time), and past the heap's break it is all zeros: the snapshot keeps the memory up to
// the break and HEADROOM more, so every restore starts with the same room to allocate.
const HEADROOM = 2 << 20;
const WASM_PAGE = 65536;
const header = new Uint32Array(whole.buffer, whole.byteOffset, 4)[1];
let used = whole.length;
while (used > header + memoryBreak && whole[used - 1] === 0) used -= 1;
const memoryEnd = Math.ceil((used - header + HEADROOM) / WASM_PAGE) * WASM_PAGE;
const snapshot = whole.subarray(0, Math.min(whole.length, header + memoryEnd));
// The static data's pages are stored XORed with what instantiation wrote there (see
// xorBase in snapshot.mjs): most of them become zero pages.
const PAGE = 4096;
const baseMeta = { at: header, runs: baseRuns, checksum: checksum(baseKey) };
xorBase(snapshot, baseKey, baseMeta);
// Stored without its all-zero pages (the header, then the memory's pages): over half of
// it, and the cheapest to leave out.
const pages = nonZeroRuns(snapshot, header, snapshot.length, PAGE, nonZeroRuns(snapshot, 0, header, header));
const stored = Buffer.concat(pages.map(([start, size]) => snapshot.subarray(start, start + size)));
const meta = {
  version: BUNDLE_VERSION,
  pyodide: pyodide.version,
  sitePackages,
  memoryBytes: snapshot.length,
  pages,
  stdlib,
  base: baseMeta,
  modules,
  importedModules: imported,
  dynlibs,
};
fs.mkdirSync(outDir, { recursive: true });
fs.writeFileSync(path.join(outDir, "memory.pages"), stored);
fs.writeFileSync(path.join(outDir, "meta.json"), JSON.stringify(meta));
console.log(`snapshot: ${snapshot.length} of ${whole.length} bytes (${stored.length} stored, ${zeroed} of free memory zeroed), ${imported} modules, dynlibs ${dynlibs.map((d) => d.path).join(" ")}`);
