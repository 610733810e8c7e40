// A single-page app's router, reduced to two routes: "sales" mounts pagecontext with a
// table and the assistant's frame; "home" unmounts it and removes both. It publishes
// its route and how many times it mounted and unmounted on <html> (data-spa-*).
import { mount } from "/web/boot.mjs";

const root = document.documentElement;
const assistantOrigin = root.dataset.assistantOrigin;
const view = document.getElementById("spa-view");
const panel = document.getElementById("spa-panel");
const ROWS = [
  { ref: "sales-2026-03-north", month: "2026-03", region: "North", unitsSold: 4231 },
  { ref: "sales-2026-03-south", month: "2026-03", region: "South", unitsSold: 895 },
  { ref: "sales-2026-03-west", month: "2026-03", region: "West", unitsSold: 1432 },
];
const counts = { mounts: 0, unmounts: 0 };
let embed = null; // the mount in progress or done: a promise of its handle

function cell(text) {
  return Object.assign(document.createElement("td"), { textContent: text });
}

// The table is in the document before mount(), so the edge finds it when it starts.
function salesView() {
  const table = document.createElement("table");
  const body = table.createTBody();
  Object.assign(body.dataset, {
    pcComponent: "spa-sales",
    pcPage: "spa",
    pcShareable: "month region unitsSold:units",
    pcFilters: "{}",
    pcGeneration: "1",
  });
  for (const row of ROWS) {
    const tr = body.insertRow();
    tr.dataset.pcResourceRef = row.ref;
    tr.tabIndex = -1; // `locate` moves the focus to the row (docs/integration.md)
    tr.dataset.pcValues = JSON.stringify({ month: row.month, region: row.region, unitsSold: row.unitsSold });
    tr.append(cell(row.month), cell(row.region), cell(String(row.unitsSold)));
  }
  const ask = Object.assign(document.createElement("button"), { type: "button", textContent: "Ask AI" });
  ask.dataset.pcAsk = "";
  return [ask, table];
}

function publish(route) {
  root.dataset.spaRoute = route;
  root.dataset.spaMounts = String(counts.mounts);
  root.dataset.spaUnmounts = String(counts.unmounts);
}

async function showSales() {
  if (embed) return;
  view.replaceChildren(...salesView());
  const frame = document.createElement("iframe");
  frame.title = "AI assistant";
  frame.dataset.pcChild = "";
  panel.replaceChildren(frame);
  embed = mount({ role: "page", peerOrigin: assistantOrigin, childUrl: `${assistantOrigin}/assistant.html` });
  try {
    await embed;
  } catch (error) {
    // The embed's runtime did not load: pagecontext has said so (data-pc-state="failed"),
    // the page works without it, and the next visit to the route mounts it again.
    embed = null;
    console.error(error);
    return;
  }
  counts.mounts += 1;
  publish("sales");
}

async function showHome() {
  if (!embed) return;
  const handle = await embed;
  embed = null;
  handle.unmount();
  view.replaceChildren(Object.assign(document.createElement("p"), { textContent: "Home: nothing to ask about here." }));
  panel.replaceChildren();
  counts.unmounts += 1;
  publish("home");
}

document.querySelector("nav").addEventListener("click", (event) => {
  const route = event.target.closest("[data-route]")?.dataset.route;
  if (route === "sales") showSales();
  else if (route === "home") showHome();
});
publish("home");
