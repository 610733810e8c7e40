// The boot snapshot of the core's Pyodide worker: the helpers that both the worker
// (restoring it) and `web/make-snapshot.mjs` (making it, in Node.js at build time) use.
//
// The snapshot bundle is a zip, its members stored (the server sends it brotli-encoded,
// so the browser's network stack decodes it, not this worker), built by
// pagecontext.server.site, of:
//   meta.json          how the snapshot was made (meta.version, the dynamic libraries,
//                      meta.lazyFiles: the other installed files, and where they are)
//   site-packages.tar  the installed dynamic libraries (the wheels' .so files)
//   memory.pages       Pyodide's memory snapshot, with the core and pydantic imported,
//                      its static data XORed with what instantiation writes there (see
//                      xorBase), without its all-zero pages (meta.pages says where the
//                      rest goes)
//
// The other installed files (the wheels' Python sources and metadata) are imported
// already in the snapshot; they are a tar of their own (meta.lazyFiles.url), which the
// restored worker downloads only if Python reads one of them (lazyFiles, below).
//
// Pyodide's own memory snapshot covers the wasm memory only. A dynamic library (the
// pydantic-core extension) also lives in the function table and in JavaScript, so it is
// loaded before the runtime starts, the way Emscripten loads a program's own DT_NEEDED
// libraries: in a preRun, at the start of the heap and the table. That puts it at the
// same memory and table addresses when the snapshot is made and when it is restored, so
// the restored memory (the library's data included) matches its code.

export const BUNDLE_VERSION = 3;

const decoder = new TextDecoder();

// The memory snapshot is stored without its all-zero pages: `runs` ([[start, length],
// …], byte ranges of `target`, in order) say where the stored bytes go. Returns a target
// for streamZip that scatters them there (the rest of `target` stays zero).
export function scatter(target, runs) {
  let run = 0;
  let stored = 0; // where the current run starts in the stored bytes
  const length = runs.reduce((sum, [, size]) => sum + size, 0);
  return {
    length,
    target,
    put(chunk, offset) {
      let at = 0;
      while (at < chunk.length) {
        while (run < runs.length && offset + at >= stored + runs[run][1]) stored += runs[run++][1];
        if (run >= runs.length) throw new Error("more snapshot bytes than its pages");
        const [start, size] = runs[run];
        const from = offset + at - stored;
        const take = Math.min(chunk.length - at, size - from);
        target.set(chunk.subarray(at, at + take), start + from);
        at += take;
      }
    },
  };
}

// Where a member's bytes go, in order: a Uint8Array, or a scatter().
function memberSink(target, name) {
  let offset = 0;
  return {
    write(chunk) {
      if (offset + chunk.length > target.length) throw new Error(`zip member ${name} is larger than its size`);
      if (target.put) target.put(chunk, offset);
      else target.set(chunk, offset);
      offset += chunk.length;
    },
    close() {
      if (offset !== target.length) throw new Error(`zip member ${name}: ${offset} of ${target.length} bytes`);
      return target.target || target;
    },
  };
}

function deferred() {
  const d = {};
  d.promise = new Promise((resolve, reject) => Object.assign(d, { resolve, reject }));
  d.promise.catch(() => {});
  return d;
}

// Read a zip of stored members while it downloads (in order, each with its sizes in its
// local header, as Python's zipfile writes them), copying each member's bytes where they
// go as they arrive. `allocate(name, size)` may return that place (default: a new
// Uint8Array). Returns {member(name): Promise<Uint8Array>, done: Promise}.
export function streamZip(stream, allocate = () => undefined) {
  const members = new Map();
  const member = (name) => {
    if (!members.has(name)) members.set(name, deferred());
    return members.get(name);
  };
  const seen = new Set();
  const reader = stream.getReader();
  let pending = new Uint8Array(0);
  const more = async () => {
    const { done, value } = await reader.read();
    if (done) return false;
    if (pending.length === 0) pending = value;
    else {
      const joined = new Uint8Array(pending.length + value.length);
      joined.set(pending);
      joined.set(value, pending.length);
      pending = joined;
    }
    return true;
  };
  const need = async (n) => {
    while (pending.length < n) if (!(await more())) throw new Error("the zip ended early");
  };
  const done = (async () => {
    for (;;) {
      await need(4);
      const view = new DataView(pending.buffer, pending.byteOffset, pending.byteLength);
      if (view.getUint32(0, true) !== 0x04034b50) break; // the central directory
      await need(30);
      const head = new DataView(pending.buffer, pending.byteOffset, 30);
      const flags = head.getUint16(6, true);
      const method = head.getUint16(8, true);
      const packed = head.getUint32(18, true);
      const size = head.getUint32(22, true);
      const nameLength = head.getUint16(26, true);
      const skip = 30 + nameLength + head.getUint16(28, true);
      await need(skip);
      const name = decoder.decode(pending.subarray(30, 30 + nameLength));
      if (flags & 8) throw new Error(`zip member ${name} has no sizes in its header`);
      if (method !== 0 || packed !== size) throw new Error(`zip member ${name} is compressed (method ${method})`);
      pending = pending.subarray(skip);
      const target = (await allocate(name, size)) || new Uint8Array(size);
      if (target.length !== size) throw new Error(`zip member ${name}: ${size} bytes, expected ${target.length}`);
      const sink = memberSink(target, name);
      for (let left = size; left > 0; ) {
        if (pending.length === 0 && !(await more())) throw new Error("the zip ended early");
        const take = Math.min(left, pending.length);
        sink.write(pending.subarray(0, take));
        pending = pending.subarray(take);
        left -= take;
      }
      seen.add(name);
      member(name).resolve(sink.close());
    }
    while (await more());
    for (const [name, d] of members) if (!seen.has(name)) d.reject(new Error(`the zip has no ${name}`));
  })();
  done.catch((error) => {
    for (const d of members.values()) d.reject(error);
  });
  return { member: (name) => member(name).promise, done };
}

// The regular files of a ustar archive: Map path -> Uint8Array (views into `bytes`).
export function readTar(bytes) {
  const files = new Map();
  const text = (start, length) => {
    const field = bytes.subarray(start, start + length);
    const nul = field.indexOf(0);
    return decoder.decode(nul < 0 ? field : field.subarray(0, nul));
  };
  let at = 0;
  while (at + 512 <= bytes.length && bytes[at] !== 0) {
    const size = parseInt(text(at + 124, 12).trim() || "0", 8);
    const type = String.fromCharCode(bytes[at + 156] || 48);
    const prefix = text(at + 345, 155);
    const name = prefix ? `${prefix}/${text(at, 100)}` : text(at, 100);
    if (type === "0") files.set(name, bytes.subarray(at + 512, at + 512 + size));
    else if (type !== "5") throw new Error(`tar entry ${name}: unsupported type ${type}`);
    at += 512 + Math.ceil(size / 512) * 512;
  }
  return files;
}

// Call `make(full path, value)` for each [path, value] of `entries` (paths relative to
// `root`), once its folder exists.
function eachFile(FS, root, entries, make) {
  const made = new Set();
  for (const [path, value] of entries) {
    const full = `${root}/${path}`;
    const dir = full.slice(0, full.lastIndexOf("/"));
    if (!made.has(dir)) {
      FS.mkdirTree(dir);
      made.add(dir);
    }
    make(full, value, path);
  }
}

// Write `files` (path -> bytes, relative to `root`) into Pyodide's file system, which
// keeps the given arrays (views into the tar) rather than copies.
export function writeFiles(FS, root, files) {
  eachFile(FS, root, files, (full, data) => FS.writeFile(full, data, { canOwn: true }));
}

// Make each of `listing` ([[path, size], …], relative to `root`) a lazyFile (below) whose
// bytes come from one tar, which `loadTar()` (synchronous) returns as readTar's map: it
// is loaded once, at the first read of any of them.
export function lazyFiles(FS, root, listing, loadTar) {
  let tar = null;
  eachFile(FS, root, listing, (full, size, path) =>
    lazyFile(FS, full, size, () => {
      tar ??= loadTar();
      const data = tar.get(path);
      if (!data) throw new Error(`${path} is not in the tar`);
      return data;
    }),
  );
}

// Most of the runtime's static data (3.2 MB of the wasm's data segments) is still, in the
// snapshot, what the wasm's instantiation wrote: the bundle need not carry it twice. So
// the snapshot stores the pages that instantiation leaves non-zero (meta.base.runs)
// XORed with what it left there, and a restore XORs them back with its own copy, taken
// the moment its instantiation is done (wrapInstantiate), after checking that the two
// are the same (meta.base.checksum). Pages the XOR makes zero are not stored at all.
// (Later, before the preRun, the runtime writes a few words of its own there, which
// differ between browsers and Node.js; the restored memory replaces them anyway.)

// FNV-1a over the 32-bit words of `bytes` (a multiple of 4 long).
export function checksum(bytes) {
  const words = new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >>> 2);
  let hash = 0x811c9dc5;
  for (let i = 0; i < words.length; i += 1) hash = Math.imul(hash ^ words[i], 0x01000193) >>> 0;
  return hash;
}

// The non-zero pages of `bytes` from `start` to `end` (the last one may be shorter), as
// runs of byte ranges, added to `runs` (a run that ends where one begins is extended).
export function nonZeroRuns(bytes, start, end, page = 4096, runs = []) {
  for (let at = start; at < end; at += page) {
    const next = Math.min(at + page, end);
    let zero = true;
    for (let i = at; i < next && zero; i += 1) zero = bytes[i] === 0;
    if (zero) continue;
    const last = runs[runs.length - 1];
    if (last && last[0] + last[1] === at) last[1] += next - at;
    else runs.push([at, next - at]);
  }
  return runs;
}

// The bytes of `runs` of `memory`, one run after the other.
export function copyRuns(memory, runs) {
  const copy = new Uint8Array(runs.reduce((sum, [, length]) => sum + length, 0));
  let at = 0;
  for (const [start, length] of runs) {
    copy.set(memory.subarray(start, start + length), at);
    at += length;
  }
  return copy;
}

// Make Emscripten's `settings.instantiateWasm` call `seen(memory)` (the wasm memory's
// bytes) once the instantiation is done and before anything runs; `seen` may return a
// promise, which the runtime's start then waits for (and, if it rejects, never makes).
export function wrapInstantiate(settings, seen) {
  const instantiate = settings.instantiateWasm;
  settings.instantiateWasm = (imports, receive) =>
    instantiate(imports, (instance, module) => {
      const memory = instance.exports.memory ?? imports.env.memory;
      // A failure is `seen`'s to report; the runtime then never starts.
      Promise.resolve()
        .then(() => seen(new Uint8Array(memory.buffer)))
        .then(() => receive(instance, module), () => {});
    });
}

// XOR `base.runs` of the memory image `image` (the memory starts at byte `base.at`) with
// `key` (copyRuns of the instantiated memory): the build makes the stored pages so, and
// a restore turns them back. Throws if `key` is not what the snapshot was made against.
export function xorBase(image, key, base) {
  const found = checksum(key);
  if (found !== base.checksum) {
    throw new Error(`the runtime's memory after instantiation is not the snapshot's (checksum ${found}, expected ${base.checksum})`);
  }
  const keyWords = new Uint32Array(key.buffer, key.byteOffset, key.byteLength >>> 2);
  const stored = new Uint32Array(image.buffer, image.byteOffset, image.byteLength >>> 2);
  let k = 0;
  for (const [start, length] of base.runs) {
    for (let i = (base.at + start) >>> 2, end = (base.at + start + length) >>> 2; i < end; i += 1) {
      stored[i] ^= keyWords[k];
      k += 1;
    }
  }
}

// The Python a restore runs once the files are in place: the finders of folders read
// them again (the zip's finder keeps the directory it read when the snapshot was made, so
// an import does not read the zip, which is a lazyFile), and a call into pydantic-core
// (its code, data and function table) checks the library.
export const AFTER_RESTORE = `
import sys
from importlib.machinery import FileFinder
for finder in list(sys.path_importer_cache.values()):
    if isinstance(finder, FileFinder):
        finder.invalidate_caches()
if "pydantic_core" in sys.modules:
    sys.modules["pydantic_core"].SchemaValidator({"type": "int"}).validate_python("1")
`;

// Emscripten's "I/O error", which Python sees as OSError (EIO).
const EIO = 29;

// Make `path` a read-only file of `size` bytes whose contents come from `load()` (a
// synchronous function returning them) at the first read, not before. After a restore,
// the standard library zip is one: Python has imported what the core needs, and keeps
// the zip's directory in memory, so the zip's bytes are read only to import a module
// that the snapshot has not (or to show a traceback's source lines). A failed or wrong
// load is an I/O error for that read; the next read tries again. `path` must not exist.
export function lazyFile(FS, path, size, load) {
  const slash = path.lastIndexOf("/");
  const node = FS.createLazyFile(path.slice(0, slash) || "/", path.slice(slash + 1), "", true, false);
  let bytes = null;
  node.contents = {
    length: size,
    // Emscripten reads a lazy file a byte at a time, from the object it found at the
    // start of the read: the first call loads, the rest index.
    get(index) {
      if (bytes === null) {
        let loaded;
        try {
          loaded = load();
        } catch (error) {
          console.warn(`pagecontext: could not load ${path}:`, error);
          throw new FS.ErrnoError(EIO);
        }
        if (loaded.length !== size) {
          console.warn(`pagecontext: ${path} has ${loaded.length} bytes, not ${size}`);
          throw new FS.ErrnoError(EIO);
        }
        bytes = loaded;
        // Later reads copy from the array itself.
        node.contents = bytes;
      }
      return bytes[index];
    },
  };
  return node;
}

// The heap's break: where the next memory malloc takes from the system would start.
export function heapBreak(Module) {
  return Module.HEAPU32[Module._emscripten_get_sbrk_ptr() >>> 2];
}

// Where the next library will go: the table's length and the heap's break.
export function nextPlacement(Module) {
  return { tableBase: Module.wasmTable.length, memoryBase: heapBreak(Module) };
}

// Headroom before the first library: the browser and Node.js reach the preRun with a
// slightly different table (a function or two), so a snapshot puts its libraries at the
// next round addresses past some slack, and a restore pads up to the same ones.
const TABLE_SLACK = 256;
const MEMORY_SLACK = 1 << 16;
const roundUp = (value, step) => Math.ceil(value / step) * step;

// Load dynamic libraries in a preRun (before the runtime starts). `libs`: [{path,
// module (a WebAssembly.Module), handles?, global?, tableBase?, memoryBase?}]. A lib
// that names where the snapshot placed it goes there again (or this throws); one that
// does not goes to the next round addresses. Returns where each one went.
export function preloadDynlibs(Module, libs) {
  const placed = [];
  for (const lib of libs) {
    const now = nextPlacement(Module);
    const where = {
      tableBase: lib.tableBase ?? roundUp(now.tableBase + TABLE_SLACK, 1024),
      memoryBase: lib.memoryBase ?? roundUp(now.memoryBase + MEMORY_SLACK, MEMORY_SLACK),
    };
    for (const key of ["tableBase", "memoryBase"]) {
      if (where[key] < now[key]) throw new Error(`${lib.path}: ${key} is ${now[key]}, past the snapshot's ${where[key]}`);
    }
    if (where.tableBase > now.tableBase) Module.wasmTable.grow(where.tableBase - now.tableBase);
    // Before the runtime starts, getMemory() takes from the start of the heap.
    if (where.memoryBase > now.memoryBase) Module.getMemory(where.memoryBase - now.memoryBase);
    const got = nextPlacement(Module);
    if (got.tableBase !== where.tableBase || got.memoryBase !== where.memoryBase) {
      throw new Error(`${lib.path}: could not place it at ${JSON.stringify(where)}: ${JSON.stringify(got)}`);
    }
    const dso = Module.newDSO(lib.path, undefined, "loading");
    dso.refcount = Infinity;
    dso.global = false;
    dso.exports = Module.loadWebAssemblyModule(lib.module, { nodelete: true }, lib.path, {});
    // dlopen handles the snapshot's memory already holds (Python's import of the module).
    for (const handle of lib.handles || []) Module.LDSO.loadedLibsByHandle[handle] = dso;
    if (lib.global) {
      dso.global = true;
      Module.mergeLibSymbols(dso.exports, lib.path);
    }
    placed.push({ path: lib.path, ...where });
  }
  return placed;
}

// Open a snapshot bundle as it downloads (`stream`: the zip's bytes). Returns promises,
// each settled as soon as its part is in: {meta, memory (the snapshot's buffer,
// allocated from meta and filled later), files, libs, complete (everything)}.
export function openBundle(stream) {
  let meta = null;
  let memory = null;
  const zip = streamZip(stream, async (name) => {
    if (name !== "memory.pages") return undefined;
    const { pages } = await meta; // sets `memory`
    return scatter(memory, pages);
  });
  meta = zip.member("meta.json").then((data) => {
    const parsed = JSON.parse(decoder.decode(data));
    if (parsed.version !== BUNDLE_VERSION) throw new Error(`snapshot bundle version ${parsed.version}`);
    memory = new Uint8Array(parsed.memoryBytes);
    return parsed;
  });
  const files = zip.member("site-packages.tar").then(readTar);
  const libs = Promise.all([meta, files]).then(([m, f]) =>
    Promise.all(
      m.dynlibs.map(async (lib) => {
        const data = f.get(lib.path.slice(m.sitePackages.length + 1));
        if (!data) throw new Error(`snapshot bundle: no ${lib.path}`);
        return { ...lib, module: await WebAssembly.compile(data) };
      }),
    ),
  );
  const complete = Promise.all([meta, files, libs, zip.member("memory.pages"), zip.done]).then(
    ([m, f, l, mem]) => ({ meta: m, files: f, libs: l, memory: mem }),
  );
  const allocated = meta.then(() => memory);
  // Each failure reaches `complete`; the parts need no handler of their own.
  for (const part of [meta, allocated, files, libs]) part.catch(() => {});
  return { meta, memory: allocated, files, libs, complete };
}
