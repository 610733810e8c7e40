"""Project-wide pytest plugin: tie tests to the scenarios of ACCEPTANCE.md.

Mark a test with `@pytest.mark.scenario(9, 12)`. With `--acceptance-report PATH`, the
run writes `{"scenarios": {"9": {"tests": [...], "passed": true}}}` from the outcomes
it observed: a scenario passes only if every one of its tests ran and passed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--acceptance-report",
        metavar="PATH",
        help="write the acceptance scenarios' test results as JSON to PATH",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "scenario(*numbers): the ACCEPTANCE.md scenarios this test proves"
    )
    config.stash[_RESULTS] = {}


_RESULTS = pytest.StashKey[dict[str, dict[str, object]]]()


def _scenarios(item: pytest.Item) -> list[int]:
    numbers: list[int] = []
    for mark in item.iter_markers("scenario"):
        numbers.extend(int(n) for n in mark.args)
    return sorted(set(numbers))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    results = config.stash[_RESULTS]
    for item in items:
        numbers = _scenarios(item)
        if numbers:
            results[item.nodeid] = {"scenarios": numbers, "outcome": "not-run"}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> object:
    report = yield
    results = item.config.stash[_RESULTS]
    entry = results.get(item.nodeid)
    if entry is not None:
        failed = report.failed or (report.when == "call" and report.skipped)
        if failed:
            entry["outcome"] = "failed"
        elif report.when == "call" and report.passed and entry["outcome"] != "failed":
            entry["outcome"] = "passed"
    return report


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = session.config.getoption("--acceptance-report")
    if not path:
        return
    scenarios: dict[str, dict[str, object]] = {}
    for nodeid, entry in sorted(session.config.stash[_RESULTS].items()):
        for number in entry["scenarios"]:  # type: ignore[attr-defined]
            record = scenarios.setdefault(str(number), {"tests": [], "passed": True})
            record["tests"].append(nodeid)  # type: ignore[attr-defined]
            if entry["outcome"] != "passed":
                record["passed"] = False
    ordered = dict(sorted(scenarios.items(), key=lambda kv: int(kv[0])))
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"scenarios": ordered}, indent=2) + "\n")
