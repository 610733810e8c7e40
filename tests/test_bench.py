"""The benchmark's budget verdicts (bench/run.py `budgets`): each design budget judged
from a run's numbers, and only for the sections that ran; and its CPU accounting
(`cpu_used`): what a visit cost each kind of process and renderer thread."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_run", ROOT / "bench" / "run.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_run"] = module
    spec.loader.exec_module(module)
    return module


bench = _load_bench()


def _summary(median: float, maximum: float | None = None) -> dict[str, float]:
    return {"n": 5, "median": median, "min": median, "max": median if maximum is None else maximum}


def results(
    *,
    longest_ms: float = 0,
    longest_any_ms: float = 0,
    ready_warm_ms: float = 900,
    ready_cold_ms: float = 2500,
    first_visit_bytes: float = 5_000_000,
    p99_ms: float = 12,
    burst_ok: bool = True,
    ratio: float = 1.4,
    heap_growth: int = 0,
    in_use_growth: int = 0,
    in_use_growth_later: int = 0,
    objects_growth: int = 0,
    objects_growth_later: int = 0,
    selections_missed: int = 0,
    render_new_ms: float = 5,
    render_same_ms: float = 4,
) -> dict[str, Any]:
    frame = {
        "ready_ms": _summary(ready_warm_ms),
        "long_tasks": {"longest_ms": _summary(longest_ms, longest_any_ms)},
    }
    cold = {**frame, "ready_ms": _summary(ready_cold_ms)}
    single = {"single": {"n": 100, "p99": p99_ms}}
    return {
        "boot": {
            "cold": {"page": cold, "assistant": cold},
            "warm": {"page": frame, "assistant": frame},
        },
        "bytes": {"first_visit": {"total": {"transfer": _summary(first_visit_bytes)}}},
        "latency": {
            "select_to_commit_ms": single
            | {"single_missed": [{"index": i} for i in range(selections_missed)]},
            "command_to_applied_ms": single,
            "burst_ok": burst_ok,
        },
        "render": {
            "rows": {
                "2000": {
                    "new_rows_ms": _summary(3, render_new_ms),
                    "same_rows_ms": _summary(2, render_same_ms),
                }
            }
        },
        "receiver_ratio": {"ratio": ratio},
        "memory": {
            "pyodide": {
                "growth_bytes": heap_growth,
                "growth_in_use_bytes": in_use_growth,
                "growth_in_use_bytes_after_first_round": in_use_growth_later,
                "growth_objects": objects_growth,
                "growth_objects_after_first_round": objects_growth_later,
            }
        },
    }


def verdicts(run: dict[str, Any]) -> dict[str, bool]:
    return {row["name"]: row["met"] for row in bench.budgets(run)}


def test_a_run_within_every_budget_meets_all_of_them() -> None:
    """A run whose numbers are all within their limits meets every budget."""
    assert verdicts(results()) == {
        "long tasks at boot": True,
        "ready, warm": True,
        "ready, cold": True,
        "bytes, first visit": True,
        "select -> commit, p99": True,
        "command -> applied, p99": True,
        "1,000-selection bursts": True,
        "render report, 2,000 rows": True,
        "receiver ratio": True,
        "memory across 10,000 messages": True,
    }


@pytest.mark.parametrize(
    ("change", "over"),
    [
        ({"longest_any_ms": 51}, "long tasks at boot"),
        # A longtask entry is a task over 50 ms whose duration Chromium rounds: 50 is over.
        ({"longest_any_ms": 50}, "long tasks at boot"),
        ({"ready_warm_ms": 1001}, "ready, warm"),
        ({"ready_cold_ms": 3001}, "ready, cold"),
        ({"first_visit_bytes": 6_000_001}, "bytes, first visit"),
        ({"p99_ms": 16.1}, "select -> commit, p99"),
        ({"burst_ok": False}, "1,000-selection bursts"),
        # The longest report of 2,000 rows, new or the same again, is judged.
        ({"render_new_ms": 50.1}, "render report, 2,000 rows"),
        ({"render_same_ms": 50.1}, "render report, 2,000 rows"),
        ({"ratio": 1.51}, "receiver ratio"),
        ({"selections_missed": 1}, "select -> commit, p99"),
        ({"heap_growth": 65536}, "memory across 10,000 messages"),
        ({"in_use_growth": 1025}, "memory across 10,000 messages"),
        ({"in_use_growth_later": 1025}, "memory across 10,000 messages"),
        ({"objects_growth": 1}, "memory across 10,000 messages"),
        ({"objects_growth_later": 1}, "memory across 10,000 messages"),
    ],
)
def test_each_budget_is_over_exactly_when_its_number_is(change: dict[str, Any], over: str) -> None:
    """A number just past its budget fails that budget, and only that one (both p99
    budgets read the same fake latency here, so a p99 change fails both)."""
    failed = {name for name, met in verdicts(results(**change)).items() if not met}
    expected = {over, "command -> applied, p99"} if "p99_ms" in change else {over}
    assert failed == expected


def test_the_limits_themselves_are_within_budget() -> None:
    """At exactly the limit a budget is met: "<= 1.0 s" (long tasks have no such
    limit to be at: every longtask entry is a task over 50 ms)."""
    at_limit = results(
        ready_warm_ms=1000,
        ready_cold_ms=3000,
        first_visit_bytes=6_000_000,
        p99_ms=16,
        ratio=1.5,
        render_new_ms=50,
        render_same_ms=50,
        in_use_growth=1024,
        in_use_growth_later=1024,
    )
    assert all(verdicts(at_limit).values())


def test_only_the_sections_that_ran_are_judged() -> None:
    """Only the sections that ran are judged; a run with none is judged on nothing."""
    run = results()
    del run["boot"], run["bytes"], run["latency"], run["render"]
    assert set(verdicts(run)) == {"receiver ratio", "memory across 10,000 messages"}
    assert bench.budgets({}) == []


def snapshot(
    processes: dict[int, tuple[str, float]],
    threads: dict[tuple[int, int], tuple[str, float]] | None = None,
    machine: float | None = None,
) -> Any:
    return bench.CpuSnapshot(processes, threads or {}, machine)


def test_a_visit_costs_what_each_process_used_in_between() -> None:
    """A visit costs each kind of process the CPU it used in between (a new one from
    zero), and the rest of the machine what the browser did not use."""
    before = snapshot(
        {1: ("browser", 10.0), 2: ("renderer", 4.0), 3: ("network.mojom.NetworkService", 1.0)},
        machine=100.0,
    )
    after = snapshot(
        {
            1: ("browser", 10.5),
            2: ("renderer", 5.0),  # the previous visit's renderer, still busy
            3: ("network.mojom.NetworkService", 1.25),
            7: ("renderer", 2.0),  # started during the visit: counts from zero
            8: ("GPU", 0.125),
            9: ("storage.mojom.StorageService", 0.05),
        },
        machine=106.0,
    )
    used = bench.cpu_used(before, after)
    assert used["renderers"] == 3.0
    assert used["browser"] == 0.5
    assert used["network"] == 0.25
    assert used["gpu"] == 0.125
    assert used["other_processes"] == 0.05
    assert used["total"] == pytest.approx(3.925)
    # The machine was busy 6 s in all: what the browser did not use, the rest did.
    assert used["rest_of_machine"] == pytest.approx(2.075)
    # No thread listing (no /proc): the renderers are not split.
    assert used["renderer_workers"] is None


def test_renderer_threads_are_split_by_kind() -> None:
    """A renderer's CPU is split by thread kind, a new thread counting from zero."""
    before = snapshot(
        {2: ("renderer", 1.0)},
        {(2, 2): ("renderer_main_threads", 0.5), (2, 5): ("renderer_workers", 0.25)},
    )
    after = snapshot(
        {2: ("renderer", 2.0)},
        {
            (2, 2): ("renderer_main_threads", 0.75),
            (2, 5): ("renderer_workers", 0.75),
            (2, 6): ("renderer_background", 0.25),  # a thread that started in between
        },
    )
    used = bench.cpu_used(before, after)
    assert used["renderer_main_threads"] == 0.25
    assert used["renderer_workers"] == 0.5
    assert used["renderer_background"] == 0.25
    assert used["renderer_other"] == 0.0
    assert used["rest_of_machine"] is None  # no /proc/stat


@pytest.mark.parametrize(
    ("pid", "tid", "name", "kind"),
    [
        (40, 40, "chromium", "renderer_main_threads"),
        (40, 41, "DedicatedWorker thread", "renderer_workers"),
        (40, 42, "ThreadPoolForeg", "renderer_background"),
        (40, 43, "ThreadPoolBackg", "renderer_background"),
        (40, 44, "Chrome_ChildIOT", "renderer_other"),
        (40, 45, "Compositor", "renderer_other"),
    ],
)
def test_a_renderer_thread_kind_follows_its_name(pid: int, tid: int, name: str, kind: str) -> None:
    """A renderer thread is main, worker, background or other by its id and name."""
    assert bench.thread_kind(pid, tid, name) == kind


def test_proc_stat_lines_read_as_name_and_seconds() -> None:
    """utime and stime are the 14th and 15th fields, in clock ticks; a thread name may
    hold spaces and parentheses."""
    ticks = bench.CLOCK_TICKS
    line = f"41 (DedicatedWorker (x) t) S 1 2 3 4 5 6 7 8 9 10 {3 * ticks} {ticks} 0 0 20"
    assert bench._proc_seconds(line) == ("DedicatedWorker (x) t", 4.0)


def test_the_table_shows_the_page_alone_with_its_cpu() -> None:
    """The table shows the page alone's cold and warm ready times and CPU, and no such
    lines when it did not run."""
    cpu = {"total": _summary(2.25)}
    boot = {
        "page_alone": {
            "cold": {"ready_ms": _summary(1400), "cpu_s": cpu},
            "warm": {"ready_ms": _summary(1100), "cpu_s": {"total": _summary(2.0)}},
        }
    }
    lines = bench._page_alone_lines(boot)
    assert lines[1].split()[2:] == ["1400", "[1400-1400]", "/", "1100", "[1100-1100]"]
    assert lines[2].split()[-3:] == ["2.25", "/", "2.00"]
    assert bench._page_alone_lines({}) == []


def latency_lines(**parts: object) -> list[str]:
    """The latency section's lines for a result with `parts` and plain percentiles."""
    pct = {"n": 100, "p50": 10.0, "p99": 30.0, "min": 5.0, "max": 40.0}
    latency = {
        "select_to_commit_ms": {"single": pct, "burst": pct},
        "command_to_applied_ms": {"single": pct, "burst": pct},
        "bursts": [],
        **parts,
    }
    return bench._latency_lines({"latency": latency})


def test_the_latency_table_shows_each_workers_rehearsal() -> None:
    """The latency section reports what each worker's rehearsal after binding took."""
    lines = latency_lines(
        rehearsal_ms={
            "page_worker": {"ms": 212.4, "longest": 58.1},
            "assistant_worker": {"ms": 180.0, "longest": 51.6},
        }
    )
    assert "  assistant_worker rehearsal after binding: 180 ms in all, longest step 52 ms" in lines
    assert "  page_worker rehearsal after binding: 212 ms in all, longest step 58 ms" in lines


def test_the_latency_table_shows_the_first_samples_and_the_call_sites() -> None:
    """The latency section reports the first selection and command after binding, and
    how often each worker provoked the interpreter's call sites."""
    lines = latency_lines(
        first_ms={"select": 22.84, "command": 8.66},
        call_sites={"page_worker": {"provoked": 23, "ms": 31.4, "longest": 9.6}},
    )
    assert "  the first after binding: select -> commit 22.8 ms, command -> applied 8.7 ms" in lines
    assert "  page_worker call sites provoked 23 times, 31 ms in all, longest 10 ms" in lines
