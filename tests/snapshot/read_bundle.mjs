// Reads a boot snapshot bundle with web/snapshot.mjs, as the worker does (streamed in
// small chunks, to cross every boundary), and prints what it found as one JSON line.
//   node read_bundle.mjs <repo root> <bundle.zip> <chunk size>
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [root, bundlePath, chunkSize] = process.argv.slice(2);
const { openBundle } = await import(pathToFileURL(path.join(root, "web", "snapshot.mjs")).href);
const bytes = fs.readFileSync(bundlePath);
const size = Number(chunkSize);
const stream = new ReadableStream({
  start(controller) {
    for (let i = 0; i < bytes.length; i += size) controller.enqueue(new Uint8Array(bytes.subarray(i, i + size)));
    controller.close();
  },
});
const sha = (data) => crypto.createHash("sha256").update(data).digest("hex");
let result;
try {
  const { meta, files, memory } = await openBundle(stream).complete;
  result = {
    meta,
    memory: sha(memory),
    memoryLength: memory.length,
    files: Object.fromEntries([...files].map(([name, data]) => [name, sha(data)])),
  };
} catch (error) {
  result = { error: String(error.message || error) };
}
console.log(`RESULT ${JSON.stringify(result)}`);
