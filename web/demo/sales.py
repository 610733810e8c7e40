# The demo business page's own code: a sales table and a chart, rendered from the
# server's /api/sales under the filters the user picks. It knows pagecontext only
# through the documented DOM surface (docs/integration.md): data-pc-* attributes on
# what it renders, the `pagecontext:rendered` event after each render, and
# `pagecontext:refresh` in. The chart is a component like the table: each bar segment
# is one sales row (its resource ref), with the series, month and value it shows.
# Runs under MicroPython on the main thread, after the pagecontext edge: the boot
# script imports this module (compiled to bytecode) and awaits main().

import asyncio
import json

import js
from jsffi import create_proxy

doc = js.document
table = doc.getElementById("sales-table")
chart = doc.getElementById("sales-chart")
chart_title = doc.getElementById("sales-chart-title")
legend = doc.getElementById("sales-chart-legend")
focused_mark = doc.getElementById("sales-chart-focus")
form = doc.querySelector(".pc-filters")
hint = doc.getElementById("ask-hint")
rows_shown = doc.getElementById("rows-shown")
panel = doc.querySelector(".pc-panel")
SVG = "http://www.w3.org/2000/svg"
# Each component's data generation, bumped on every render.
state = {"table": 0, "chart": 0}


def say(region, text, again=True):
    """Write `text` into a live region. With `again`, the same words again go with a
    no-break space added or taken away, since a live region says only what changed;
    without it, they are left as they are, and not said again."""
    shown = region.textContent
    if text and shown.rstrip("\u00a0") == text:
        if not again:
            return
        text = text + "\u00a0" if shown == text else text
    region.textContent = text


def money(value):
    """`value` with two decimals and its thousands grouped ("54,430.88"): MicroPython's
    format groups the thousands of an integer only."""
    whole, _, cents = ("%.2f" % abs(value)).partition(".")
    return ("-" if value < 0 else "") + "{:,}".format(int(whole)) + "." + cents


def cell(text, field=None, value=None, numeric=False):
    td = doc.createElement("td")
    td.textContent = text
    if field:
        td.setAttribute("data-pc-field", field)
        td.setAttribute("data-pc-value", json.dumps(value))
    if numeric:
        td.className = "num"
    return td


def filters():
    region = form.elements.namedItem("region").value
    out = {"from": form.elements.namedItem("from").value, "to": form.elements.namedItem("to").value}
    if region:
        out["region"] = region
    return out


# Rows and chart marks are built in slices, each in its own task, so rendering never
# blocks the page for long; the table and the chart are each swapped in whole at the end.
SLICE = 12


async def render_table(rows, view, empty, filtered=False):
    body = doc.createElement("tbody")
    for index, row in enumerate(rows):
        if index and index % SLICE == 0:
            await asyncio.sleep(0)
        tr = doc.createElement("tr")
        tr.setAttribute("data-pc-resource-ref", row["ref"])
        # One object of each component is in the Tab order; the arrow keys move on.
        tr.setAttribute("tabindex", "0" if index == 0 else "-1")
        # Rows of the table's grid, each selectable, none selected yet.
        tr.setAttribute("aria-selected", "false")
        tr.append(cell(row["month"], "month", row["month"]))
        tr.append(cell(row["region"], "region", row["region"]))
        tr.append(cell("{:,}".format(row["unitsSold"]), "unitsSold", row["unitsSold"], True))
        tr.append(cell(money(row["revenueEur"]), "revenueEur", row["revenueEur"], True))
        body.append(tr)
    if not rows:
        tr = doc.createElement("tr")
        # Across the table: in the first column alone it would squeeze the others.
        td = cell(empty)
        td.setAttribute("colspan", "4")
        tr.append(td)
        body.append(tr)
    table.querySelector("tbody").replaceWith(body)
    # Heard as well as seen: what the filters left, for a user who cannot see the table
    # change (a status, said after the filter they changed; a reload the assistant asked
    # for says it only if it changed).
    shown = str(len(rows)) + (" row" if len(rows) == 1 else " rows") + " shown."
    say(rows_shown, shown if rows else empty, filtered)
    rendered(table, "table", view)
    table.setAttribute("data-demo-rows", str(len(rows)))


# The order the filter bar shows them in: the attribute lists them so (a MicroPython
# dict keeps no order, so json.dumps of the view would not).
FILTER_ORDER = ("region", "from", "to")


def filters_text(view):
    """`view` as the JSON object of data-pc-filters, in the filter bar's order."""
    return "{" + ", ".join(json.dumps(k) + ": " + json.dumps(view[k]) for k in FILTER_ORDER if k in view) + "}"


def rendered(component, name, view):
    """Publish a component's new view and tell pagecontext it re-rendered."""
    state[name] += 1
    component.setAttribute("data-pc-filters", filters_text(view))
    component.setAttribute("data-pc-generation", str(state[name]))
    component.dispatchEvent(js.CustomEvent.new("pagecontext:rendered", {"bubbles": True}))


async def render_chart(rows, view):
    """Revenue by month, one stacked segment per region: a segment is one sales row."""
    totals = {}
    for row in rows:
        totals[row["month"]] = totals.get(row["month"], 0) + row["revenueEur"]
    months = sorted(totals)
    top = max(totals.values()) if totals else 1
    width = 600 / max(1, len(months))
    tops = {}
    regions = []
    marks = doc.createDocumentFragment()
    for index, row in enumerate(rows):
        if index and index % SLICE == 0:
            await asyncio.sleep(0)
        month, region, revenue = row["month"], row["region"], row["revenueEur"]
        if region not in regions:
            regions.append(region)
        height = 150 * revenue / top
        base = tops.get(month, 160)
        tops[month] = base - height
        rect = doc.createElementNS(SVG, "rect")
        rect.setAttribute("x", str(months.index(month) * width + 4))
        rect.setAttribute("y", str(base - height))
        rect.setAttribute("width", str(max(1, width - 8)))
        rect.setAttribute("height", str(height))
        rect.setAttribute("class", "pc-series-" + region.lower())
        rect.setAttribute("tabindex", "0" if index == 0 else "-1")
        # Options of the chart's listbox: aria-selected is theirs to say.
        rect.setAttribute("role", "option")
        rect.setAttribute("aria-selected", "false")
        rect.setAttribute("data-pc-resource-ref", row["ref"])
        values = {"series": region, "month": month, "revenueEur": revenue}
        rect.setAttribute("data-pc-values", json.dumps(values))
        # Its name, and the tooltip a pointer shows (an aria-label as well would make the
        # title its description: each segment read twice).
        title = doc.createElementNS(SVG, "title")
        title.textContent = region + ", " + month + ": " + money(revenue) + " EUR"
        rect.append(title)
        marks.append(rect)
    chart.replaceChildren(marks)
    # The focused segment went with the old marks.
    focused_mark.textContent = ""
    legend.replaceChildren()
    for region in regions:
        item = doc.createElement("span")
        item.className = "pc-series-" + region.lower()
        item.textContent = region
        legend.append(item)
    # The chart's title as the user reads it goes with every mark they select.
    chart.setAttribute("data-pc-values", json.dumps({"chart": chart_title.textContent}))
    chart.setAttribute("data-demo-marks", str(len(rows)))
    rendered(chart, "chart", view)


def in_view(row, view):
    """True if `row` passes the filters, as /api/sales applies them. A static host
    serves every row whatever the query, so the page applies them again itself."""
    region = view.get("region")
    return (
        (not region or row["region"] == region)
        and (not view["from"] or row["month"] >= view["from"])
        and (not view["to"] or row["month"] <= view["to"])
    )


async def fetch_rows(view):
    """The rows under `view`, and what the table says if there are none: that none
    match, or why the server gave none (the filters it refused, its database, or no
    answer at all)."""
    query = "&".join(k + "=" + js.encodeURIComponent(v) for k, v in view.items())
    try:
        response = await js.fetch("/api/sales?" + query)
        text = await response.text()
    except Exception:
        return [], "The rows could not be loaded: the server did not answer."
    try:
        data = json.loads(text)
    except ValueError:
        data = {}
    if not response.ok or not isinstance(data, dict) or "rows" not in data:
        why = data.get("detail") if isinstance(data, dict) else None
        return [], "The rows could not be loaded: " + (why or "the server answered " + str(response.status)) + "."
    return [row for row in data["rows"] if in_view(row, view)], "No rows match these filters."


async def load(filtered=False):
    view = filters()
    rows, empty = await fetch_rows(view)
    await render_table(rows, view, empty, filtered)
    await asyncio.sleep(0)
    await render_chart(rows, view)


# The keys that move the focus from one object of a component to another.
STEPS = {"ArrowDown": 1, "ArrowRight": 1, "ArrowUp": -1, "ArrowLeft": -1}


def chart_step(objects, at, key):
    """Where an arrow key moves from the chart's segment `at`, as the chart is drawn: up
    and down the month's stack (stacked bottom up in the order its segments come), left
    and right to the same series in the nearest month before or after that has it (a
    month may lack a region, and a region filter leaves one segment a month). Past the
    stack's top or bottom, or the chart's first or last month, the focus stays."""
    spots = [json.loads(o.getAttribute("data-pc-values") or "{}") for o in objects]
    month, series = spots[at].get("month"), spots[at].get("series")
    if key in ("ArrowUp", "ArrowDown"):
        to = at + (1 if key == "ArrowUp" else -1)
        return to if 0 <= to < len(spots) and spots[to].get("month") == month else at
    step = 1 if key == "ArrowRight" else -1
    to = at + step
    while 0 <= to < len(spots):
        if spots[to].get("series") == series and spots[to].get("month") != month:
            return to
        to += step
    return at


def on_key(event):
    """The keyboard selects as a click does: Enter or Space selects the focused row or
    chart segment (the page tells pagecontext with `pagecontext:select`); the arrow keys,
    Home and End move the focus between a component's objects."""
    target = event.target
    component = table if table.contains(target) else chart
    ref = target.getAttribute("data-pc-resource-ref")
    if not ref:
        return
    key = event.key
    if key in ("Enter", " "):
        event.preventDefault()
        detail = {"componentId": component.getAttribute("data-pc-component"), "resourceRef": ref}
        event = js.CustomEvent.new("pagecontext:select", js.JSON.parse(json.dumps({"detail": detail})))
        doc.dispatchEvent(event)
        return
    objects = list(component.querySelectorAll("[data-pc-resource-ref]"))
    if key in STEPS:
        at = [o.getAttribute("data-pc-resource-ref") for o in objects].index(ref)
        if component is chart:
            following = objects[chart_step(objects, at, key)]
        else:
            following = objects[max(0, min(len(objects) - 1, at + STEPS[key]))]
    elif key in ("Home", "End"):
        following = objects[0 if key == "Home" else -1]
    else:
        return
    event.preventDefault()
    following.focus()


def on_focus(event):
    """One Tab stop per component, where the focus last was, however it got there (the
    arrow keys, a click, a `locate`): Tab away and back returns to it. A chart segment's
    name is shown under the chart while it has the focus."""
    target = event.target
    if not target.getAttribute("data-pc-resource-ref"):
        return
    component = table if table.contains(target) else chart
    for stop in component.querySelectorAll('[data-pc-resource-ref][tabindex="0"]'):
        stop.setAttribute("tabindex", "-1")
    target.setAttribute("tabindex", "0")
    if component is chart:
        # Seen as well as heard: the focused segment's name (a pointer gets its title as
        # a tooltip; the keyboard gets none). Hidden from screen readers, which say it
        # with the focus already.
        focused_mark.textContent = target.querySelector("title").textContent


def on_blur(event):
    """The focus left a segment: the name shown for it goes with it."""
    # Always: the chart itself takes a click's focus (tabindex="-1") and shows no
    # segment, and a segment that takes the focus next shows its own name (`on_focus`).
    focused_mark.textContent = ""


def on_ask(event):
    """Ask AI with nothing selected shares nothing (pagecontext sends only a selection):
    the page says what to do instead. pagecontext marks <html data-pc-revision> once the
    user has selected something, and the page's style hides the hint from then on.
    A narrow window puts the assistant under the page, out of sight: Ask AI then
    scrolls to it, where the chip shows what was taken."""
    if doc.documentElement.getAttribute("data-pc-revision") is None:
        # While Python boots, data-pc-revision is not set yet, but the edge has already
        # marked a row or segment the user selected: that selection is kept and shared
        # once the two frames are bound, so the page says so rather than "select first".
        marked = doc.querySelector('[data-pc-resource-ref][aria-selected="true"]')
        if marked is not None:
            say(hint, "The assistant is starting: your selection goes to it once connected.")
        else:
            say(hint, "Select a row or a chart segment first.")
    elif panel is not None and panel.getBoundingClientRect().top >= js.window.innerHeight:
        panel.scrollIntoView(True)


def reload(event=None):
    asyncio.create_task(load())


def on_filter(event):
    """A filter changed: the rows it left are said, even as many as before."""
    asyncio.create_task(load(True))


def refresh(event):
    # Taken: pagecontext waits for the render that follows.
    event.preventDefault()
    reload()


# The page keeps these listeners for its whole life; they are never removed.
LISTENERS = []


async def main():
    for target, name, handler in (
        (form, "change", on_filter),
        (table, "pagecontext:refresh", refresh),
        (chart, "pagecontext:refresh", refresh),
        (table, "keydown", on_key),
        (chart, "keydown", on_key),
        (table, "focusin", on_focus),
        (chart, "focusin", on_focus),
        (chart, "focusout", on_blur),
        (doc.querySelector("[data-pc-ask]"), "click", on_ask),
    ):
        proxy = create_proxy(handler)
        target.addEventListener(name, proxy)
        LISTENERS.append(proxy)
    await load()
