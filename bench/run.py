"""pagecontext benchmarks in headless Chromium, against the demo served by the project's server.

    python bench/run.py [--quick] [--out bench/results/latest.json]

Runs `boot`, `bytes`, `latency`, `receiver_ratio` and `memory` (bench/README.md says what
each number means), prints a short table and writes every number, with the raw samples,
as JSON. The servers are started here, on free ports, like the e2e suite starts them; the
benchmark pages in bench/pages are served under `/bench/` by this script's own apps only.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

ROOT: Final = Path(__file__).resolve().parents[1]
if str(ROOT / "pysrc") not in sys.path:  # `python bench/run.py` without PYTHONPATH
    sys.path.insert(0, str(ROOT / "pysrc"))

from playwright.sync_api import (  # noqa: E402
    Browser,
    BrowserContext,
    CDPSession,
    Frame,
    Page,
    Playwright,
    Worker,
    sync_playwright,
)
from playwright.sync_api import (  # noqa: E402
    TimeoutError as PlaywrightTimeoutError,
)
from starlette.applications import Starlette  # noqa: E402
from starlette.routing import Mount  # noqa: E402
from starlette.staticfiles import StaticFiles  # noqa: E402

from pagecontext.server.app import (  # noqa: E402
    ServerConfig,
    create_assistant_app,
    create_page_app,
)
from pagecontext.server.chromium import (  # noqa: E402
    CHROMIUM_ARGS,
    MARK_DETAIL_JS,
    chromium_executable,
)
from pagecontext.server.data import create_demo_db  # noqa: E402
from pagecontext.server.run import free_port, serve_in_thread  # noqa: E402

PAGES: Final = ROOT / "bench" / "pages"
SITE: Final = ROOT / "build" / "site"
BOOT_TIMEOUT_MS: Final = 120_000
STEP_TIMEOUT_MS: Final = 30_000
# After both frames are bound, wait this long so the last long tasks get reported.
SETTLE_MS: Final = 750
BOUND = 'html[data-pc-state="bound"]'
PANEL_IFRAME = "iframe[data-pc-child]"

Json = dict[str, Any]
TIMES: Final = ("ready_ms", "bound_ms", "navigation_start_ms", "ready_own_ms", "bound_own_ms")
# A main-thread task or animation frame longer than this blocks the page (the budget).
LONG_MS: Final = 50


@dataclass(frozen=True)
class Plan:
    """How much of each benchmark to run."""

    boot_rounds: int
    single_n: int
    bursts: int
    burst_size: int
    receiver_rounds: int
    receiver_messages: int
    # Reports of each table size of `RENDER_ROWS`, and Show me presses on the largest.
    render_rounds: int = 0
    render_commands: int = 0


FULL: Final = Plan(
    boot_rounds=5,
    single_n=100,
    bursts=3,
    burst_size=1000,
    receiver_rounds=5,
    receiver_messages=10_000,
    render_rounds=5,
    render_commands=20,
)
# Only to get a bound demo when latency runs without boot.
ONE_BOOT: Final = Plan(
    boot_rounds=1, single_n=0, bursts=0, burst_size=0, receiver_rounds=0, receiver_messages=0
)
QUICK: Final = Plan(
    boot_rounds=1,
    single_n=100,
    bursts=1,
    burst_size=1000,
    receiver_rounds=2,
    receiver_messages=10_000,
    render_rounds=2,
    render_commands=5,
)
# The table sizes of the `render` benchmark: a page's table or grid of many rows.
RENDER_ROWS: Final = (200, 2000)


# -- statistics --------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty sequence."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def summary(values: Sequence[float], *, p99: bool = False) -> Json:
    """n, median, (p50 and p99,) min and max; rounded for reading."""
    if not values:
        return {"n": 0}
    out: Json = {"n": len(values), "median": _round(statistics.median(values))}
    if p99:
        out["p50"] = _round(percentile(values, 50))
        out["p99"] = _round(percentile(values, 99))
    out["min"] = _round(min(values))
    out["max"] = _round(max(values))
    return out


def _round(value: float) -> float:
    return round(value, 3) if abs(value) < 100 else round(value, 1)


# -- servers ------------------------------------------------------------------------------


def _with_bench_pages(app: Starlette) -> Starlette:
    """Serve bench/pages under /bench/ too (only in this script's apps)."""
    app.router.routes.append(Mount("/bench", StaticFiles(directory=PAGES)))
    return app


@dataclass(frozen=True)
class Origins:
    page: str
    assistant: str
    # The same page on an origin of its own, embedding an assistant origin where nothing
    # listens: the page alone, with no request intercepted.
    page_alone: str


@contextmanager
def serving(db_dir: Path) -> Iterator[Origins]:
    """The demo's two origins on free ports, each also serving /bench/, and the page
    alone on a third, its assistant's port left unserved."""
    db_path = db_dir / "demo.db"
    config = ServerConfig(
        root=ROOT, db_path=db_path, page_port=free_port(), assistant_port=free_port()
    )
    alone = ServerConfig(
        root=ROOT, db_path=db_path, page_port=free_port(), assistant_port=free_port()
    )
    create_demo_db(db_path)
    apps = [
        (_with_bench_pages(create_page_app(config)), config.page_port),
        (_with_bench_pages(create_assistant_app(config)), config.assistant_port),
        (create_page_app(alone), alone.page_port),
    ]
    with serve_in_thread(apps):
        yield Origins(config.page_origin, config.assistant_origin, alone.page_origin)


def launch(playwright: Playwright) -> Browser:
    """Debian's Chromium (PAGECONTEXT_CHROMIUM; empty for Playwright's own), headless."""
    path = chromium_executable()
    if path is not None:
        return playwright.chromium.launch(executable_path=path, args=list(CHROMIUM_ARGS))
    return playwright.chromium.launch(args=list(CHROMIUM_ARGS))


def new_context(browser: Browser) -> BrowserContext:
    """A fresh context (its own, empty HTTP cache) with the probe in every frame."""
    context = browser.new_context()
    context.add_init_script(path=str(PAGES / "probe.js"))
    return context


def worker_name(worker: Worker, origins: Origins) -> str:
    """ "page_worker" or "assistant_worker", by the origin the worker's script is on."""
    owner = "page" if worker.url.startswith(origins.page + "/") else "assistant"
    return f"{owner}_worker"


def panel_frame(page: Page, origins: Origins) -> Frame:
    for frame in page.frames:
        if frame.url.startswith(origins.assistant + "/assistant.html"):
            return frame
    raise RuntimeError("the assistant panel frame is missing")


# -- boot and bytes -----------------------------------------------------------------------

RESOURCES_JS: Final = """() => {
  const pick = (e) => ({name: e.name, type: e.initiatorType || "navigation",
    transfer: e.transferSize, encoded: e.encodedBodySize, decoded: e.decodedBodySize});
  return performance.getEntriesByType("navigation").map(pick)
    .concat(performance.getEntriesByType("resource").map(pick));
}"""


# A core worker's boot steps (web/worker.mjs marks them), as epoch milliseconds.
STEPS_JS: Final = """() => Object.fromEntries(performance.getEntriesByType("mark")
  .filter((m) => m.name.startsWith("pagecontext:"))
  .map((m) => [m.name.slice("pagecontext:".length), performance.timeOrigin + m.startTime]))"""
# Where a core worker's boot read its snapshot bundle and its wasm: "cache" (the Cache
# API copy an earlier visit kept) or "network" (the HTTP cache when warm), by mark.
SOURCES_JS: Final = """() => Object.fromEntries(["snapshot-opened", "wasm-opened"]
  .map((name) => [name, performance.getEntriesByName("pagecontext:" + name)[0]?.detail ?? null]))"""
# The steps the table shows, in boot order (a restore; a normal boot has fewer).
WORKER_STEPS: Final = (
    "worker-start",
    "snapshot-opened",
    "runtime-imported",
    "wasm-opened",
    "snapshot-unpacked",
    "wasm-instantiated",
    "prerun",
    "snapshot-placed",
    "runtime-loaded",
    "worker-started",
)


def _without_fragment(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, parts.query, ""))


def _long_task_summary(tasks: list[Json], until: float) -> Json:
    durations = [float(task["duration"]) for task in tasks if float(task["start"]) < until]
    return {
        "count": len(durations),
        "longest_ms": _round(max(durations, default=0.0)),
        "total_ms": _round(sum(durations)),
        "tbt_ms": _round(sum(max(0.0, d - 50) for d in durations)),
    }


def _long_frames(frames: list[Json], origin: float, until: float) -> list[Json]:
    """The long animation frames that started before `until`, each with its `cause`:
    the longest of the script that ran longest in it (its file and what invoked it), its
    rendering (style, layout and paint), and the rest of the frame that neither
    accounts for (`unattributed_ms`: the browser's own work, or the thread waiting for a
    core)."""
    found: list[Json] = []
    for frame in frames:
        if float(frame["start"]) >= until or float(frame["duration"]) <= LONG_MS:
            continue
        scripts: list[Json] = [
            {
                "file": urlsplit(str(script["source"])).path.rsplit("/", 1)[-1],
                "invoker": str(script["invoker"]),
                "duration_ms": _round(float(script["duration"])),
            }
            for script in frame["scripts"]
        ]
        top = max(scripts, key=lambda script: float(script["duration_ms"]), default=None)
        render = float(frame["render"])
        scripted = sum(float(script["duration_ms"]) for script in scripts)
        rest = max(0.0, float(frame["duration"]) - scripted - render)
        longest = max(render, rest, 0.0 if top is None else float(top["duration_ms"]))
        if top is not None and float(top["duration_ms"]) == longest:
            cause = f"{top['file'] or '(no source)'} {top['invoker']}"
        elif render == longest:
            cause = "rendering (style, layout, paint)"
        else:
            cause = "unattributed (no script or rendering: the browser, or a wait for a core)"
        found.append(
            {
                "start_ms": _round(float(frame["start"]) - origin),
                "duration_ms": _round(float(frame["duration"])),
                "blocking_ms": _round(float(frame["blocking"])),
                "render_ms": _round(render),
                "unattributed_ms": _round(rest),
                "cause": cause,
                "scripts": scripts,
            }
        )
    return found


def _long_frame_causes(frames: list[Json]) -> Json:
    """{cause: {count, longest_ms}} over `frames`, the most frequent cause first."""
    causes: Json = {}
    for frame in frames:
        entry = causes.setdefault(frame["cause"], {"count": 0, "longest_ms": 0.0})
        entry["count"] += 1
        entry["longest_ms"] = max(entry["longest_ms"], frame["duration_ms"])
    return dict(sorted(causes.items(), key=lambda item: -int(item[1]["count"])))


def boot_visit(
    context: BrowserContext,
    origins: Origins,
    cdp: CDPSession | None = None,
    *,
    keep: bool = False,
) -> tuple[Json, Page]:
    """Load the demo in a new tab of `context`; measure boot, long tasks and bytes, and
    with `cdp` (a browser session) the CPU time used until both frames are bound. With
    `keep` (a cold visit), then let each worker keep its Cache API copies and finish its
    post-bind work, and record what each did (`kept`) and any request made after the
    bytes were read (`bytes.late`)."""
    requested: list[str] = []

    def record(request: Any) -> None:
        requested.append(request.url)

    page = context.new_page()
    page.on("request", record)
    before = cpu_snapshot(cdp) if cdp is not None else None
    page.goto(origins.page + "/", wait_until="commit")
    page.wait_for_selector(BOUND, state="attached", timeout=BOOT_TIMEOUT_MS)
    page.frame_locator(PANEL_IFRAME).locator(BOUND).wait_for(
        state="attached", timeout=BOOT_TIMEOUT_MS
    )
    cpu = cpu_used(before, cpu_snapshot(cdp)) if cdp is not None and before is not None else None
    page.wait_for_selector("tr[data-pc-resource-ref]", state="attached", timeout=STEP_TIMEOUT_MS)
    page.wait_for_timeout(SETTLE_MS)
    panel = panel_frame(page, origins)
    probes = {
        "page": page.main_frame.evaluate("() => window.__pcBench"),
        "assistant": panel.evaluate("() => window.__pcBench"),
    }
    origin = float(probes["page"]["timeOrigin"])
    boot_end = max(float(probe["states"]["bound"]) for probe in probes.values())
    sample: Json = {"frames": {}, "bytes": {}, "cpu_s": cpu}
    for name, probe in probes.items():
        states = probe["states"]
        own = float(probe["timeOrigin"])
        sample["frames"][name] = {
            "ready_ms": _round(float(states["ready"]) - origin),
            "bound_ms": _round(float(states["bound"]) - origin),
            "navigation_start_ms": _round(own - origin),
            "ready_own_ms": _round(float(states["ready"]) - own),
            "bound_own_ms": _round(float(states["bound"]) - own),
            "long_tasks": _long_task_summary(probe["longtasks"], boot_end),
            "long_task_list": [
                {"start_ms": _round(float(t["start"]) - origin), "duration_ms": t["duration"]}
                for t in probe["longtasks"]
                if float(t["start"]) < boot_end
            ],
            "long_task_error": probe["longtaskError"],
            "long_frames": _long_frames(probe["longFrames"], origin, boot_end),
            "long_frame_error": probe["longFrameError"],
        }
    # Bytes on the wire: Resource Timing of each frame and each worker. A frame's entry
    # for its child iframe is left out: the child's own navigation entry counts it.
    entries = _all_entries(page, panel, origins)
    sample["workers"] = {}
    sample["sources"] = {}
    for worker in page.workers:
        name = worker_name(worker, origins)
        steps = worker.evaluate(STEPS_JS)
        sample["workers"][name] = {step: _round(float(at) - origin) for step, at in steps.items()}
        sample["sources"][name] = worker.evaluate(SOURCES_JS)
    seen: set[str] = set()
    for name, items in entries.items():
        kept = [item for item in items if item["type"] != "iframe"]
        seen.update(_without_fragment(str(item["name"])) for item in kept)
        sample["bytes"][name] = {
            "transfer": sum(int(item["transfer"]) for item in kept),
            "encoded_body": sum(int(item["encoded"]) for item in kept),
            "decoded_body": sum(int(item["decoded"]) for item in kept),
            "responses": len(kept),
            "from_network": sum(1 for item in kept if int(item["transfer"]) > 0),
        }
    sample["bytes"]["total"] = {
        key: sum(int(part[key]) for part in sample["bytes"].values())
        for key in ("transfer", "encoded_body", "decoded_body", "responses", "from_network")
    }
    # Every request Playwright saw (frames and workers) must be in some timeline.
    sample["bytes"]["requests_not_in_resource_timing"] = sorted(
        {
            url
            for url in map(_without_fragment, requested)
            if urlsplit(url).scheme in ("http", "https") and url not in seen
        }
    )
    sample["entries"] = entries
    if keep:
        sample["kept"] = wait_kept(page, origins)
        for worker in page.workers:
            worker.evaluate(MARK_WITHIN_JS, ["pagecontext:call-sites-provoked", STEP_TIMEOUT_MS])
        late = [
            {
                "frame": name,
                "url": _without_fragment(str(item["name"])),
                "transfer": item["transfer"],
            }
            for name, items in _all_entries(page, panel, origins).items()
            for item in items
            if item["type"] != "iframe" and _without_fragment(str(item["name"])) not in seen
        ]
        sample["bytes"]["late"] = late
    return sample, page


def _all_entries(page: Page, panel: Frame, origins: Origins) -> dict[str, list[Json]]:
    """Resource Timing of the page, its panel and each worker, by name."""
    entries: dict[str, list[Json]] = {
        "page": page.main_frame.evaluate(RESOURCES_JS),
        "assistant": panel.evaluate(RESOURCES_JS),
    }
    for worker in page.workers:
        entries[worker_name(worker, origins)] = worker.evaluate(RESOURCES_JS)
    return entries


# -- CPU time -----------------------------------------------------------------------------

# What a visit costs the machine: the CPU time each of the browser's processes used
# (Chromium's own accounting, by process type), and on Linux each renderer's threads by
# kind, from /proc. It is the work done, where a wall time also counts the waiting for a
# core that other work holds; it bounds the wall time from below: N CPU-seconds of work
# cannot finish in less than N / cores seconds.
CPU_PARTS: Final = (
    "total",
    "renderers",
    "renderer_main_threads",
    "renderer_workers",
    "renderer_background",
    "renderer_other",
    "browser",
    "network",
    "gpu",
    "other_processes",
    "rest_of_machine",
)
CLOCK_TICKS: Final = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class CpuSnapshot:
    """CPU seconds used so far: by each browser process (pid -> (type, seconds)), by each
    renderer thread ((pid, tid) -> (kind, seconds); empty without /proc), and by the whole
    machine (None without /proc/stat)."""

    processes: dict[int, tuple[str, float]]
    threads: dict[tuple[int, int], tuple[str, float]]
    machine: float | None


def thread_kind(pid: int, tid: int, name: str) -> str:
    """A renderer thread's kind: its main thread, a worker's thread (the core's Pyodide),
    the background pool (V8's compile and GC jobs among them), or another thread."""
    if tid == pid:
        return "renderer_main_threads"
    if name.startswith("DedicatedWorker"):
        return "renderer_workers"
    if name.startswith(("ThreadPoolForeg", "ThreadPoolBackg", "V8 ")):
        return "renderer_background"
    return "renderer_other"


def _proc_seconds(stat: str) -> tuple[str, float]:
    """(name, user + system seconds) from a /proc/<pid>/task/<tid>/stat line."""
    name = stat[stat.index("(") + 1 : stat.rindex(")")]
    fields = stat[stat.rindex(")") + 2 :].split()
    return name, (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def _machine_seconds() -> float | None:
    """CPU seconds every process on the machine has used (all cores), or None."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = stat.readline().split()
    except OSError:
        return None
    # user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
    values = [int(value) for value in fields[1:9]]
    return (sum(values) - values[3] - values[4]) / CLOCK_TICKS


def cpu_snapshot(cdp: CDPSession) -> CpuSnapshot:
    info = cdp.send("SystemInfo.getProcessInfo")["processInfo"]
    processes = {int(p["id"]): (str(p["type"]), float(p["cpuTime"])) for p in info}
    threads: dict[tuple[int, int], tuple[str, float]] = {}
    for pid, (kind, _) in processes.items():
        if kind != "renderer":
            continue
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in map(int, tids):
            try:
                with open(f"/proc/{pid}/task/{tid}/stat", encoding="utf-8") as stat:
                    name, seconds = _proc_seconds(stat.read())
            except (OSError, ValueError):
                continue
            threads[(pid, tid)] = (thread_kind(pid, tid, name), seconds)
    return CpuSnapshot(processes, threads, _machine_seconds())


def _process_part(kind: str) -> str:
    if kind == "renderer":
        return "renderers"
    if kind == "browser":
        return "browser"
    if kind == "GPU":
        return "gpu"
    if "NetworkService" in kind:
        return "network"
    return "other_processes"


def cpu_used(before: CpuSnapshot, after: CpuSnapshot) -> Json:
    """The CPU seconds used between two snapshots, by part (CPU_PARTS). A process or thread
    that started in between counts from zero; one that ended in between is not seen.
    Renderer threads are split only if /proc listed them (else the renderer_* parts are
    None); rest_of_machine (the bench, its servers and any other work) needs /proc/stat."""
    used: dict[str, float] = {}
    for pid, (kind, seconds) in after.processes.items():
        earlier = before.processes.get(pid)
        delta = seconds - (earlier[1] if earlier is not None else 0.0)
        part = _process_part(kind)
        used[part] = used.get(part, 0.0) + max(0.0, delta)
    browser_total = sum(used.values())
    result: Json = dict.fromkeys(CPU_PARTS)
    for part in ("renderers", "browser", "network", "gpu", "other_processes"):
        result[part] = _round(used.get(part, 0.0))
    result["total"] = _round(browser_total)
    if after.threads:
        for part in CPU_PARTS:
            if part.startswith("renderer_"):
                result[part] = 0.0
        for key, (kind, seconds) in after.threads.items():
            earlier_thread = before.threads.get(key)
            delta = seconds - (earlier_thread[1] if earlier_thread is not None else 0.0)
            result[kind] = _round(result[kind] + max(0.0, delta))
    if before.machine is not None and after.machine is not None:
        result["rest_of_machine"] = _round(max(0.0, after.machine - before.machine - browser_total))
    return result


def run_boot(browser: Browser, origins: Origins, plan: Plan, log: Callable[[str], None]) -> Json:
    """Cold (fresh context) then warm (new tab, same context) visits, `boot_rounds` times.

    Returns the results; the last warm page stays open under `_keep`, bound, for latency.
    """
    samples: dict[str, list[Json]] = {"cold": [], "warm": []}
    keep: tuple[BrowserContext, Page] | None = None
    cdp = browser.new_browser_cdp_session()
    for index in range(plan.boot_rounds):
        if keep is not None:
            keep[0].close()
        context = new_context(browser)
        for cache in ("cold", "warm"):
            started = time.perf_counter()
            sample, page = boot_visit(context, origins, cdp, keep=cache == "cold")
            samples[cache].append(sample)
            frames = sample["frames"]
            log(
                f"boot {cache} {index + 1}/{plan.boot_rounds}: page bound "
                f"{frames['page']['bound_ms']:.0f} ms, assistant bound "
                f"{frames['assistant']['bound_ms']:.0f} ms "
                f"({time.perf_counter() - started:.1f} s)"
            )
            if cache == "cold":
                page.close()
            else:
                keep = (context, page)
    assert keep is not None
    boot: Json = {}
    byte_results: Json = {}
    for cache, visits in samples.items():
        per_frame: Json = {}
        for frame in ("page", "assistant"):
            rows = [visit["frames"][frame] for visit in visits]
            per_frame[frame] = {key: summary([float(row[key]) for row in rows]) for key in TIMES}
            per_frame[frame]["long_tasks"] = {
                key: summary([float(row["long_tasks"][key]) for row in rows])
                for key in ("count", "longest_ms", "total_ms", "tbt_ms")
            }
            per_frame[frame]["long_frame_causes"] = _long_frame_causes(
                [long_frame for row in rows for long_frame in row["long_frames"]]
            )
        for worker in ("page_worker", "assistant_worker"):
            marks = [visit["workers"].get(worker, {}) for visit in visits]
            per_frame[worker] = {
                "steps_ms": {
                    step: summary([float(m[step]) for m in marks if step in m])
                    for step in sorted({step for m in marks for step in m})
                }
            }
        per_frame["cpu_s"] = cpu_summary([visit["cpu_s"] for visit in visits])
        boot[cache] = per_frame
        visit_name = "first_visit" if cache == "cold" else "repeat_visit"
        parts: Json = {}
        for part in ("total", "page", "assistant", "page_worker", "assistant_worker"):
            parts[part] = {
                key: summary([float(visit["bytes"].get(part, {}).get(key, 0)) for visit in visits])
                for key in ("transfer", "encoded_body", "decoded_body", "responses", "from_network")
            }
        parts["requests_not_in_resource_timing"] = sorted(
            {url for visit in visits for url in visit["bytes"]["requests_not_in_resource_timing"]}
        )
        # Requests after the bytes were read, until the workers' post-bind work ended
        # (cold visits): none is expected; any is listed, with its bytes.
        parts["late"] = [item for visit in visits for item in visit["bytes"].get("late", [])]
        byte_results[visit_name] = parts
    # What each warm visit's workers read from the Cache API and what from the HTTP
    # cache, and what the cold visits' workers kept: a warm visit reads the Cache API
    # copies only where the cold one could keep them.
    boot["sources"] = {
        "warm": _count_by_worker([visit["sources"] for visit in samples["warm"]]),
        "kept_after_cold": _count_by_worker(
            [{w: {"kept": kept} for w, kept in visit["kept"].items()} for visit in samples["cold"]]
        ),
    }
    boot["samples"] = {
        cache: [
            {
                "frames": visit["frames"],
                "workers": visit["workers"],
                "sources": visit["sources"],
                "cpu_s": visit["cpu_s"],
            }
            | ({"kept": visit["kept"]} if "kept" in visit else {})
            for visit in visits
        ]
        for cache, visits in samples.items()
    }
    byte_results["samples"] = {
        cache: [{"bytes": visit["bytes"], "entries": visit["entries"]} for visit in visits]
        for cache, visits in samples.items()
    }
    return {"boot": boot, "bytes": byte_results, "_keep": keep}


def cpu_summary(visits: list[Json | None]) -> Json:
    """Statistics of each CPU part over visits (each `cpu_used`'s result, or None where
    it was not measured); a part is left out unless every visit has it."""
    return {
        part: summary([float(visit[part]) for visit in visits if visit is not None])
        for part in CPU_PARTS
        if all(visit is not None and visit[part] is not None for visit in visits)
    }


# Resolves with "kept" once the worker marked pagecontext:snapshot-kept, with
# "no-cache-api" at once if it has no Cache API (a third-party frame's worker, where
# storage is blocked: it keeps nothing), or with "not-kept" after `ms`.
KEPT_JS: Final = """(ms) => new Promise((resolve) => {
  const end = performance.now() + ms;
  const check = () => performance.getEntriesByName("pagecontext:snapshot-kept").length
    ? resolve("kept") : performance.now() > end ? resolve("not-kept") : setTimeout(check, 50);
  caches.open("pagecontext-snapshot").then(check, () => resolve("no-cache-api"));
})"""


def worker_marks(page: Page, origins: Origins, name: str) -> Json:
    """Each worker's detail of the mark `name`, waiting for it: `rehearsed` ({ms,
    longest}: its rehearsal of a selection's path, pagecontext.rehearsal) and
    `call-sites-provoked` ({provoked, ms, longest}: pagecontext.browser.callsites)."""
    return {
        worker_name(worker, origins): worker.evaluate(MARK_DETAIL_JS, name)
        for worker in page.workers
    }


def _count_by_worker(visits: list[dict[str, dict[str, str | None]]]) -> Json:
    """Per worker and part, how many visits had each value: {"page_worker":
    {"snapshot-opened": {"cache": 5}}}."""
    counts: Json = {}
    for visit in visits:
        for worker, parts in visit.items():
            for part, value in parts.items():
                seen = counts.setdefault(worker, {}).setdefault(part, {})
                seen[str(value)] = seen.get(str(value), 0) + 1
    return counts


def wait_kept(page: Page, origins: Origins) -> dict[str, str]:
    """Let each worker of `page` keep what its next visit reads from the Cache API before
    the tab closes, as it would for a visitor who stays on the page; return what each
    did ("kept", "no-cache-api", "not-kept")."""
    return {
        worker_name(worker, origins): str(worker.evaluate(KEPT_JS, STEP_TIMEOUT_MS))
        for worker in page.workers
    }


def _page_bytes(page: Page) -> Json:
    """Bytes on the wire of the page's frame and its worker so far (as `bytes` counts
    them, the iframe's entry left out)."""
    entries: list[Json] = page.main_frame.evaluate(RESOURCES_JS)
    for worker in page.workers:
        entries += worker.evaluate(RESOURCES_JS)
    kept = [item for item in entries if item["type"] != "iframe"]
    return {
        "transfer": sum(int(item["transfer"]) for item in kept),
        "responses": len(kept),
        "from_network": sum(1 for item in kept if int(item["transfer"]) > 0),
    }


def run_page_alone(
    browser: Browser, origins: Origins, plan: Plan, log: Callable[[str], None]
) -> Json:
    """The page's boot with no second frame competing: cold and warm visits like boot's
    (as many, in fresh contexts of their own), of the page on `origins.page_alone`,
    whose assistant origin nobody serves: the iframe's navigation is refused by the
    network, so only the page's edge and core boot, and no request is intercepted (the
    HTTP cache works as in any visit). Until the page is ready: its ready time, the CPU
    seconds used, and the page's bytes on the wire. This separates what one frame costs
    from what the two frames' boots cost each other on this machine."""
    cdp = browser.new_browser_cdp_session()
    samples: dict[str, list[Json]] = {"cold": [], "warm": []}
    for index in range(plan.boot_rounds):
        context = new_context(browser)
        for cache in ("cold", "warm"):
            page = context.new_page()
            before = cpu_snapshot(cdp)
            page.goto(origins.page_alone + "/", wait_until="commit")
            page.wait_for_function("() => window.__pcBench.states.ready", timeout=BOOT_TIMEOUT_MS)
            cpu = cpu_used(before, cpu_snapshot(cdp))
            ready = float(
                page.evaluate("() => window.__pcBench.states.ready - window.__pcBench.timeOrigin")
            )
            samples[cache].append(
                {"ready_ms": _round(ready), "cpu_s": cpu, "bytes": _page_bytes(page)}
            )
            if cache == "cold":
                wait_kept(page, origins)
            page.close()
        context.close()
        cold, warm = samples["cold"][-1], samples["warm"][-1]
        log(
            f"page alone {index + 1}/{plan.boot_rounds}: ready {cold['ready_ms']:.0f} ms "
            f"cold, {warm['ready_ms']:.0f} ms warm; {cold['bytes']['transfer']:,} / "
            f"{warm['bytes']['transfer']:,} bytes on the wire ({warm['bytes']['from_network']}"
            f" of {warm['bytes']['responses']} warm responses from the network)"
        )
    return {
        cache: {
            "ready_ms": summary([float(visit["ready_ms"]) for visit in visits]),
            "cpu_s": cpu_summary([visit["cpu_s"] for visit in visits]),
            "bytes": {
                key: summary([float(visit["bytes"][key]) for visit in visits])
                for key in ("transfer", "responses", "from_network")
            },
        }
        for cache, visits in samples.items()
    } | {"samples": samples}


# -- latency ------------------------------------------------------------------------------


def _panel_revision(panel: Frame) -> int:
    return int(panel.evaluate("() => window.__pcBench.panel.current"))


# The panel's waits poll on a timer: Chromium stops the animation frames of a cross-site
# frame scrolled out of view (a "Show me" scrolls the page), which a `raf` poll waits on.
PANEL_POLL_MS = 20


def _wait_revision(panel: Frame, revision: int, timeout_ms: int = STEP_TIMEOUT_MS) -> None:
    panel.wait_for_function(
        "rev => window.__pcBench.panel.current >= rev",
        arg=revision,
        polling=PANEL_POLL_MS,
        timeout=timeout_ms,
    )


def _frame_counts(frame: Frame) -> dict[str, int]:
    """A frame's port refusals and its worker's internal errors, from a fresh report of
    its worker (`pagecontext.diagnose()`, published on `<html>`)."""
    seq = frame.evaluate("() => pagecontext.diagnose()")
    frame.wait_for_function(
        "seq => document.documentElement.dataset.pcDiagnosticsSeq === String(seq)",
        arg=seq,
        polling=PANEL_POLL_MS,
        timeout=STEP_TIMEOUT_MS,
    )
    counts: dict[str, str] = frame.evaluate(
        """() => { const d = document.documentElement.dataset;
             return {refused: d.pcPortRefused, internalErrors: d.pcInternalErrors}; }"""
    )
    return {name: int(value) for name, value in counts.items()}


def never_goes_back(shown: Sequence[int], start: int) -> bool:
    """True if every revision in `shown` (the chip's revisions since a burst began, in
    the order shown) is newer than `start` (the one before the burst) and none is older
    than the one shown before it."""
    return all(revision > start for revision in shown) and all(
        earlier <= later for earlier, later in pairwise(shown)
    )


def run_latency(page: Page, origins: Origins, plan: Plan, log: Callable[[str], None]) -> Json:
    """Select -> committed chip, and Show me -> applied: single, then under bursts."""
    panel = panel_frame(page, origins)
    panel.evaluate("() => window.__pcBench.watchPanel()")
    refs: list[str] = page.evaluate(
        "() => [...document.querySelectorAll('tr[data-pc-resource-ref]')]"
        ".map((row) => row.getAttribute('data-pc-resource-ref'))"
    )
    revision = _panel_revision(panel)
    # Playwright's first wait in a frame evaluates its own script there (~330 KB, 15-20 ms
    # of the panel's main thread): done now, so that the first selection does not pay it.
    _wait_revision(panel, revision)

    # When both frames were bound (epoch ms): the first selection is timed from it too.
    bound = max(
        float(frame.evaluate("() => window.__pcBench.states.bound"))
        for frame in (page.main_frame, panel)
    )
    first_after_bound: float | None = None

    # Single selections, one at a time.
    select_single: list[float] = []
    # A selection the panel never showed ends the single selections (the ones after it
    # would wait for it too); the run then fails, naming it.
    select_missed: list[Json] = []
    for i in range(plan.single_n):
        ref = refs[i * 7 % len(refs)]
        t0 = float(page.evaluate("ref => window.__pcBench.selectAndAsk(ref)", ref))
        if first_after_bound is None:
            first_after_bound = t0 - bound
        revision += 1
        try:
            _wait_revision(panel, revision)
        except PlaywrightTimeoutError:
            select_missed.append({"index": i, "revision": revision, "why": "never committed"})
            break
        shown = panel.evaluate("rev => window.__pcBench.panel.shown[rev]", revision)
        if shown is None:
            select_missed.append({"index": i, "revision": revision, "why": "skipped"})
            break
        select_single.append(float(shown) - t0)
    if select_single:
        median = statistics.median(select_single)
        log(f"latency: {plan.single_n} single selections, median {median:.1f} ms")

    # Single commands, one at a time; each must be applied (its receipt is the page's
    # answer to a command on the current revision, which nothing replaces meanwhile).
    command_single: list[float] = []
    single_statuses: dict[str, int] = {}
    not_applied: list[Json] = []
    first_command: Json | None = None
    for i in range(plan.single_n):
        outcome: Json = panel.evaluate("() => window.__pcBench.show()")
        status = str(outcome["status"])
        single_statuses[status] = single_statuses.get(status, 0) + 1
        spent = float(outcome["t"]) - float(outcome["t0"])
        if first_command is None:
            first_command = {"status": status, "ms": spent}
        if status == "applied":
            command_single.append(spent)
        else:
            not_applied.append(
                {"index": i, "status": status, "text": str(outcome["text"]), "ms": _round(spent)}
            )
    log(f"latency: {plan.single_n} single commands, statuses {single_statuses}")

    # Bursts: `burst_size` selections in one task, each shared; Show me pressed again and
    # again (each after the previous one settled) while the panel is behind.
    select_burst: list[float] = []
    command_burst: list[float] = []
    bursts: list[Json] = []
    for index in range(plan.bursts):
        # What the panel has shown so far: the burst's revisions are those shown after.
        start_revision, order_from = panel.evaluate(
            "() => [window.__pcBench.panel.current, window.__pcBench.panel.order.length]"
        )
        start_revision, order_from = int(start_revision), int(order_from)
        page_revision = int(page.evaluate("() => document.documentElement.dataset.pcRevision"))
        target = start_revision + plan.burst_size
        # Each frame's refusals and internal errors, before and after: a burst of valid
        # selections is refused nowhere in the assistant (a stale revision would be) and
        # fails nowhere in either worker.
        counts_before = {"page": _frame_counts(page.main_frame), "assistant": _frame_counts(panel)}
        started = time.perf_counter()
        page.evaluate(
            "([n, offset]) => window.__pcBench.startBurst(n, offset)",
            [plan.burst_size, index * 13],
        )
        outcomes: list[Json] = panel.evaluate(
            "target => window.__pcBench.showWhileBelow(target)", target
        )
        page.wait_for_function("() => window.__pcBench.burstResult.done", timeout=STEP_TIMEOUT_MS)
        # A panel that never gets there is recorded below (`ends_on_last_revision`).
        with suppress(PlaywrightTimeoutError):
            _wait_revision(panel, target, timeout_ms=120_000)
        # Each worker's fresh report is also the checkpoint before one more Show me: it
        # answers after everything sent to it before, and its edge applies what it sent
        # in order, so the burst's trailing commands and states have landed.
        counts_after = {"page": _frame_counts(page.main_frame), "assistant": _frame_counts(panel)}
        result: Json = page.evaluate("() => window.__pcBench.burstResult")
        final: Json = panel.evaluate("() => window.__pcBench.show()")
        panel_state: Json = panel.evaluate(
            """([from, to, index]) => { const p = window.__pcBench.panel;
                 const order = p.order.slice(index);
                 const shown = {}; for (let r = from + 1; r <= to; r += 1) shown[r] = p.shown[r];
                 return {current: p.current, ref: p.ref, order, shown}; }""",
            [start_revision, target, order_from],
        )
        highlighted = page.evaluate("() => window.__pcBench.highlighted()")
        order = [int(r) for r in panel_state["order"]]
        t0s = [float(t) for t in result["t0"]]
        latencies = [
            float(panel_state["shown"][str(start_revision + i + 1)]) - t0
            for i, t0 in enumerate(t0s)
            if panel_state["shown"].get(str(start_revision + i + 1)) is not None
        ]
        select_burst.extend(latencies)
        during = [o for o in outcomes if int(o["revisionAtClick"]) < target]
        statuses: dict[str, int] = {}
        receipts: dict[str, int] = {}
        for outcome in during:
            statuses[str(outcome["status"])] = statuses.get(str(outcome["status"]), 0) + 1
            text = str(outcome["text"])
            receipts[text] = receipts.get(text, 0) + 1
            if outcome["status"] == "applied":
                command_burst.append(float(outcome["t"]) - float(outcome["t0"]))
        last_ref = str(result["refs"][-1])
        # The panel coalesces a burst: it need not show every revision, only never go back
        # and end on the last one (burst latencies are those of the revisions it showed).
        checks = {
            "page_revision_before_matches_panel": page_revision == start_revision,
            "ends_on_last_revision": int(panel_state["current"]) == target,
            "ends_on_last_row": panel_state["ref"] == last_ref,
            "revisions_never_go_back": never_goes_back(order, start_revision),
            "final_show_applied": final["status"] == "applied",
            "final_highlight_is_last_row": highlighted == [[last_ref, "focus"]],
            "no_command_unsettled": "timeout" not in statuses,
            "assistant_refused_nothing": counts_after["assistant"]["refused"]
            == counts_before["assistant"]["refused"],
            "no_internal_errors": all(
                counts_after[frame]["internalErrors"] == counts_before[frame]["internalErrors"]
                for frame in ("page", "assistant")
            ),
        }
        last_shown = panel_state["shown"].get(str(target))
        burst: Json = {
            "selections": plan.burst_size,
            "first_revision": start_revision + 1,
            "last_revision": target,
            "page_loop_ms": _round(float(result["end"]) - t0s[0]),
            "first_click_to_last_commit_ms": None
            if last_shown is None
            else _round(float(last_shown) - t0s[0]),
            "revisions_shown": len(order),
            "revisions_drawn": len(latencies),
            "commands_during_burst": statuses,
            "command_receipts": receipts,
            "final_command": final["status"],
            "checks": checks,
            "ok": all(checks.values()),
        }
        bursts.append(burst)
        log(
            f"latency: burst {index + 1}/{plan.bursts}: last commit after "
            f"{burst['first_click_to_last_commit_ms']} ms, commands {statuses}, "
            f"checks {'ok' if burst['ok'] else checks} ({time.perf_counter() - started:.1f} s)"
        )
    return {
        "rehearsal_ms": worker_marks(page, origins, "pagecontext:rehearsed"),
        "call_sites": worker_marks(page, origins, "pagecontext:call-sites-provoked"),
        # When the first selection was made, in ms after both frames were bound.
        "first_after_bound_ms": None if first_after_bound is None else _round(first_after_bound),
        # The first of each after binding: a quick user's first selection and command
        # (the command's time only if it was applied; its status either way).
        "first_ms": {
            "select": select_single[0] if select_single else None,
            "command": first_command["ms"]
            if first_command is not None and first_command["status"] == "applied"
            else None,
            "command_status": None if first_command is None else first_command["status"],
        },
        "select_to_commit_ms": {
            "single": summary(select_single, p99=True),
            "single_missed": select_missed,
            "single_ok": not select_missed,
            # n of the `revisions` the bursts made: only the ones the panel showed.
            "burst": summary(select_burst, p99=True) | {"revisions": plan.bursts * plan.burst_size},
        },
        "command_to_applied_ms": {
            "single": summary(command_single, p99=True),
            "single_statuses": single_statuses,
            "single_not_applied": not_applied,
            "single_ok": not not_applied,
            # A few samples a run (each "Show me" waits behind the burst it was pressed
            # in): no p99 below 100 samples, only the median, min and max.
            "burst": summary(command_burst, p99=len(command_burst) >= 100),
        },
        "bursts": bursts,
        "burst_ok": all(burst["ok"] for burst in bursts),
        "samples": {
            "select_single": [_round(v) for v in select_single],
            "command_single": [_round(v) for v in command_single],
            "command_burst": [_round(v) for v in command_burst],
        },
    }


def run_render(page: Page, origins: Origins, plan: Plan, log: Callable[[str], None]) -> Json:
    """The demo table built anew with many rows (`RENDER_ROWS`) and reported: the page's
    main-thread time of the report (pagecontext reads the objects in the dispatch), for
    new rows and for the same rows reported again (a list scrolled); then Show me on a
    row of the largest table, each of which must be applied."""
    panel = panel_frame(page, origins)
    sizes: Json = {}
    generation = int(
        page.evaluate("() => document.querySelector('#sales-table').dataset.pcGeneration")
    )
    for rows in RENDER_ROWS:
        new: list[float] = []
        same: list[float] = []
        for _ in range(plan.render_rounds):
            generation += 1
            new.append(
                float(
                    page.evaluate(
                        "([n, g]) => window.__pcBench.renderRows(n, g)", [rows, generation]
                    )
                )
            )
            same.append(float(page.evaluate("() => window.__pcBench.reportRender()")))
        sizes[str(rows)] = {"new_rows_ms": summary(new), "same_rows_ms": summary(same)}
        log(
            f"render: {rows:,} rows, report {statistics.median(new):.1f} ms new, "
            f"{statistics.median(same):.1f} ms the same again"
        )
    ref = f"bench-row-{RENDER_ROWS[-1] // 2}"
    revision = _panel_revision(panel) + 1
    page.evaluate("ref => window.__pcBench.selectAndAsk(ref)", ref)
    _wait_revision(panel, revision)
    applied: list[float] = []
    statuses: dict[str, int] = {}
    for _ in range(plan.render_commands):
        outcome: Json = panel.evaluate("() => window.__pcBench.show()")
        status = str(outcome["status"])
        statuses[status] = statuses.get(status, 0) + 1
        if status == "applied":
            applied.append(float(outcome["t"]) - float(outcome["t0"]))
    log(f"render: {plan.render_commands} Show me on a row of {RENDER_ROWS[-1]:,}, {statuses}")
    return {
        "rows": sizes,
        "command_to_applied_ms": summary(applied),
        "command_statuses": statuses,
        "commands_ok": statuses == {"applied": plan.render_commands},
    }


# -- receiver ratio and memory ------------------------------------------------------------


def _heap(session: Any) -> Json:
    session.send("HeapProfiler.collectGarbage")
    usage = session.send("Runtime.getHeapUsage")
    return {"used_bytes": int(usage["usedSize"]), "total_bytes": int(usage["totalSize"])}


# Resolves with the detail of the mark `name` once the worker has made it (at once if it
# has), or with null after `ms`.
MARK_WITHIN_JS: Final = """([name, ms]) => new Promise((resolve) => {
  const found = () => performance.getEntriesByName(name)[0];
  if (found()) return resolve(found().detail);
  const observer = new PerformanceObserver(() => {
    if (found()) { observer.disconnect(); clearTimeout(timer); resolve(found().detail); }
  });
  observer.observe({ type: "mark" });
  const timer = setTimeout(() => { observer.disconnect(); resolve(null); }, ms);
})"""


def _python_worker(page: Page) -> Worker:
    """The receiver page's core worker (`/web/worker.mjs`)."""
    for worker in page.workers:
        if urlsplit(worker.url).path == "/web/worker.mjs":
            return worker
    raise RuntimeError("the receiver page has no /web/worker.mjs worker")


def _worker_heap(browser_cdp: CDPSession, page_cdp: CDPSession, page: Page, url: str) -> Json:
    """The JS heap of the dedicated worker at `url` of `page` (the page `page_cdp` is
    attached to), like `_heap`: a browser session attaches to the worker's target for
    these two commands only, not flattened (a Playwright CDP session sends to its own
    target only), so the commands and their answers go as Target messages."""
    context_id = page_cdp.send("Target.getTargetInfo")["targetInfo"]["browserContextId"]
    targets = [
        info["targetId"]
        for info in browser_cdp.send("Target.getTargets")["targetInfos"]
        if info["type"] == "worker"
        and info["url"] == url
        and info.get("browserContextId") == context_id
    ]
    if len(targets) != 1:
        raise RuntimeError(f"{len(targets)} worker targets at {url}")
    session = browser_cdp.send("Target.attachToTarget", {"targetId": targets[0], "flatten": False})
    session_id = session["sessionId"]
    answers: dict[int, Json] = {}

    def receive(event: Json) -> None:
        if event.get("sessionId") == session_id:
            message = json.loads(event["message"])
            if isinstance(message.get("id"), int):
                answers[message["id"]] = message

    def send(number: int, method: str) -> Json:
        browser_cdp.send(
            "Target.sendMessageToTarget",
            {"sessionId": session_id, "message": json.dumps({"id": number, "method": method})},
        )
        deadline = time.perf_counter() + STEP_TIMEOUT_MS / 1000
        while number not in answers:
            if time.perf_counter() > deadline:
                raise TimeoutError(f"no answer to {method} from the worker at {url}")
            # A round trip of the protocol: Playwright delivers the events that came first.
            browser_cdp.send("Target.getTargets")
        answer = answers[number]
        if "error" in answer:
            raise RuntimeError(f"{method} in the worker at {url}: {answer['error']}")
        result: Json = answer["result"]
        return result

    browser_cdp.on("Target.receivedMessageFromTarget", receive)
    try:
        send(1, "HeapProfiler.collectGarbage")
        usage = send(2, "Runtime.getHeapUsage")
    finally:
        browser_cdp.remove_listener("Target.receivedMessageFromTarget", receive)
        browser_cdp.send("Target.detachFromTarget", {"sessionId": session_id})
    return {"used_bytes": int(usage["usedSize"]), "total_bytes": int(usage["totalSize"])}


def _pyodide_memory(diagnostics: Json) -> Json:
    """The core worker's memory and the counters that say whether every message was
    committed: each is committed, refused, not plain data or an internal error."""
    return {
        "heap_bytes": int(diagnostics["heapBytes"]),
        "in_use_bytes": int(diagnostics["heapInUse"]),
        "py_objects": int(diagnostics["pyObjects"]),
        "refused": int(diagnostics["refused"]),
        "not_plain_data": int(diagnostics["notPlainData"]),
        "internal_errors": int(diagnostics["internalErrors"]),
    }


def run_receiver(
    browser: Browser, origins: Origins, plan: Plan, log: Callable[[str], None]
) -> Json:
    """The Python core worker against a plain-JS receiver, interleaved, in one page."""
    context = new_context(browser)
    page = context.new_page()
    page.goto(origins.page + "/bench/receiver.html")
    page.wait_for_selector("html[data-bench-ready]", state="attached", timeout=STEP_TIMEOUT_MS)
    cdp = context.new_cdp_session(page)
    starts: Json = {}
    for kind in ("python", "js"):
        starts[kind] = page.evaluate("kind => window.bench.start(kind)", kind)
    log(
        f"receiver: python worker bound after {starts['python']['connectedMs']:.0f} ms, "
        f"js after {starts['js']['connectedMs']:.0f} ms"
    )
    # Once bound, the core worker rehearses a selection's path and then provokes the
    # interpreter's call sites (pagecontext.rehearsal, pagecontext.browser.callsites);
    # its last provocation marks pagecontext:call-sites-provoked. The rounds and the
    # memory's "before" wait for that mark, so that neither overlaps that work.
    python_worker = _python_worker(page)
    waited = time.perf_counter()
    provoked = python_worker.evaluate(
        MARK_WITHIN_JS, ["pagecontext:call-sites-provoked", BOOT_TIMEOUT_MS]
    )
    if provoked is None:
        raise RuntimeError("the python worker never marked pagecontext:call-sites-provoked")
    warm_up = {
        "call_sites": provoked,
        "rehearsal": python_worker.evaluate(MARK_DETAIL_JS, "pagecontext:rehearsed"),
        "waited_ms": _round((time.perf_counter() - waited) * 1000),
    }
    log(f"receiver: python worker's call sites provoked, waited {warm_up['waited_ms']:.0f} ms")
    browser_cdp = browser.new_browser_cdp_session()

    def worker_heap() -> Json:
        return _worker_heap(browser_cdp, cdp, page, python_worker.url)

    # One round each, untimed, before the timed rounds and the memory's "before": the
    # first round of each was its slowest (V8 still compiling its paths), the first
    # context committed is one the session then holds, and the worker's memory in use
    # settled only once it had taken a round's worth (a shorter warm-up left ~2 KB more
    # in use after the first timed round, and none after the rounds that followed).
    for kind in ("python", "js"):
        page.evaluate("([kind, n]) => window.bench.round(kind, n)", [kind, plan.receiver_messages])
    diagnose_python = "() => window.bench.diagnose('python')"
    page.evaluate(diagnose_python)  # the report's own first run, not measured
    memory: Json = {
        "js_heap": {"before": _heap(cdp)},
        "worker_js_heap": {"before": worker_heap()},
        "pyodide": {"before": _pyodide_memory(page.evaluate(diagnose_python))},
    }
    rounds: dict[str, list[Json]] = {"python": [], "js": []}
    for index in range(plan.receiver_rounds):
        # Alternate which goes first, so neither always runs on a freshly idle browser.
        order = ("python", "js") if index % 2 == 0 else ("js", "python")
        for kind in order:
            result: Json = page.evaluate(
                "([kind, n]) => window.bench.round(kind, n)", [kind, plan.receiver_messages]
            )
            rounds[kind].append(result)
            log(
                f"receiver round {index + 1}/{plan.receiver_rounds} {kind}: "
                f"{result['usPerMessage']:.1f} us/message ({result['ms']:.0f} ms)"
            )
            if index == 0 and kind == "python":
                memory["js_heap"]["after"] = _heap(cdp)
                memory["worker_js_heap"]["after"] = worker_heap()
                memory["pyodide"]["after"] = _pyodide_memory(page.evaluate(diagnose_python))
    memory["js_heap"]["after_all_rounds"] = _heap(cdp)
    memory["worker_js_heap"]["after_all_rounds"] = worker_heap()
    memory["pyodide"]["after_all_rounds"] = _pyodide_memory(page.evaluate(diagnose_python))
    browser_cdp.detach()
    js_diagnostics: Json = page.evaluate("() => window.bench.diagnose('js')")
    refused_in_rounds = memory["pyodide"]["after_all_rounds"]["refused"] + int(
        js_diagnostics["refused"]
    )
    # Every message committed: none refused, none dropped as not plain data, none lost
    # to an internal error (the python worker's counts from before the timed rounds).
    python_before, python_after = (
        memory["pyodide"]["before"],
        memory["pyodide"]["after_all_rounds"],
    )
    lost_in_rounds = (
        int(js_diagnostics["notPlainData"])
        + python_after["not_plain_data"]
        - python_before["not_plain_data"]
        + python_after["internal_errors"]
        - python_before["internal_errors"]
    )
    # After the timed rounds: the same invalid messages to both; same refusals expected.
    equivalence = {
        kind: page.evaluate("kind => window.bench.equivalence(kind)", kind)
        for kind in ("python", "js")
    }
    cases: list[Json] = []
    for (name, python_reason), (_, js_reason) in zip(
        equivalence["python"]["outcomes"], equivalence["js"]["outcomes"], strict=True
    ):
        expected = name.split(":")[0]
        cases.append({"case": name, "python": python_reason, "js": js_reason})
        cases[-1]["same"] = python_reason == js_reason
        cases[-1]["as_expected"] = python_reason == expected and js_reason == expected
    refused_by_both = all(
        case["python"] not in ("committed", "nothing")
        and case["js"] not in ("committed", "nothing")
        for case in cases
    ) and all(
        equivalence[kind]["sentinelCommitted"]
        and equivalence[kind]["notPlainData"]
        == sum(1 for c in cases if c["python"] == "not plain data")
        for kind in ("python", "js")
    )
    differences = [case for case in cases if not case["same"]]
    unexpected = [case for case in cases if not case["as_expected"]]
    log(
        f"receiver: {len(cases)} invalid messages, refused by both: {refused_by_both}, "
        f"reasons differ: {[(c['case'], c['python'], c['js']) for c in differences]}"
    )
    memory["messages_before_after"] = plan.receiver_messages
    memory["messages_after_all_rounds"] = plan.receiver_messages * plan.receiver_rounds
    for key in ("js_heap", "worker_js_heap", "pyodide"):
        part = memory[key]
        field = "heap_bytes" if key == "pyodide" else "used_bytes"
        part["growth_bytes"] = part["after"][field] - part["before"][field]
        part["growth_bytes_after_first_round"] = (
            part["after_all_rounds"][field] - part["after"][field]
        )
    pyodide = memory["pyodide"]
    pyodide["growth_in_use_bytes"] = (
        pyodide["after"]["in_use_bytes"] - pyodide["before"]["in_use_bytes"]
    )
    pyodide["growth_in_use_bytes_after_first_round"] = (
        pyodide["after_all_rounds"]["in_use_bytes"] - pyodide["after"]["in_use_bytes"]
    )
    memory["pyodide"]["growth_objects"] = (
        memory["pyodide"]["after"]["py_objects"] - memory["pyodide"]["before"]["py_objects"]
    )
    # The first round commits the session's first context, which it then holds (a few
    # dozen objects); the rounds after it show whether the objects grow with messages.
    memory["pyodide"]["growth_objects_after_first_round"] = (
        memory["pyodide"]["after_all_rounds"]["py_objects"]
        - memory["pyodide"]["after"]["py_objects"]
    )
    cdp.detach()
    context.close()

    python_us = [float(r["usPerMessage"]) for r in rounds["python"]]
    js_us = [float(r["usPerMessage"]) for r in rounds["js"]]
    # Each round ended on the state showing its last revision (the wait proves it); both
    # receivers coalesce state messages, so a round may post far fewer than it commits.
    complete = (
        refused_in_rounds == 0
        and lost_in_rounds == 0
        and all(int(r["states"]) >= 1 for kind_rounds in rounds.values() for r in kind_rounds)
    )
    ratio = statistics.median(python_us) / statistics.median(js_us)
    # Each round's ratio: python over js of the same round (the two ran back to back).
    per_round = [py / js for py, js in zip(python_us, js_us, strict=True)]
    return {
        "receiver_ratio": {
            "messages_per_round": plan.receiver_messages,
            "rounds_each": plan.receiver_rounds,
            "python_us_per_message": summary(python_us),
            "js_us_per_message": summary(js_us),
            "ratio": _round(ratio),
            "ratio_min_max": [_round(min(per_round)), _round(max(per_round))],
            "ratio_per_round": [_round(value) for value in per_round],
            "post_ms_per_round": {
                kind: summary([float(r["postMs"]) for r in kind_rounds])
                for kind, kind_rounds in rounds.items()
            },
            "all_committed_nothing_refused": complete,
            "invalid_refused_by_both": refused_by_both,
            "refusal_reason_differences": differences,
            "refusal_reason_unexpected": unexpected,
            "invalid_cases": cases,
            "python_warm_up": warm_up,
            "worker_start_ms": {
                kind: {key: _round(float(value)) for key, value in start.items()}
                for kind, start in starts.items()
            },
            "samples": rounds,
        },
        "memory": memory,
    }


# -- output -------------------------------------------------------------------------------


def _ms(part: Json) -> str:
    if not part.get("n"):
        return "-"
    return f"{part['median']:.0f} [{part['min']:.0f}-{part['max']:.0f}]"


def _pct(part: Json) -> str:
    if not part.get("n"):
        return "- (n=0)"
    if "p99" not in part:
        return (
            f"median {part['median']:.1f}  min {part['min']:.1f}  max {part['max']:.1f}  "
            f"(n={part['n']}: too few for a p99)"
        )
    return (
        f"p50 {part['p50']:.1f}  p99 {part['p99']:.1f}  "
        f"min {part['min']:.1f}  max {part['max']:.1f}  (n={part['n']})"
    )


def _kb(value: float) -> str:
    return f"{value / 1024:,.1f} KiB"


def _step(part: Json | None) -> str:
    return "-" if part is None else f"{part['median']:.0f}"


def _boot_lines(results: Json) -> list[str]:
    lines: list[str] = []
    boot = results["boot"]
    n = boot["cold"]["page"]["bound_ms"]["n"]
    lines.append(f"boot (ms from navigation start, median [min-max], n={n})   cold / warm")
    for frame in ("page", "assistant"):
        for key, label in (("ready_ms", "ready"), ("bound_ms", "bound")):
            lines.append(
                f"  {frame:<9} {label:<6} {_ms(boot['cold'][frame][key]):>22}"
                f" / {_ms(boot['warm'][frame][key])}"
            )
    for frame in ("page", "assistant"):
        for cache in ("cold", "warm"):
            lt = boot[cache][frame]["long_tasks"]
            lines.append(
                f"  {frame:<9} long tasks {cache}: count {lt['count']['median']:.0f}, "
                f"longest {lt['longest_ms']['median']:.0f} ms, "
                f"TBT {lt['tbt_ms']['median']:.0f} ms (medians; max TBT "
                f"{lt['tbt_ms']['max']:.0f})"
            )
            causes = boot[cache][frame]["long_frame_causes"]
            for cause, seen in list(causes.items())[:4]:
                lines.append(
                    f"    long frames: {seen['count']} x {cause} "
                    f"(up to {seen['longest_ms']:.0f} ms)"
                )
    lines.append("worker steps (ms from navigation start, median)   cold / warm")
    for worker in ("page_worker", "assistant_worker"):
        cold = boot["cold"][worker]["steps_ms"]
        warm = boot["warm"][worker]["steps_ms"]
        for step in WORKER_STEPS:
            if step in cold or step in warm:
                lines.append(
                    f"  {worker:<17} {step:<18} "
                    f"{_step(cold.get(step)):>6} / {_step(warm.get(step))}"
                )
    sources = boot.get("sources", {})
    for worker, parts in sorted(sources.get("warm", {}).items()):
        kept = sources.get("kept_after_cold", {}).get(worker, {}).get("kept", {})
        lines.append(
            f"  {worker:<17} warm visits read the bundle from "
            + ", ".join(f"{where} {n}x" for where, n in sorted(parts["snapshot-opened"].items()))
            + "; after cold: "
            + (", ".join(f"{what} {n}x" for what, n in sorted(kept.items())) or "-")
        )
    lines += _cpu_lines(boot)
    lines += _page_alone_lines(boot)
    lines.append("bytes on the wire (transferSize, median)        first / repeat visit")
    for part in ("total", "page", "assistant", "page_worker", "assistant_worker"):
        first = results["bytes"]["first_visit"][part]
        repeat = results["bytes"]["repeat_visit"][part]
        lines.append(
            f"  {part:<17} {_kb(first['transfer']['median']):>14} "
            f"({first['responses']['median']:.0f} responses) / "
            f"{_kb(repeat['transfer']['median'])} "
            f"({repeat['from_network']['median']:.0f} of "
            f"{repeat['responses']['median']:.0f} from network)"
        )
    late = results["bytes"]["first_visit"].get("late", [])
    lines.append(
        f"  requested after the bytes were read, until the workers' post-bind work ended: "
        f"{len(late)} ({sum(int(item['transfer']) for item in late):,} bytes)"
    )
    return lines


CPU_LABELS: Final = {
    "total": "all browser processes",
    "renderers": "renderers",
    "renderer_main_threads": "  main threads",
    "renderer_workers": "  workers (the cores)",
    "renderer_background": "  background pool",
    "renderer_other": "  other threads",
    "browser": "browser process",
    "network": "network service",
    "gpu": "GPU process",
    "other_processes": "other processes",
    "rest_of_machine": "rest of the machine",
}


def _cpu_lines(boot: Json) -> list[str]:
    cold, warm = boot["cold"].get("cpu_s", {}), boot["warm"].get("cpu_s", {})
    if "total" not in cold or "total" not in warm:
        return []
    cores = os.cpu_count() or 1
    lines = ["CPU seconds, navigation to both frames bound (median)   cold / warm"]
    for part in CPU_PARTS:
        if part not in cold or part not in warm:
            continue
        line = f"  {CPU_LABELS[part]:<24} {cold[part]['median']:5.2f} / {warm[part]['median']:.2f}"
        if part == "total":
            line += (
                f"  (on {cores} cores, {cold[part]['median'] / cores:.2f} / "
                f"{warm[part]['median'] / cores:.2f} s at the least)"
            )
        elif part == "rest_of_machine":
            line += "  (the bench, its servers, other work)"
        lines.append(line)
    return lines


def _page_alone_lines(boot: Json) -> list[str]:
    alone = boot.get("page_alone")
    if alone is None:
        return []
    lines = [
        "page alone (the assistant's origin unreachable)   cold / warm",
        f"  page ready {_ms(alone['cold']['ready_ms']):>25} / {_ms(alone['warm']['ready_ms'])}",
    ]
    cold, warm = alone["cold"]["cpu_s"].get("total"), alone["warm"]["cpu_s"].get("total")
    if cold is not None and warm is not None:
        lines.append(f"  CPU seconds until ready {cold['median']:14.2f} / {warm['median']:.2f}")
    return lines


def _latency_lines(results: Json) -> list[str]:
    lines: list[str] = []
    lat = results["latency"]
    lines.append("latency (ms)")
    lines.append(f"  select -> commit, single   {_pct(lat['select_to_commit_ms']['single'])}")
    burst = lat["select_to_commit_ms"]["burst"]
    lines.append(
        f"  select -> commit, burst    {_pct(burst)}"
        + (f" of {burst['revisions']:,} revisions" if "revisions" in burst else "")
    )
    command = lat["command_to_applied_ms"]
    lines.append(f"  command -> applied, single {_pct(command['single'])}")
    for missed in command.get("single_not_applied", []):
        lines.append(
            f"    single command {missed['index'] + 1} not applied: {missed['status']} "
            f"{missed['text']!r}"
        )
    lines.append(f"  command -> applied, burst  {_pct(command['burst'])}")
    if "first_ms" in lat:
        first = lat["first_ms"]
        select = "-" if first["select"] is None else f"{first['select']:.1f} ms"
        applied = (
            f"{first['command']:.1f} ms"
            if first["command"] is not None
            else f"not applied ({first.get('command_status')})"
        )
        after = lat.get("first_after_bound_ms")
        lines.append(
            "  the first after binding"
            + ("" if after is None else f" (selected {after:.0f} ms after it)")
            + f": select -> commit {select}, command -> applied {applied}"
        )
    for worker, spent in sorted(lat.get("rehearsal_ms", {}).items()):
        lines.append(
            f"  {worker} rehearsal after binding: {spent['ms']:.0f} ms in all, "
            f"longest step {spent['longest']:.0f} ms"
        )
    for worker, provoked in sorted(lat.get("call_sites", {}).items()):
        lines.append(
            f"  {worker} call sites provoked {provoked['provoked']} times, "
            f"{provoked['ms']:.0f} ms in all, longest {provoked['longest']:.0f} ms"
        )
    for index, burst in enumerate(lat["bursts"]):
        lines.append(
            f"  burst {index + 1}: {burst['selections']} selections, last commit "
            f"{burst['first_click_to_last_commit_ms']} ms after the first click; "
            f"commands {burst['commands_during_burst']}; checks "
            f"{'ok' if burst['ok'] else burst['checks']}"
        )
    return lines


def _render_lines(results: Json) -> list[str]:
    render = results["render"]
    lines = ["render report of the demo table (ms of the page's main thread)"]
    for rows, part in render["rows"].items():
        lines.append(
            f"  {int(rows):>6,} rows: new {_ms(part['new_rows_ms'])}; "
            f"the same again {_ms(part['same_rows_ms'])}"
        )
    lines.append(
        f"  Show me on a row of {RENDER_ROWS[-1]:,}: {_ms(render['command_to_applied_ms'])}"
        f" {render['command_statuses']}"
    )
    return lines


def _receiver_lines(results: Json) -> list[str]:
    lines: list[str] = []
    rr = results["receiver_ratio"]
    lines.append(
        f"receiver ({rr['messages_per_round']:,} contexts x {rr['rounds_each']} rounds each, "
        f"median us/message [min-max])"
    )
    py, js = rr["python_us_per_message"], rr["js_us_per_message"]
    lines.append(f"  python {py['median']:.1f} [{py['min']:.1f}-{py['max']:.1f}]")
    lines.append(f"  js     {js['median']:.2f} [{js['min']:.2f}-{js['max']:.2f}]")
    lines.append(
        f"  ratio  {rr['ratio']:.1f} (per round {rr['ratio_min_max'][0]:.1f}-"
        f"{rr['ratio_min_max'][1]:.1f}); all committed, none refused: "
        f"{rr['all_committed_nothing_refused']}"
    )
    lines.append(
        f"  {len(rr['invalid_cases'])} invalid messages refused by both: "
        f"{rr['invalid_refused_by_both']}; reasons that differ (case: python / js): "
        + (
            "; ".join(
                f"{c['case']}: {c['python']} / {c['js']}" for c in rr["refusal_reason_differences"]
            )
            or "none"
        )
    )
    mem = results["memory"]
    heap, py_mem = mem["js_heap"], mem["pyodide"]
    lines.append(f"memory (before / after {mem['messages_before_after']:,} messages / after all)")
    for label, part in (
        ("bench page JS heap", heap),
        ("worker JS heap", mem.get("worker_js_heap")),
    ):
        if part is not None:
            lines.append(
                f"  {label:<18} {_kb(part['before']['used_bytes'])} / "
                f"{_kb(part['after']['used_bytes'])} / "
                f"{_kb(part['after_all_rounds']['used_bytes'])}"
            )
    lines.append(
        f"  Pyodide heap       {_kb(py_mem['before']['heap_bytes'])} / "
        f"{_kb(py_mem['after']['heap_bytes'])} / {_kb(py_mem['after_all_rounds']['heap_bytes'])}"
    )
    lines.append(
        f"  Pyodide in use     {py_mem['before']['in_use_bytes']:,} / "
        f"{py_mem['after']['in_use_bytes']:,} / {py_mem['after_all_rounds']['in_use_bytes']:,}"
        " bytes"
    )
    lines.append(
        f"  Python objects     {py_mem['before']['py_objects']:,} / "
        f"{py_mem['after']['py_objects']:,} / {py_mem['after_all_rounds']['py_objects']:,}"
    )
    return lines


# The performance budgets (docs/performance.md), as limits on this run's numbers.
LONG_TASK_BUDGET_MS: Final = 50.0
READY_WARM_BUDGET_MS: Final = 1000.0
READY_COLD_BUDGET_MS: Final = 3000.0
P99_BUDGET_MS: Final = 16.0
RATIO_BUDGET: Final = 1.5
FIRST_VISIT_BUDGET_BYTES: Final = 6_000_000
# malloc's bytes in use move by some bytes with the sizes of what is freed and taken
# again (a counter's int, a dict resized): a growth within this is not a leak, which
# over 10,000 messages would be at least one small object per message, 320 KB.
IN_USE_SLACK_BYTES: Final = 1024


def _budget(name: str, budget: str, measured: str, met: bool) -> Json:
    return {"name": name, "budget": budget, "measured": measured, "met": met}


def budgets(results: Json) -> list[Json]:
    """Each design budget the sections that ran can judge: what it asks, what this run
    measured, and whether that is within it. Medians over visits or rounds, except
    where the budget names a percentile or says "ever" (long tasks: any visit)."""
    rows: list[Json] = []
    if "boot" in results:
        boot = results["boot"]
        frames = [(cache, frame) for cache in ("cold", "warm") for frame in ("page", "assistant")]
        longest = max(boot[c][f]["long_tasks"]["longest_ms"]["max"] for c, f in frames)
        typical = max(boot[c][f]["long_tasks"]["longest_ms"]["median"] for c, f in frames)
        # Chromium reports a `longtask` entry only for a task over 50 ms, and rounds its
        # duration to a whole millisecond: an entry of "50 ms" is a task over the
        # budget. Any entry at all (a longest above 0) is over.
        rows.append(
            _budget(
                "long tasks at boot",
                f"none > {LONG_TASK_BUDGET_MS:.0f} ms",
                f"longest {longest:.0f} ms in any visit ({typical:.0f} ms at the median)",
                longest == 0,
            )
        )
        for cache, limit in (("warm", READY_WARM_BUDGET_MS), ("cold", READY_COLD_BUDGET_MS)):
            ready = {f: boot[cache][f]["ready_ms"]["median"] for f in ("page", "assistant")}
            rows.append(
                _budget(
                    f"ready, {cache}",
                    f"<= {limit:.0f} ms",
                    f"page {ready['page']:.0f} ms, assistant {ready['assistant']:.0f} ms",
                    max(ready.values()) <= limit,
                )
            )
        first = results["bytes"]["first_visit"]["total"]["transfer"]["median"]
        rows.append(
            _budget(
                "bytes, first visit",
                f"<= {FIRST_VISIT_BUDGET_BYTES / 1e6:.0f} MB",
                f"{first / 1e6:.1f} MB",
                first <= FIRST_VISIT_BUDGET_BYTES,
            )
        )
    if "latency" in results:
        lat = results["latency"]
        for name, key in (
            ("select -> commit, p99", "select_to_commit_ms"),
            ("command -> applied, p99", "command_to_applied_ms"),
        ):
            single = lat[key]["single"]
            p99 = single.get("p99")
            # A command never applied, or a selection never shown, has no time: the
            # budget is not met.
            missed = len(lat[key].get("single_not_applied", [])) + len(
                lat[key].get("single_missed", [])
            )
            measured = "-" if p99 is None else f"{p99:.1f} ms (n={single.get('n')})"
            if missed:
                measured += f", {missed} never done"
            rows.append(
                _budget(
                    name,
                    f"<= {P99_BUDGET_MS:.0f} ms",
                    measured,
                    p99 is not None and p99 <= P99_BUDGET_MS and not missed,
                )
            )
        rows.append(
            _budget(
                "1,000-selection bursts",
                "end on the last revision, nothing stale applied",
                "ok" if lat["burst_ok"] else "failed",
                bool(lat["burst_ok"]),
            )
        )
    if "render" in results:
        # The largest table's reports, new rows and the same again: the longest of any.
        largest = results["render"]["rows"][str(RENDER_ROWS[-1])]
        longest = max(largest["new_rows_ms"]["max"], largest["same_rows_ms"]["max"])
        rows.append(
            _budget(
                f"render report, {RENDER_ROWS[-1]:,} rows",
                f"<= {LONG_TASK_BUDGET_MS:.0f} ms of the main thread",
                f"longest {longest:.1f} ms (median {largest['new_rows_ms']['median']:.1f} ms new,"
                f" {largest['same_rows_ms']['median']:.1f} ms the same again)",
                longest <= LONG_TASK_BUDGET_MS,
            )
        )
    if "receiver_ratio" in results:
        ratio = results["receiver_ratio"]["ratio"]
        rows.append(
            _budget("receiver ratio", f"<= {RATIO_BUDGET}x", f"{ratio:.2f}x", ratio <= RATIO_BUDGET)
        )
        # The core's memory across 10,000 messages after the warm-up: the wasm heap's
        # size, the bytes malloc holds in use in it (all of Python's memory: this
        # runtime has no pymalloc) and the live Python objects, then the same across
        # the rounds after it. The worker's JS heap is reported beside them, not
        # judged: a JS heap moves by some KiB between collections.
        pyodide = results["memory"]["pyodide"]
        growth = pyodide["growth_bytes"]
        in_use = pyodide["growth_in_use_bytes"]
        in_use_later = pyodide["growth_in_use_bytes_after_first_round"]
        objects = pyodide["growth_objects"]
        objects_later = pyodide["growth_objects_after_first_round"]
        measured = (
            f"Pyodide heap {growth:+,} bytes, in use {in_use:+,} then {in_use_later:+,} "
            f"bytes; Python objects {objects:+,} then {objects_later:+,}"
        )
        worker = results["memory"].get("worker_js_heap")
        if worker is not None:
            measured += f"; worker JS heap {worker['growth_bytes']:+,} bytes"
        rows.append(
            _budget(
                "memory across 10,000 messages",
                f"no growth (in use within {IN_USE_SLACK_BYTES:,} bytes)",
                measured,
                growth <= 0
                and max(in_use, in_use_later) <= IN_USE_SLACK_BYTES
                and max(objects, objects_later) <= 0,
            )
        )
    return rows


def _budget_lines(rows: list[Json]) -> list[str]:
    lines = ["budgets (docs/performance.md)       budget / this run"]
    for row in rows:
        mark = "met" if row["met"] else "OVER"
        lines.append(f"  {mark:<4} {row['name']:<30} {row['budget']} / {row['measured']}")
    return lines


def table(results: Json) -> str:
    """The short summary printed at the end (of the sections that ran)."""
    lines: list[str] = []
    for key, section in (
        ("boot", _boot_lines),
        ("latency", _latency_lines),
        ("render", _render_lines),
        ("receiver_ratio", _receiver_lines),
    ):
        if key in results:
            lines += section(results)
    if results.get("budgets"):
        lines += _budget_lines(results["budgets"])
    return "\n".join(lines)


# -- main ---------------------------------------------------------------------------------


SECTIONS: Final = ("boot", "latency", "receiver")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a reduced run (under 2 minutes)")
    parser.add_argument(
        "--out", type=Path, default=ROOT / "bench" / "results" / "latest.json", help="JSON file"
    )
    parser.add_argument(
        "--only",
        choices=SECTIONS,
        action="append",
        help="run only this part (repeatable): boot (boot and bytes), latency, "
        "receiver (receiver_ratio and memory)",
    )
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    sections = set(args.only or SECTIONS)
    if not (SITE / "py" / "runtime.json").is_file():
        print("build/site is missing: run `make bench` (it assembles the site)", file=sys.stderr)
        return 2
    began = time.perf_counter()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - began:6.1f} s] {message}", flush=True)

    phases: dict[str, float] = {}
    results: Json = {}
    with (
        tempfile.TemporaryDirectory(prefix="pagecontext-bench-") as tmp,
        serving(Path(tmp)) as origins,
        sync_playwright() as playwright,
    ):
        browser = launch(playwright)
        version = browser.version
        log(f"Chromium {version}; page {origins.page}, assistant {origins.assistant}")
        if "boot" in sections or "latency" in sections:
            mark = time.perf_counter()
            # Latency alone still needs a bound demo: one boot round, not reported.
            boot = run_boot(browser, origins, plan if "boot" in sections else ONE_BOOT, log)
            boot_seconds = time.perf_counter() - mark
            # Latency on the last warm visit's page, as soon as that visit was read; the
            # page-alone visits after it.
            context, page = boot["_keep"]
            if "latency" in sections:
                mark = time.perf_counter()
                results["latency"] = run_latency(page, origins, plan, log)
                phases["latency"] = time.perf_counter() - mark
                # After the latency runs: it builds the page's table anew.
                mark = time.perf_counter()
                results["render"] = run_render(page, origins, plan, log)
                phases["render"] = time.perf_counter() - mark
            context.close()
            if "boot" in sections:
                mark = time.perf_counter()
                results["boot"] = boot["boot"]
                results["bytes"] = boot["bytes"]
                results["boot"]["page_alone"] = run_page_alone(browser, origins, plan, log)
                phases["boot_and_bytes"] = boot_seconds + time.perf_counter() - mark
        if "receiver" in sections:
            mark = time.perf_counter()
            receiver = run_receiver(browser, origins, plan, log)
            phases["receiver_ratio_and_memory"] = time.perf_counter() - mark
            results["receiver_ratio"] = receiver["receiver_ratio"]
            results["memory"] = receiver["memory"]
        browser.close()

    total = time.perf_counter() - began
    meta: Json = {
        "mode": "quick" if args.quick else "full",
        "sections": [section for section in SECTIONS if section in sections],
        "plan": plan.__dict__,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "chromium": version,
        "chromium_args": list(CHROMIUM_ARGS),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load_average": list(os.getloadavg()),
        "seconds": {key: round(value, 1) for key, value in phases.items()}
        | {"total": round(total, 1)},
    }
    ordered: Json = {"meta": meta, "budgets": budgets(results)}
    for key in ("boot", "bytes", "latency", "render", "receiver_ratio", "memory"):
        if key in results:
            ordered[key] = results[key]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(ordered, indent=2) + "\n", encoding="utf-8")
    print()
    print(table(ordered))
    print(f"\nwrote {args.out} in {total:.0f} s")
    failed = []
    if "latency" in results and not results["latency"]["burst_ok"]:
        failed.append("latency.bursts[].checks")
    if "latency" in results and not results["latency"]["command_to_applied_ms"]["single_ok"]:
        failed.append("latency.command_to_applied_ms.single_not_applied")
    if "latency" in results and not results["latency"]["select_to_commit_ms"]["single_ok"]:
        failed.append("latency.select_to_commit_ms.single_missed")
    if "render" in results and not results["render"]["commands_ok"]:
        failed.append("render.command_statuses")
    receiver_ok = results.get("receiver_ratio")
    if receiver_ok is not None and not receiver_ok["all_committed_nothing_refused"]:
        failed.append("receiver_ratio.all_committed_nothing_refused")
    if receiver_ok is not None and not receiver_ok["invalid_refused_by_both"]:
        failed.append("receiver_ratio.invalid_cases")
    if failed:
        print(f"a benchmark check failed: see {', '.join(failed)} in the JSON", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
