// Runs listenPort, the part of web/worker.mjs that reads a bound port (from MAX_VISITS to
// the line before "Resolve against this module"), as the page's worker does for a page
// at the largest maxMessageBytes; a peer posts 20 contexts of a million characters in
// one burst. Prints the runs it delivered as one JSON line.
//   node listen_port.mjs <repo root>
import { readFileSync } from "node:fs";
import path from "node:path";

const [root] = process.argv.slice(2);
const source = readFileSync(path.join(root, "web", "worker.mjs"), "utf8");
const part = source.slice(source.indexOf("const MAX_VISITS"), source.indexOf("// Resolve against this module"));
const { listenPort, RUN_CHARS } = await import(
  "data:text/javascript," + encodeURIComponent(`${part}\nexport { listenPort, RUN_CHARS };`)
);

// integration.port_text_limit of LIMIT_MAX (1,048,576 bytes), and PLAIN_DATA_MAX_DEPTH.
const MAX_CHARS = 4 * 1048576 + 65536;
const MESSAGES = 20;
const { port1, port2 } = new MessageChannel();
const runs = [];
let messages = 0;
let listener;
await new Promise((resolve) => {
  listener = listenPort(port1, (batch) => {
    for (const item of batch) {
      if (typeof item !== "string") continue;
      runs.push(item.length);
      messages += item.split("\n").length;
    }
    if (messages >= MESSAGES) resolve();
  }, MAX_CHARS, 16);
  const text = "x".repeat(1_000_000);
  for (let i = 0; i < MESSAGES; i += 1) port2.postMessage({ text, i });
});
listener.close();
port1.close();
port2.close();
console.log("RESULT " + JSON.stringify({ runChars: RUN_CHARS, runs, messages }));
