// The orders example's own code, written as a page that keeps its state in JavaScript
// would be. It knows pagecontext only through the surface docs/integration.md
// documents:
// - data-pc-* attributes on the list and its items (a click on an item selects it);
// - `pagecontext:select` when the keyboard moves the page's own selection;
// - `pagecontext:rendered` after every render of the list;
// - `pagecontext:command`: the page draws the assistant's highlight itself, opens the
//   order it points at, and answers with `pagecontext:command-done`.
const ORDERS = [
  { ref: "order-1041", customer: "Nordwind AG", placed: "2026-03-02", status: "shipped", total: 1840.0, items: 4 },
  { ref: "order-1042", customer: "ACME GmbH", placed: "2026-03-04", status: "open", total: 1250.5, items: 2 },
  { ref: "order-1043", customer: "Blue Harbor Ltd", placed: "2026-03-05", status: "on hold", total: 9800.0, items: 12 },
  { ref: "order-1044", customer: "Kettle & Co", placed: "2026-03-07", status: "open", total: 312.9, items: 1 },
  { ref: "order-1045", customer: "Lumen SARL", placed: "2026-03-09", status: "open", total: 4420.0, items: 6 },
  { ref: "order-1046", customer: "Tallinn Timber OÜ", placed: "2026-03-10", status: "shipped", total: 2075.25, items: 3 },
];
const COMPONENT = "orders-list";
const list = document.getElementById("orders-list");
const detail = document.getElementById("order-detail");
const statusFilter = document.getElementById("orders-status");
const state = { status: "", selected: null, pointedAt: null, generation: 0 };
const euros = new Intl.NumberFormat("en", { style: "currency", currency: "EUR" });

// What the user sees of an order, as pagecontext may share it (data-pc-shareable says
// which of these fields leave the page; `total` goes with its unit, EUR).
const shared = (order) => ({
  customer: order.customer, placed: order.placed, status: order.status,
  total: order.total, items: order.items,
});
const visible = () => ORDERS.filter((order) => !state.status || order.status === state.status);

function renderList() {
  list.replaceChildren(...visible().map((order) => {
    const item = document.createElement("li");
    item.tabIndex = -1;
    item.dataset.pcResourceRef = order.ref;
    item.dataset.pcValues = JSON.stringify(shared(order));
    item.append(order.customer, Object.assign(document.createElement("span"), { textContent: euros.format(order.total) }),
      Object.assign(document.createElement("small"), { textContent: `${order.ref} · ${order.status}` }));
    return item;
  }));
  state.generation += 1;
  list.dataset.pcFilters = JSON.stringify(state.status ? { status: state.status } : {});
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
    item.classList.toggle("is-pointed-at", ref === state.pointedAt);
  }
  const order = ORDERS.find((o) => o.ref === state.selected);
  if (!order) return;
  const fields = [["Customer", order.customer], ["Placed", order.placed], ["Status", order.status],
    ["Items", String(order.items)], ["Total", euros.format(order.total)]];
  const dl = document.createElement("dl");
  for (const [name, value] of fields) {
    dl.append(Object.assign(document.createElement("dt"), { textContent: name }),
      Object.assign(document.createElement("dd"), { textContent: value }));
  }
  const ask = Object.assign(document.createElement("button"), { type: "button", textContent: "Ask AI about this order" });
  ask.setAttribute("data-pc-ask", "");
  const title = Object.assign(document.createElement("h2"), { textContent: order.ref });
  detail.replaceChildren(title, dl, ask);
  detail.dataset.order = order.ref;
}

function select(ref) {
  state.selected = ref;
  renderMarks();
}

list.addEventListener("click", (event) => {
  const item = event.target.closest("[data-pc-resource-ref]");
  if (item) select(item.dataset.pcResourceRef); // pagecontext reads the click itself
});

// The keyboard moves the page's own selection; the page tells pagecontext.
list.addEventListener("keydown", (event) => {
  if (event.key !== "ArrowDown" && event.key !== "ArrowUp") return;
  event.preventDefault();
  const orders = visible();
  const at = orders.findIndex((o) => o.ref === state.selected);
  const next = orders[Math.min(orders.length - 1, Math.max(0, at + (event.key === "ArrowDown" ? 1 : -1)))];
  if (!next) return;
  select(next.ref);
  document.dispatchEvent(new CustomEvent("pagecontext:select", {
    detail: { componentId: COMPONENT, resourceRef: next.ref, values: shared(next) },
  }));
});

statusFilter.addEventListener("change", () => {
  state.status = statusFilter.value;
  renderList();
});

// The assistant points at an order: the page draws it and opens it; locate is left to
// pagecontext (it scrolls to the item and focuses it).
document.addEventListener("pagecontext:command", (event) => {
  const { commandId, action, componentId, resourceRef } = event.detail;
  if (componentId !== COMPONENT || (action !== "highlight" && action !== "clear-highlight")) return;
  event.preventDefault();
  let status = "applied";
  if (action === "clear-highlight") {
    state.pointedAt = null;
  } else if (visible().some((o) => o.ref === resourceRef)) {
    state.pointedAt = resourceRef;
    state.selected = resourceRef;
  } else {
    status = "not-found";
  }
  renderMarks();
  document.dispatchEvent(new CustomEvent("pagecontext:command-done", { detail: { commandId, status } }));
});

renderList();
