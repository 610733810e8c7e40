// Init script that bench/run.py adds to every frame of the demo (Playwright
// add_init_script runs it before any of the document's own scripts). It only observes:
// it never posts to pagecontext and changes nothing the product reads.
//
// - `data-pc-state` transitions (first time of each value), in epoch milliseconds
//   (performance.timeOrigin + performance.now()), comparable across frames;
// - every main-thread long task (PerformanceObserver "longtask", buffered), and every
//   long animation frame ("long-animation-frame") with the scripts that ran in it (where
//   each came from, what invoked it) and its rendering time, to tell whose work it was;
// - helpers for the latency benchmark: a page-side select (+ "Ask AI") and burst, and a
//   panel-side watcher of the chip revision and the receipt status.
(() => {
  if (window.__pcBench) return;
  const now = () => performance.timeOrigin + performance.now();
  const bench = (window.__pcBench = {
    timeOrigin: performance.timeOrigin,
    states: {},
    longtasks: [],
    longtaskError: null,
    longFrames: [],
    longFrameError: null,
  });

  try {
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        const end = entry.startTime + entry.duration;
        bench.longFrames.push({
          start: performance.timeOrigin + entry.startTime,
          duration: entry.duration,
          blocking: entry.blockingDuration,
          // style, layout and paint: from the start of rendering to the frame's end.
          render: entry.renderStart ? end - entry.renderStart : 0,
          scripts: entry.scripts.map((script) => ({
            source: script.sourceURL,
            invoker: `${script.invokerType}:${script.invoker}`,
            duration: script.duration,
          })),
        });
      }
    }).observe({ type: "long-animation-frame", buffered: true });
  } catch (error) {
    bench.longFrameError = String(error);
  }

  try {
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        bench.longtasks.push({ start: performance.timeOrigin + entry.startTime, duration: entry.duration });
      }
    }).observe({ type: "longtask", buffered: true });
  } catch (error) {
    bench.longtaskError = String(error);
  }

  // `document` exists before <html> is parsed; a subtree observer sees the attribute on
  // <html> once the edge sets it (the parser's initial "booting" is not a mutation).
  new MutationObserver((records) => {
    const t = now();
    for (const record of records) {
      if (record.target !== document.documentElement) continue;
      const state = record.target.getAttribute("data-pc-state");
      if (state && !(state in bench.states)) bench.states[state] = t;
    }
  }).observe(document, { subtree: true, attributes: true, attributeFilter: ["data-pc-state"] });

  // -- page side: selections ------------------------------------------------------------

  const rows = () => [...document.querySelectorAll("tr[data-pc-resource-ref]")];

  // Click one row, then "Ask AI"; return the click time.
  bench.selectAndAsk = (ref) => {
    const row = rows().find((el) => el.getAttribute("data-pc-resource-ref") === ref);
    if (!row) throw new Error(`no row ${ref}`);
    const ask = document.querySelector("[data-pc-ask]");
    const t0 = now();
    row.click();
    ask.click();
    return t0;
  };

  // Schedule `count` selections, each shared, as fast as the page takes them (one task,
  // like the e2e burst); returns at once. The result lands on bench.burstResult.
  bench.startBurst = (count, offset) => {
    bench.burstResult = { done: false, t0: [], refs: [] };
    setTimeout(() => {
      const all = rows();
      const ask = document.querySelector("[data-pc-ask]");
      const out = bench.burstResult;
      for (let i = 0; i < count; i += 1) {
        const row = all[(offset + i * 7) % all.length];
        out.t0.push(now());
        row.click();
        ask.click();
        out.refs.push(row.getAttribute("data-pc-resource-ref"));
      }
      out.end = now();
      out.done = true;
    }, 0);
    return true;
  };

  // Build the demo table anew with `count` rows (the demo's own attributes: a ref, and
  // four fields with their values), at data generation `generation`, and report the
  // render; return the main-thread milliseconds of the report alone: pagecontext reads
  // the table's objects in its `pagecontext:rendered` listener, inside the dispatch.
  bench.renderRows = (count, generation) => {
    const table = document.querySelector('[data-pc-component="sales-table"]');
    const made = [];
    for (let i = 0; i < count; i += 1) {
      const row = document.createElement("tr");
      row.setAttribute("data-pc-resource-ref", `bench-row-${i}`);
      row.tabIndex = -1;
      for (const [field, value] of [["region", "North"], ["month", "2026-03"], ["unitsSold", i], ["revenueEur", i * 1.5]]) {
        const cell = document.createElement("td");
        cell.setAttribute("data-pc-field", field);
        cell.setAttribute("data-pc-value", JSON.stringify(value));
        cell.textContent = String(value);
        row.append(cell);
      }
      made.push(row);
    }
    table.querySelector("tbody").replaceChildren(...made);
    table.setAttribute("data-pc-generation", String(generation));
    return bench.reportRender();
  };

  // Report a render of the demo table as it is (a list scrolled, the same rows); return
  // the report's main-thread milliseconds.
  bench.reportRender = () => {
    const table = document.querySelector('[data-pc-component="sales-table"]');
    const t0 = performance.now();
    table.dispatchEvent(new CustomEvent("pagecontext:rendered", { bubbles: true }));
    return performance.now() - t0;
  };

  bench.highlighted = () =>
    [...document.querySelectorAll("[data-pc-highlight]")].map((el) => [
      el.getAttribute("data-pc-resource-ref"),
      el.getAttribute("data-pc-highlight"),
    ]);

  // -- panel side: chip revision and receipt status -------------------------------------

  bench.watchPanel = () => {
    if (bench.panel) return true;
    const chips = document.querySelector("[data-pc-chips]");
    const receipt = document.querySelector("[data-pc-receipt]");
    const panel = (bench.panel = {
      current: 0,
      ref: null,
      shown: {}, // revision -> first time the chip showed it
      order: [], // the chip revisions in the order shown (consecutive duplicates dropped)
      receipts: [], // [time, status, text, commandId]
      checks: [],
      show: document.querySelector("[data-pc-show]"),
    });
    const runChecks = () => {
      panel.checks = panel.checks.filter((check) => !check());
    };
    const readChip = () => {
      const chip = chips.querySelector("[data-pc-chip]");
      const revision = chip ? Number(chip.getAttribute("data-pc-chip-revision")) : 0;
      return [revision, chip ? chip.getAttribute("data-pc-chip") : null];
    };
    [panel.current, panel.ref] = readChip();
    new MutationObserver(() => {
      const t = now();
      const [revision, ref] = readChip();
      if (revision !== panel.current) {
        panel.current = revision;
        panel.ref = ref;
        panel.order.push(revision);
        if (!(revision in panel.shown)) panel.shown[revision] = t;
      }
      runChecks();
    }).observe(chips, { childList: true });
    new MutationObserver(() => {
      panel.receipts.push([
        now(),
        receipt.getAttribute("data-pc-receipt-status"),
        receipt.textContent,
        receipt.getAttribute("data-pc-receipt-command"),
      ]);
      runChecks();
    }).observe(receipt, { attributes: true, attributeFilter: ["data-pc-receipt-status"] });
    return true;
  };

  // Press "Show me"; resolve when the receipt of the new command settles (the first status
  // other than "pending" for a command id not seen before the click), or after `timeoutMs`.
  // The panel coalesces its updates, so it may show the settled status without "pending".
  bench.show = (timeoutMs = 15000) =>
    new Promise((resolve) => {
      const panel = bench.panel;
      const mark = panel.receipts.length;
      const before = mark ? panel.receipts[mark - 1][3] : null;
      const revision = panel.current;
      let settled = false;
      const finish = (t, status, text) => {
        settled = true;
        resolve({ t0, t, status, text, revisionAtClick: revision, revisionAtSettle: panel.current });
      };
      panel.checks.push(() => {
        if (settled) return true;
        for (let i = mark; i < panel.receipts.length; i += 1) {
          const [t, status, text, command] = panel.receipts[i];
          if (command !== before && status !== "pending") {
            finish(t, status, text);
            return true;
          }
        }
        return false;
      });
      setTimeout(() => {
        if (!settled) finish(now(), "timeout", "");
      }, timeoutMs);
      const t0 = now();
      panel.show.click();
    });

  // Press "Show me" again and again, each after the previous settled, while the chip is
  // below `target` (at least once); return every outcome.
  bench.showWhileBelow = async (target, timeoutMs = 120000) => {
    const outcomes = [];
    const deadline = now() + timeoutMs;
    do {
      outcomes.push(await bench.show());
    } while (bench.panel.current < target && now() < deadline);
    return outcomes;
  };
})();
