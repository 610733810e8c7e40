// Makes a memory image as web/make-snapshot.mjs does (its static data XORed with the
// memory instantiation leaves) and turns it back as the worker does, with the helpers of
// web/snapshot.mjs; prints what happened as one JSON line.
//   node xor_base.mjs <repo root>
import path from "node:path";
import { pathToFileURL } from "node:url";

const [root] = process.argv.slice(2);
const { checksum, copyRuns, nonZeroRuns, xorBase } = await import(pathToFileURL(path.join(root, "web", "snapshot.mjs")).href);

const PAGE = 4096;
const AT = 128; // the snapshot's header before the memory
// Instantiation's memory: data on pages 1, 2 and 5 of 8.
const instantiated = new Uint8Array(8 * PAGE);
for (const page of [1, 2, 5]) for (let i = 0; i < PAGE; i += 1) instantiated[page * PAGE + i] = (i * 7 + page) & 255;
// The memory when the snapshot is taken: page 2 changed in one word, page 6 written.
const memory = instantiated.slice();
memory[2 * PAGE + 40] ^= 0xff;
memory.fill(9, 6 * PAGE, 7 * PAGE);
const image = new Uint8Array(AT + memory.length);
image.fill(1, 0, AT);
image.set(memory, AT);

const runs = nonZeroRuns(instantiated, 0, instantiated.length);
const key = copyRuns(instantiated, runs);
const base = { at: AT, runs, checksum: checksum(key) };
xorBase(image, key, base);
const zeroPages = [];
for (let page = 0; page < 8; page += 1) {
  if (!image.subarray(AT + page * PAGE, AT + (page + 1) * PAGE).some((byte) => byte !== 0)) zeroPages.push(page);
}
const stored = image.slice();
// A restore with the same instantiated memory gets the memory back.
xorBase(image, copyRuns(instantiated, runs), base);
const restored = image.subarray(AT).every((byte, i) => byte === memory[i]) && image.subarray(0, AT).every((b) => b === 1);
// One with a different instantiated memory is refused, and leaves the image alone.
const other = instantiated.slice();
other[5 * PAGE + 3] ^= 1;
const before = stored.slice();
let refused = "";
try {
  xorBase(stored, copyRuns(other, runs), base);
} catch (error) {
  refused = String(error.message);
}
const untouched = stored.every((byte, i) => byte === before[i]);
console.log("RESULT " + JSON.stringify({ runs, zeroPages, restored, refused, untouched }));
