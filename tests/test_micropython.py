"""The main-thread edge runs under MicroPython: its modules must import there, and the
window rules must decide exactly as they do under CPython."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

from node import run_node
from pagecontext import windowrules as w
from pagecontext.server.site import EDGE_MODULES, EDGE_PACKAGES

ROOT = Path(__file__).resolve().parents[1]
MICROPYTHON = ROOT / "node_modules" / "@micropython" / "micropython-webassembly-pyscript"


def _run_micropython(script: str) -> dict[str, object]:
    """Run tests/micropython/`script` under MicroPython, with the modules the site ships
    to the edge."""
    if not MICROPYTHON.is_dir():
        pytest.fail("node and the npm runtime packages are needed: run `make unit`")
    here = Path(__file__).parent / "micropython"
    return run_node(
        str(here / "run.mjs"), str(ROOT), str(here / script), *EDGE_PACKAGES, *EDGE_MODULES
    )


def test_edge_modules_run_under_micropython_with_the_same_answers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """windowrules and the edge import under MicroPython, and windowrules answers as it
    does under CPython (the script run by both) and as expected."""
    script = Path(__file__).parent / "micropython" / "check_subset.py"
    runpy.run_path(str(script), run_name="__main__")
    line = capsys.readouterr().out.strip().splitlines()[-1]
    cpython = json.loads(line.removeprefix("RESULT "))
    micro = _run_micropython("check_subset.py")
    assert {key: micro[key] for key in cpython} == cpython
    nonce = w.encode_nonce(bytes(range(16)))
    expected = {
        "nonce": nonce,
        "read": nonce,
        "exact": [True, False, False, False, False],
        "allowed": [True, False, False],
        "ready": "ready",
        "connect": "connect",
        "bad": None,
        "edge": "pagecontext:assistant",
        "saved": ["abc", "abc", None, None, None],
    }
    assert micro == expected


def test_the_integration_rules_answer_alike_under_micropython_and_cpython(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The config and event checks the edge runs give the same results and the same
    messages under MicroPython as under CPython, for accepted and refused input alike."""
    micro = _run_micropython("check_integration.py")
    script = Path(__file__).parent / "micropython" / "check_integration.py"
    runpy.run_path(str(script), run_name="__main__")
    line = capsys.readouterr().out.strip().splitlines()[-1]
    cpython = json.loads(line.removeprefix("RESULT "))
    assert micro == cpython
    # A declared field with no value is paired only with a value written like it: a value
    # the page keeps to itself (`reviewer`, `note`, `chart`) is none.
    assert cpython["misspelled"] == [
        [["revnueEur", "revenueEur"]],
        [["onhand", "onHand"]],
        [],
        [],
        [["unit_price", "unitPrice"]],
        [],
    ]
    outcomes = [case[0] for case in cpython["config"]]
    assert outcomes == ["ok", "ok"] + ["ConfigError"] * 6 + ["ok"] + ["ConfigError"] * 3
    *keys, nobodys = cpython["savedKeys"]
    assert len(set(keys)) == 3
    assert all(k.startswith("pagecontext:assistant:") for k in keys)
    assert nobodys == ""
    assert cpython["panel"] == [
        "North[U+202E]weiver rof galf[U+202C]",
        "[U+2066]a[U+2069][U+2067]b[U+2068][U+202A][U+202B][U+202D]",
        "a\u2400b",
        "\u200f\u061c\u2028",
        # Text spelled in tag characters, which no browser draws, is shown.
        "North[U+E0049][U+E0067][U+E006E][U+E006F][U+E0072][U+E0065]",
        # An emoji's tag sequence (a subdivision flag) is drawn as the flag it is.
        "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f \u20ac",
        # Tags after the flag's base that make no flag (an upper-case letter, seven tags).
        "\U0001f3f4[U+E0049][U+E007F]\U0001f3f4[U+E0067][U+E0062][U+E0065][U+E006E]"
        "[U+E0067][U+E0078][U+E0078][U+E007F]",
        # Lower-case words after the flag's base that name no flag Unicode recommends:
        # drawn as a black flag, their tags unseen ("ignore"); Wales stays a flag.
        "\U0001f3f4[U+E0069][U+E0067][U+E006E][U+E006F][U+E0072][U+E0065][U+E007F]"
        "\U0001f3f4\U000e0067\U000e0062\U000e0077\U000e006c\U000e0073\U000e007f",
        # A run of variation selectors, or of zero-width characters, is shown; one alone
        # (an emoji's, a joiner in an emoji's sequence, a non-joiner) stays.
        "\U0001f600[U+E0100][U+E01EF][U+FE0F] \u2764\ufe0f\u200d\U0001f525"
        " a[U+200B][U+200B][U+FEFF]b\u200cc",
        # Of any mix, and the other characters that draw as nothing; one alone stays.
        "x[U+E0148][U+200B][U+E0169] n[U+2062][U+2063]o [U+1D173][U+3164] a\u2062b",
        # A direction mark in a run stays, and does not end it; soft hyphens; past tags.
        "x[U+FE03]\u200e[U+FE05] a[U+00AD][U+00AD]b [U+E00E6][U+E00E7] a\u200e\u200fb",
    ]
