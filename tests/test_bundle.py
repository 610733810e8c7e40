"""The static bundle's pieces (server/bundle.py) that need no build: the headers file,
the reference rewriting, and the command line's checks. e2e/test_bundle.py builds one
and serves it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pagecontext.cli import main
from pagecontext.server.bundle import _rewrite, headers_file
from pagecontext.server.csp import WORKER_POLICY, assistant_policy, page_policy
from pagecontext.server.site import OUTPUT_MARK, SiteError

ROOT = Path(__file__).resolve().parents[1]


def test_the_headers_file_gives_each_page_its_policy_and_the_worker_its_own() -> None:
    """Pages: their policy, revalidated; /web (the worker's script): the worker policy,
    immutable; the runtimes and wheels: immutable."""
    policy = page_policy("https://assistant.example")
    panel = assistant_policy("https://page.example")
    text = headers_file({"/": policy, "/index.html": policy, "/assistant.html": panel})
    blocks = {block.splitlines()[0]: block.splitlines()[1:] for block in text.split("\n/")}
    assert blocks["/"] == [f"  Content-Security-Policy: {policy}", "  Cache-Control: no-cache"]
    # A host that serves the panel at its pretty URL (/assistant) matches that rule.
    for path in ("assistant.html", "assistant"):
        assert blocks[path] == [f"  Content-Security-Policy: {panel}", "  Cache-Control: no-cache"]
    assert "index" not in blocks
    for folder in ("web/*", "vendor/*"):  # the folders that serve JavaScript
        assert f"  Content-Security-Policy: {WORKER_POLICY}" in blocks[folder]
    for folder in ("web/*", "vendor/*", "wheels/*", "py/*"):
        assert "  Cache-Control: public, max-age=31536000, immutable" in blocks[folder]


def test_a_reference_the_build_expects_must_be_there() -> None:
    """Rewriting replaces quoted URLs only, and fails loudly on a missing one."""
    urls = {"/py/runtime.json": "/py/runtime-0123.json"}
    text = 'fetch("/py/runtime.json"); // not "/py/runtime.jsonx"'
    assert _rewrite(text, "boot", ["/py/runtime.json"], urls) == (
        'fetch("/py/runtime-0123.json"); // not "/py/runtime.jsonx"'
    )
    with pytest.raises(SiteError, match="no longer names"):
        _rewrite("fetch(other)", "boot", ["/py/runtime.json"], urls)


@pytest.mark.parametrize(
    "origin", ["http://example.com/", "example.com", "http://Example.com", "null", "*"]
)
def test_build_takes_exact_origins_only(tmp_path: Path, origin: str) -> None:
    """An origin with a path, no scheme, upper case, "null" or "*" is a usage error."""
    with pytest.raises(SystemExit) as exit_info:
        main(["build", str(tmp_path / "out"), "--page-origin", origin])
    assert exit_info.value.code == 2


def test_build_needs_two_origins(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same origin for page and assistant is refused before anything is written."""
    origin = "https://app.example"
    code = main(
        ["build", str(tmp_path / "out"), "--page-origin", origin, "--assistant-origin", origin]
    )
    assert code == 2
    assert "two origins" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_build_never_replaces_a_folder_that_holds_no_bundle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A non-empty OUTDIR that holds no earlier output is left alone, and so are a file
    and the repository itself."""
    (tmp_path / "notes.txt").write_text("mine")
    assert main(["build", str(tmp_path)]) == 1
    assert "holds no earlier output" in capsys.readouterr().err
    assert (tmp_path / "notes.txt").read_text() == "mine"
    # A web root of another kind, with a `vendor` folder and a `_headers` file of its own.
    web_root = tmp_path / "www"
    (web_root / "vendor").mkdir(parents=True)
    (web_root / "_headers").write_text("/*\n")
    (web_root / "index.php").write_text("<?php")
    wheels = str(ROOT / "build" / "wheels")
    for command in (["build"], ["assemble", "--wheels", wheels, "--out"]):
        assert main([*command, str(web_root)]) == 1
        assert "holds no earlier output" in capsys.readouterr().err
    assert sorted(path.name for path in web_root.iterdir()) == ["_headers", "index.php", "vendor"]
    web_root.joinpath("index.php").unlink()
    web_root.joinpath("_headers").unlink()
    web_root.joinpath("vendor").rmdir()
    web_root.rmdir()
    assert main(["build", str(tmp_path / "notes.txt")]) == 1
    assert "is a file" in capsys.readouterr().err
    assert main(["build", str(ROOT), "--root", str(ROOT)]) == 1
    assert "holds the repository" in capsys.readouterr().err
    assert sorted(path.name for path in tmp_path.iterdir()) == ["notes.txt"]


def test_an_output_folder_that_cannot_be_made_is_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A folder the system will not create (here under /proc) is an error line, exit 1."""
    assert main(["build", "/proc/no-such-process/out", "--root", str(ROOT)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("pagecontext: cannot build the bundle: ")
    assert err.count("\n") == 1


def test_a_failed_build_leaves_the_earlier_bundle_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A build that fails (here: no wheels) writes into a new folder beside OUTDIR and
    removes it: the earlier bundle, and whatever the host keeps beside it, stay."""
    out = tmp_path / "site"
    out.mkdir()
    (out / OUTPUT_MARK).write_text("")
    (out / "CNAME").write_text("app.example")
    wheels = tmp_path / "no-wheels"
    wheels.mkdir()
    assert main(["build", str(out), "--wheels", str(wheels), "--root", str(ROOT)]) == 1
    assert "no wheel in" in capsys.readouterr().err
    assert sorted(path.name for path in out.iterdir()) == [OUTPUT_MARK, "CNAME"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["no-wheels", "site"]


def test_an_interrupted_command_says_so_and_exits_130(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C during a build is one line and exit status 130, and the folder it was
    writing is removed."""

    def interrupted(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("pagecontext.server.bundle.assemble_into", interrupted)
    out = tmp_path / "site"
    assert main(["build", str(out), "--root", str(ROOT)]) == 130
    assert capsys.readouterr().err == "pagecontext: interrupted\n"
    assert list(tmp_path.iterdir()) == []
