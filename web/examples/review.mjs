// The review example's own code, written as a page that keeps its state in JavaScript
// would be: a list of one region's months from /api/sales and a detail pane with the
// month's figures and its change on the month before. It knows pagecontext only
// through the surface docs/integration.md documents:
// - data-pc-* attributes on the list and its items (a click on an item selects it);
// - `pagecontext:select` when the keyboard moves the page's own selection;
// - `pagecontext:rendered` after every render of the list;
// - `pagecontext:command`: the page draws the assistant's highlight itself (it marks the
//   month it points at; the user's own selection stays as it was), and answers with
//   `pagecontext:command-done`;
// - `pagecontext:conversation`: a new conversation in the assistant takes those marks
//   away with the answers that made them.
const COMPONENT = "review-months";
const list = document.getElementById("review-months");
const detail = document.getElementById("review-detail");
const regionSelect = document.getElementById("review-region");
const state = { rows: [], selected: null, pointedAt: new Map(), marksRevision: -1, generation: 0 };
const euros = new Intl.NumberFormat("en", { style: "currency", currency: "EUR" });
const count = new Intl.NumberFormat("en");

// What the user sees of a month, as pagecontext may share it (data-pc-shareable says
// which fields leave the page, and their units). The change is the page's own figure,
// rounded as it is shown; the first month has none.
function shared(row) {
  const index = state.rows.indexOf(row);
  const before = index > 0 ? state.rows[index - 1].revenueEur : null;
  const values = { region: row.region, month: row.month, unitsSold: row.unitsSold, revenueEur: row.revenueEur };
  if (before) values.changePct = Math.round((row.revenueEur / before - 1) * 1000) / 10;
  return values;
}

const text = (tag, content) => Object.assign(document.createElement(tag), { textContent: content });

function renderList() {
  list.replaceChildren(...state.rows.map((row) => {
    const item = document.createElement("li");
    item.tabIndex = -1;
    item.dataset.pcResourceRef = row.ref;
    item.dataset.pcValues = JSON.stringify(shared(row));
    item.append(text("span", row.month), text("span", euros.format(row.revenueEur)));
    return item;
  }));
  state.generation += 1;
  list.dataset.pcFilters = JSON.stringify({ region: regionSelect.value });
  list.dataset.pcGeneration = String(state.generation);
  list.dispatchEvent(new CustomEvent("pagecontext:rendered", { bubbles: true }));
  renderMarks();
}

// The page's own selection and the assistant's highlight, drawn without re-rendering
// the list (a render is a new view, and would make the assistant's commands stale).
function renderMarks() {
  for (const item of list.children) {
    const ref = item.dataset.pcResourceRef;
    item.setAttribute("aria-current", String(ref === state.selected));
    // Every month the assistant points at is marked, the one its answer is about and
    // the ones it cites (tone `related`, marked apart): a citation does not take the
    // mark off the month the answer is about.
    item.classList.toggle("is-pointed-at", state.pointedAt.has(ref));
    item.classList.toggle("is-related", state.pointedAt.get(ref) === "related");
  }
  const row = state.rows.find((r) => r.ref === state.selected);
  if (!row) {
    detail.replaceChildren(text("p", "Pick a month."));
    delete detail.dataset.month;
    return;
  }
  const { changePct = null } = shared(row);
  const fields = [["Region", row.region], ["Month", row.month], ["Units sold", count.format(row.unitsSold)],
    ["Revenue", euros.format(row.revenueEur)],
    ["Change on the month before", changePct === null ? "–" : `${changePct > 0 ? "+" : ""}${changePct} %`]];
  const dl = document.createElement("dl");
  for (const [name, value] of fields) dl.append(text("dt", name), text("dd", value));
  const ask = text("button", "Ask AI about this month");
  ask.type = "button";
  ask.setAttribute("data-pc-ask", "");
  detail.replaceChildren(text("h2", `${row.region}, ${row.month}`), dl, ask);
  detail.dataset.month = row.ref;
}

function select(ref) {
  state.selected = ref;
  renderMarks();
}

async function load() {
  const response = await fetch(`/api/sales?region=${encodeURIComponent(regionSelect.value)}`);
  state.rows = (await response.json()).rows;
  state.selected = null;
  state.pointedAt.clear();
  renderList();
}

list.addEventListener("click", (event) => {
  const item = event.target.closest("[data-pc-resource-ref]");
  if (item) select(item.dataset.pcResourceRef); // pagecontext reads the click itself
});

// The keyboard moves the page's own selection; the page tells pagecontext.
list.addEventListener("keydown", (event) => {
  if (event.key !== "ArrowDown" && event.key !== "ArrowUp") return;
  event.preventDefault();
  const at = state.rows.findIndex((r) => r.ref === state.selected);
  const step = event.key === "ArrowDown" ? 1 : -1;
  const next = state.rows[Math.min(state.rows.length - 1, Math.max(0, at + step))];
  if (!next) return;
  select(next.ref);
  document.dispatchEvent(new CustomEvent("pagecontext:select", {
    detail: { componentId: COMPONENT, resourceRef: next.ref, values: shared(next) },
  }));
});

regionSelect.addEventListener("change", load);

// The assistant points at a month: the page marks it; locate is left to pagecontext (it
// scrolls to the item, and focuses it for a Show me: docs/protocol.md 8.16). The user's
// own selection, what the detail shows and what "Ask AI" shares, stays the user's: only
// the user changes it.
// A new conversation: the answers that pointed at months are cleared in the assistant,
// and the marks they made go with them (the user's selection stays).
document.addEventListener("pagecontext:conversation", () => {
  state.pointedAt.clear();
  renderMarks();
});

document.addEventListener("pagecontext:command", (event) => {
  const { commandId, action, componentId, resourceRef, tone, basisRevision } = event.detail;
  if (componentId !== COMPONENT || (action !== "highlight" && action !== "clear-highlight")) return;
  event.preventDefault();
  let status = "applied";
  if (action === "clear-highlight") {
    state.pointedAt.clear();
  } else if (state.rows.some((r) => r.ref === resourceRef)) {
    // The first mark for another selection takes the other ones away, as pagecontext
    // does with the marks it draws (docs/protocol.md 8.15).
    if (basisRevision !== state.marksRevision) {
      state.pointedAt.clear();
      state.marksRevision = basisRevision;
    }
    // One month the answer is about (`focus`), as the demo's table keeps one.
    if (tone !== "related") {
      for (const [ref, was] of state.pointedAt) if (was !== "related") state.pointedAt.delete(ref);
    }
    state.pointedAt.set(resourceRef, tone === "related" ? "related" : "focus");
  } else {
    status = "not-found";
  }
  renderMarks();
  document.dispatchEvent(new CustomEvent("pagecontext:command-done", { detail: { commandId, status } }));
});

load();
