"""The static bundle's pieces (server/bundle.py) that need no build: the headers file,
the reference rewriting, and the command line's checks. e2e/test_bundle.py builds one
and serves it."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import pytest

from pagecontext.cli import main
from pagecontext.server.bundle import (
    Bundle,
    Kept,
    _rewrite,
    _write_pages,
    headers_file,
    keep_previous,
    manifest,
)
from pagecontext.server.csp import assistant_policy, page_policy, worker_policy
from pagecontext.server.site import OUTPUT_MARK, SiteError, build_project_wheel, sri

ROOT = Path(__file__).resolve().parents[1]


def _headers_rules(text: str) -> dict[str, list[str]]:
    """The rules of a `_headers` file: each path pattern's header lines."""
    rules: dict[str, list[str]] = {}
    lines: list[str] = []
    for line in text.splitlines():
        if line.startswith(" "):
            lines.append(line)
        else:
            lines = rules.setdefault(line, [])
    return rules


def _headers_for(text: str, path: str) -> list[str]:
    """The header lines a host sends for `path`: those of every rule that matches it."""
    return [
        line
        for pattern, lines in _headers_rules(text).items()
        if (path.startswith(pattern[:-1]) if pattern.endswith("/*") else path == pattern)
        for line in lines
    ]


def test_the_headers_file_gives_each_page_its_policy_and_the_worker_its_own() -> None:
    """Pages: their policy, revalidated; /web (the worker's script): the worker policy,
    immutable; the runtimes and wheels: immutable."""
    policy = page_policy("https://assistant.example")
    panel = assistant_policy("https://page.example", "https://assistant.example", "/agent")
    scripts = worker_policy("https://page.example", "https://assistant.example")
    text = headers_file({"/": policy, "/index.html": policy, "/assistant.html": panel}, scripts)
    blocks = _headers_rules(text)
    assert blocks["/"] == [f"  Content-Security-Policy: {policy}", "  Cache-Control: no-cache"]
    # A host that serves the panel at its pretty URL (/assistant) matches that rule.
    for path in ("/assistant.html", "/assistant"):
        assert blocks[path] == [f"  Content-Security-Policy: {panel}", "  Cache-Control: no-cache"]
    assert "/index" not in blocks
    for folder in ("/web/*", "/vendor/*"):  # the folders that serve JavaScript
        assert f"  Content-Security-Policy: {scripts}" in blocks[folder]
    for folder in ("/web/*", "/vendor/*", "/wheels/*", "/py/*"):
        assert "  Cache-Control: public, max-age=31536000, immutable" in blocks[folder]


def test_every_file_of_the_bundle_is_sent_nosniff() -> None:
    """As the demo server does, every response carries `X-Content-Type-Options: nosniff`,
    once: the pages, the data, the scripts, the runtimes and the bundle's own lists."""
    policy = page_policy("https://assistant.example")
    text = headers_file({"/": policy, "/index.html": policy}, worker_policy())
    for path in (
        "/",
        "/index.html",
        "/assistant.html",
        "/api/sales",
        "/web/boot-0123456789abcdef.mjs",
        "/vendor/pyodide-314.0.7-0123/pyodide.asm.wasm",
        "/py/runtime-0123456789abcdef.json",
        "/wheels/pydantic-2.14.4-py3-none-any.whl",
        "/manifest.json",
        "/integrity.json",
    ):
        assert _headers_for(text, path).count("  X-Content-Type-Options: nosniff") == 1, path


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


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, object]]:
    """The arguments `build` calls build_bundle with, which then writes nothing."""
    calls: list[dict[str, object]] = []

    def fake_build(_root: Path, out: Path, _wheels: Path, **kwargs: object) -> Bundle:
        calls.append(kwargs)
        return Bundle(out, str(kwargs["page_origin"]), str(kwargs["assistant_origin"]), {})

    monkeypatch.setattr("pagecontext.server.bundle.build_bundle", fake_build)
    return calls


_SPELT = "an IPv4 address written as a browser writes it"


@pytest.mark.parametrize(
    ("origin", "said"),
    [
        (
            "https://sales.example.com:443",
            "names its scheme's default port: write it without the port, "
            "https://sales.example.com, as browsers do",
        ),
        (
            "http://127.0.0.1:80",
            "names its scheme's default port: write it without the port, "
            "http://127.0.0.1, as browsers do",
        ),
        ("http://127.1:8000", _SPELT),
        ("http://0x7f.0.0.1:8000", _SPELT),
        ("http://2130706433:8000", _SPELT),
        ("https://1.2.3.04", _SPELT),
        ("https://a..example.com", "not a host name of an exact origin"),
        ("http://[::1]:8120", "an IPv6 address names no origin here"),
        ("https://bücher.example", "written as browsers write it, xn--bcher-kva.example"),
        # What is wrong is said, not the host's rules.
        ("https://sales.example.com/", "no path or trailing slash"),
        ("https://Sales.example.com", "lower case"),
        ("http://sales.example.com", "an origin on another machine must be https"),
        ("http://192.168.1.5:8000", "an origin on another machine must be https"),
    ],
)
def test_build_refuses_an_origin_no_browser_sends_or_one_in_clear_text(
    tmp_path: Path,
    built: list[dict[str, object]],
    capsys: pytest.CaptureFixture[str],
    origin: str,
    said: str,
) -> None:
    """Each origin is compared with what the browser sends exactly, so it must be written
    as a browser writes it (the demo's host rules hold for the bundle too: no default
    port, an IPv4 address in full, no empty label); and plain http only for this
    machine's own host names, as for the agent URL. Nothing is built."""
    for option in ("--page-origin", "--assistant-origin"):
        with pytest.raises(SystemExit) as exit_info:
            main(["build", str(tmp_path / "out"), option, origin])
        assert exit_info.value.code == 2
        error = capsys.readouterr().err.splitlines()[-1]  # after argparse's usage
        assert error.startswith(f"pagecontext build: error: argument {option}: "), error
        assert origin in error
        assert said in error
    assert built == []


def test_build_takes_loopback_origins_over_http_and_others_over_https(
    tmp_path: Path, built: list[dict[str, object]]
) -> None:
    """The default origins are this machine's over http; others are taken over https."""
    out = str(tmp_path / "out")
    assert main(["build", out]) == 0
    assert (built[0]["page_origin"], built[0]["assistant_origin"]) == (
        "http://127.0.0.1:8000",
        "http://localhost:8001",
    )
    origins = ["--page-origin", "https://sales.example.com"]
    origins += ["--assistant-origin", "https://assistant.example.com:8443"]
    assert main(["build", out, *origins]) == 0
    assert built[1]["assistant_origin"] == "https://assistant.example.com:8443"


@pytest.mark.parametrize(
    "given",
    [
        ["--page-origin", "https://sales.example.com"],
        ["--assistant-origin", "https://assistant.example.com"],
        [
            "--page-origin",
            "https://sales.example.com",
            "--assistant-origin",
            "http://localhost:8001",
        ],
    ],
)
def test_build_refuses_one_origin_here_and_the_other_elsewhere(
    tmp_path: Path,
    built: list[dict[str, object]],
    capsys: pytest.CaptureFixture[str],
    given: list[str],
) -> None:
    """One origin given and the other left at its default (this machine's): the bundle's
    page would frame, and hand the user's selection to, whatever answers on the
    visitor's own machine. Refused, naming both flags; nothing is built."""
    assert main(["build", str(tmp_path / "out"), *given]) == 2
    assert "give --page-origin and --assistant-origin together" in capsys.readouterr().err
    assert built == []


def test_a_build_says_which_files_put_into_the_earlier_bundle_it_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Files put into a bundle since its build (a host's CNAME) go with it when it is
    built again, as docs/deploy.md says: the build names them, on stderr."""
    out = tmp_path / "dist"
    out.mkdir()
    for name in (OUTPUT_MARK, "index.html", "CNAME", "robots.txt"):
        (out / name).write_text("")

    def replace(_root: Path, out: Path, _wheels: Path, **kwargs: object) -> Bundle:
        for name in ("CNAME", "robots.txt"):
            (out / name).unlink(missing_ok=True)
        (out / "manifest.json").write_text("{}")
        return Bundle(out, str(kwargs["page_origin"]), str(kwargs["assistant_origin"]), {})

    monkeypatch.setattr("pagecontext.server.bundle.build_bundle", replace)
    assert main(["build", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"pagecontext: note: {out} held CNAME, robots.txt, which the build does not write" in err
    # Built again with nothing put in since: nothing to say.
    assert main(["build", str(out)]) == 0
    assert "held" not in capsys.readouterr().err


def test_an_assembly_says_which_files_put_into_the_earlier_site_it_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`assemble --out` replaces an earlier site whole, as `build` does its bundle, and
    names on stderr what was put into it since and is gone with it."""
    out = tmp_path / "site"
    out.mkdir()
    for name in (OUTPUT_MARK, "index.html", "CNAME"):
        (out / name).write_text("")

    def replace(
        _root: Path, out: Path, *_args: object, **_kwargs: object
    ) -> tuple[object, list[object]]:
        (out / "CNAME").unlink(missing_ok=True)
        return {}, []

    monkeypatch.setattr("pagecontext.server.site.assemble", replace)
    assert main(["assemble", "--out", str(out), "--wheels", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert (
        f"pagecontext: note: {out} held CNAME, which the assembly does not write: removed "
        "with the earlier site (keep such files elsewhere and copy them in after each assembly)"
    ) in err
    assert main(["assemble", "--out", str(out), "--wheels", str(tmp_path)]) == 0
    assert "held" not in capsys.readouterr().err


def test_no_agent_builds_an_assistant_whose_agent_url_is_empty(
    tmp_path: Path, built: list[dict[str, object]], capsys: pytest.CaptureFixture[str]
) -> None:
    """--no-agent gives the assistant `agentUrl: ""` (it answers `no-agent`), and
    cannot be given with --agent-url."""
    out = str(tmp_path / "out")
    assert main(["build", out, "--no-agent"]) == 0
    assert main(["build", out, "--agent-url", "https://agent.example.com/run"]) == 0
    assert main(["build", out]) == 0
    assert [call["agent_url"] for call in built] == ["", "https://agent.example.com/run", None]
    capsys.readouterr()
    # Deployed with neither flag, the assistant would ask a static host for /agent: said.
    origins = ["--page-origin", "https://sales.example.com"]
    origins += ["--assistant-origin", "https://assistant.example.com"]
    for flags, noted in (([], True), (["--no-agent"], False), (["--agent-url", "/run"], False)):
        assert main(["build", out, *origins, *flags]) == 0
        err = capsys.readouterr().err
        assert ("https://assistant.example.com/agent, which a static host" in err) is noted, err
    with pytest.raises(SystemExit) as exit_info:
        main(["build", out, "--no-agent", "--agent-url", "https://agent.example.com/run"])
    assert exit_info.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err
    assert "--no-agent" in _build_help(capsys)


def _build_help(capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit):
        main(["build", "--help"])
    return " ".join(capsys.readouterr().out.split())


def test_build_help_says_the_agent_url_is_public(capsys: pytest.CaptureFixture[str]) -> None:
    """The build's help warns that the agent URL is public and must hold no secret."""
    help_text = _build_help(capsys)
    assert "written into the public assistant page: it must hold no secret" in help_text


def _fake_assets(out: Path) -> dict[str, str]:
    """A boot script and a stylesheet under hashed names in `out`; their URL map."""
    (out / "web").mkdir(parents=True)
    (out / "web" / "boot-0123.mjs").write_text("// boot")
    (out / "web" / "styles-4567.css").write_text("/* styles */")
    return {"/web/boot.mjs": "/web/boot-0123.mjs", "/web/styles.css": "/web/styles-4567.css"}


def test_the_pages_carry_the_agent_url_an_empty_one_included(tmp_path: Path) -> None:
    """The assistant's pages are written with the agent URL given, `""` (no agent) as
    it is; the business page names none."""
    urls = _fake_assets(tmp_path)
    origins = {"page": "https://sales.example.com", "assistant": "https://assistant.example.com"}
    for agent_url in ("", "/agent"):
        _write_pages(ROOT, tmp_path, manifest(tmp_path, urls), origins, agent_url)
        for name in ("assistant.html", "workbench.html"):
            text = (tmp_path / name).read_text()
            config = json.loads(text.split('id="pc-config">', 1)[1].split("</script>", 1)[0])
            assert config["agentUrl"] == agent_url
            assert '<script type="module" src="/web/boot-0123.mjs" integrity="sha384-' in text
        assert "agentUrl" not in (tmp_path / "index.html").read_text()


def test_the_manifest_names_the_boot_script_and_the_styles_with_their_integrity(
    tmp_path: Path,
) -> None:
    """manifest.json: the files an integrator's own page loads, under fixed keys."""
    urls = _fake_assets(tmp_path)
    assert manifest(tmp_path, urls) == {
        "boot": {"url": "/web/boot-0123.mjs", "integrity": sri(b"// boot")},
        "styles": {"url": "/web/styles-4567.css", "integrity": sri(b"/* styles */")},
    }


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
    # A bundle's files copied into a web root (`cp -r dist/* www/` leaves the hidden
    # mark behind) beside a page of the site's own: its runtime.json is no mark.
    copied = tmp_path / "copied"
    (copied / "py").mkdir(parents=True)
    (copied / "py" / "runtime.json").write_text('{"pyodide": {}, "snapshot": {}}')
    (copied / "dashboard.html").write_text("<!doctype html>")
    assert main(["build", str(copied), "--keep-previous"]) == 1
    assert "holds no earlier output" in capsys.readouterr().err
    assert (copied / "dashboard.html").read_text() == "<!doctype html>"
    shutil.rmtree(copied)
    assert main(["build", str(tmp_path / "notes.txt")]) == 1
    assert "is a file" in capsys.readouterr().err
    # The link a host serves, switched to each new bundle: never replaced by a folder.
    live = tmp_path / "live"
    (tmp_path / "dist-1").mkdir()
    (tmp_path / "dist-1" / OUTPUT_MARK).write_text("")
    live.symlink_to("dist-1")
    assert main(["build", str(live), "--keep-previous"]) == 1
    assert "live is a symbolic link (to dist-1)" in capsys.readouterr().err
    assert live.is_symlink()
    assert [path.name for path in (tmp_path / "dist-1").iterdir()] == [OUTPUT_MARK]
    live.unlink()
    shutil.rmtree(tmp_path / "dist-1")
    assert main(["build", str(ROOT), "--root", str(ROOT)]) == 1
    assert "holds the repository" in capsys.readouterr().err
    assert sorted(path.name for path in tmp_path.iterdir()) == ["notes.txt"]


@pytest.mark.parametrize("out", ["/proc/no-such-process/out", "/proc/sys/out"])
def test_an_output_folder_that_cannot_be_made_is_one_line(
    capsys: pytest.CaptureFixture[str], out: str
) -> None:
    """A folder the system will not create (here under /proc), or one in a folder
    nothing can be written into, is an error line naming the folder given, exit 1."""
    assert main(["build", out, "--root", str(ROOT)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("pagecontext: cannot build the bundle: ")
    assert err.count("\n") == 1
    assert "-new-" not in err


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
    said = capsys.readouterr().err.splitlines()[-1]
    assert said.startswith(f"pagecontext: cannot build the bundle: no wheel in {wheels} for ")
    assert said.endswith(
        "`make` downloads them into build/wheels, where the commands look unless given --wheels"
    )
    assert sorted(path.name for path in out.iterdir()) == [OUTPUT_MARK, "CNAME"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["no-wheels", "site"]


def test_a_failed_build_removes_the_folders_it_made_for_outdir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """OUTDIR's missing parents are made for the build, and removed again when it fails:
    `emptyd/sub/deeper` leaves `emptyd` as it was, empty."""
    (tmp_path / "emptyd").mkdir()
    wheels = tmp_path / "no-wheels"
    wheels.mkdir()
    out = tmp_path / "emptyd" / "sub" / "deeper"
    assert main(["build", str(out), "--wheels", str(wheels), "--root", str(ROOT)]) == 1
    assert "no wheel in" in capsys.readouterr().err
    assert list((tmp_path / "emptyd").iterdir()) == []


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


def test_the_project_wheel_builds_from_a_root_named_relative_to_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--root repo` (a copy of the repository beside the current folder, as a read-only
    checkout needs): the wheel is built from that folder, not looked up as a project
    named `repo`."""
    copy = tmp_path / "repo"
    copy.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, copy / name)
    shutil.copytree(ROOT / "pysrc", copy / "pysrc", ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.chdir(tmp_path)
    wheel = build_project_wheel(Path("repo"), tmp_path / "wheels")
    assert wheel.name.startswith("pagecontext-")
    assert wheel.parent == tmp_path / "wheels"


def _bundle_with(folder: Path, files: dict[str, bytes]) -> None:
    """A bundle in `folder` as far as keep_previous reads one: its files, and
    integrity.json listing them."""
    for name, data in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    listing = {"/" + name: sri(data) for name, data in files.items()}
    (folder / "integrity.json").write_text(json.dumps(listing))


def test_keep_previous_keeps_the_earlier_builds_versioned_files_and_no_others(
    tmp_path: Path,
) -> None:
    """The earlier bundle's versioned files the new one lacks are copied in; its pages,
    data and lists are not, a file both have keeps the new bytes, and files the earlier
    bundle had kept from the one before it (not in its integrity.json) are dropped."""
    previous, new = tmp_path / "previous", tmp_path / "new"
    _bundle_with(
        previous,
        {
            "index.html": b"old page",
            "api/sales": b"old rows",
            "manifest.json": b"{}",
            "web/boot-aaaa.mjs": b"old boot",
            "web/worker-same.mjs": b"shared, old copy",
            "py/runtime-aaaa.json": b"{}",
            "py/edge-aaaa/edge.mpy": b"old edge",
            "vendor/snapshot/pagecontext-aaaa-0.bin": b"old snapshot",
            "vendor/snapshot/pagecontext-aaaa-0.bin.br": b"old snapshot, brotli",
            "wheels/pagecontext-aaaa.whl": b"old wheel",
        },
    )
    # Kept by the earlier build from the one before it: on disk, not in its list.
    (previous / "web" / "boot-older.mjs").write_bytes(b"older boot")
    _bundle_with(new, {"index.html": b"new page", "web/worker-same.mjs": b"shared"})
    kept = keep_previous(previous, new)
    files = sorted(p.relative_to(new).as_posix() for p in new.rglob("*") if p.is_file())
    assert files == [
        "index.html",
        "integrity.json",
        "kept.json",
        "py/edge-aaaa/edge.mpy",
        "py/runtime-aaaa.json",
        "vendor/snapshot/pagecontext-aaaa-0.bin",
        "vendor/snapshot/pagecontext-aaaa-0.bin.br",
        "web/boot-aaaa.mjs",
        "web/worker-same.mjs",
        "wheels/pagecontext-aaaa.whl",
    ]
    assert (new / "index.html").read_bytes() == b"new page"
    assert (new / "web" / "worker-same.mjs").read_bytes() == b"shared"
    assert (new / "web" / "boot-aaaa.mjs").read_bytes() == b"old boot"
    kept_bytes = [b"old boot", b"{}", b"old edge", b"old snapshot", b"old snapshot, brotli"]
    assert kept == Kept(found=True, files=6, bytes=sum(map(len, [*kept_bytes, b"old wheel"])))
    # The new list names the new build's own files only, and kept.json those it kept.
    assert json.loads((new / "integrity.json").read_text()) == {
        "/index.html": sri(b"new page"),
        "/web/worker-same.mjs": sri(b"shared"),
    }
    assert json.loads((new / "kept.json").read_text()) == [
        "/py/edge-aaaa/edge.mpy",
        "/py/runtime-aaaa.json",
        "/vendor/snapshot/pagecontext-aaaa-0.bin",
        "/vendor/snapshot/pagecontext-aaaa-0.bin.br",
        "/web/boot-aaaa.mjs",
        "/wheels/pagecontext-aaaa.whl",
    ]


def test_the_same_build_again_keeps_what_the_build_before_it_kept(tmp_path: Path) -> None:
    """v1, then v2 keeping v1's files, then v2 again (a retried deploy, a new agent URL):
    the third build is the second one again, so it keeps v1's files, which pages of v1
    still open need; a v3 after it keeps v2's own files and drops v1's."""
    v1 = {"index.html": b"page", "web/boot-1111.mjs": b"boot 1", "vendor/s-1111.bin": b"s1"}
    v2 = {"index.html": b"page", "web/boot-2222.mjs": b"boot 2", "vendor/s-1111.bin": b"s1"}
    v3 = {"index.html": b"page", "web/boot-3333.mjs": b"boot 3", "vendor/s-3333.bin": b"s3"}
    folders = [tmp_path / name for name in ("first", "second", "again", "third")]
    _bundle_with(folders[0], v1)
    for (previous, new), files in zip(itertools.pairwise(folders), (v2, v2, v3), strict=True):
        _bundle_with(new, files)
        keep_previous(previous, new)
    assert (folders[2] / "web" / "boot-1111.mjs").read_bytes() == b"boot 1"
    assert json.loads((folders[2] / "kept.json").read_text()) == ["/web/boot-1111.mjs"]
    third = sorted(p.relative_to(folders[3]).as_posix() for p in folders[3].rglob("*"))
    assert "web/boot-1111.mjs" not in third
    assert {"web/boot-2222.mjs", "vendor/s-1111.bin"} <= set(third)
    assert json.loads((folders[3] / "kept.json").read_text()) == [
        "/vendor/s-1111.bin",
        "/web/boot-2222.mjs",
    ]


def test_keep_previous_never_copies_from_outside_the_versioned_folders(tmp_path: Path) -> None:
    """A list naming paths that climb out of the bundle, or absolute ones, copies nothing;
    a folder with no list is no earlier bundle; a list that is not one is refused."""
    previous, new = tmp_path / "previous", tmp_path / "new"
    (tmp_path / "secret").write_text("not the bundle's")
    previous.mkdir()
    new.mkdir()
    assert keep_previous(previous, new) == Kept(found=False)
    (previous / "integrity.json").write_text(
        json.dumps({"/web/../../secret": "x", "web/relative.mjs": "x", "/web//x": "x"})
    )
    assert keep_previous(previous, new) == Kept(found=True)
    assert list(new.iterdir()) == []
    (previous / "integrity.json").write_text("[1, 2]")
    with pytest.raises(SiteError, match="is not a bundle's file list"):
        keep_previous(previous, new)


def test_build_keeps_the_earlier_bundle_only_when_asked(
    tmp_path: Path, built: list[dict[str, object]]
) -> None:
    """The build keeps the earlier bundle's files only with --keep-previous."""
    out = str(tmp_path / "out")
    assert main(["build", out]) == 0
    assert main(["build", out, "--keep-previous"]) == 0
    assert [call["keep"] for call in built] == [False, True]


def test_a_build_takes_only_the_npm_packages_the_lock_pins(tmp_path: Path) -> None:
    """node_modules left by an earlier `npm ci` (the lock has moved on since): the build
    refuses it, naming both versions, rather than ship what the lock does not name."""
    from pagecontext.server.site import SiteError, _npm_version

    (tmp_path / "node_modules" / "pyodide").mkdir(parents=True)
    (tmp_path / "node_modules" / "pyodide" / "package.json").write_text('{"version": "1.0.0"}')
    lock = {"packages": {"node_modules/pyodide": {"version": "1.0.0"}}}
    (tmp_path / "package-lock.json").write_text(json.dumps(lock))
    assert _npm_version(tmp_path / "node_modules", "pyodide") == "1.0.0"
    lock["packages"]["node_modules/pyodide"]["version"] = "2.0.0"
    (tmp_path / "package-lock.json").write_text(json.dumps(lock))
    with pytest.raises(SiteError, match=r"version 1\.0\.0, and package-lock\.json pins 2\.0\.0"):
        _npm_version(tmp_path / "node_modules", "pyodide")


def test_keep_previous_never_follows_a_symbolic_link_out_of_the_earlier_bundle(
    tmp_path: Path,
) -> None:
    """A versioned name in the earlier bundle that is a symbolic link, or lies under a
    folder that is one, copies nothing: what a link points at (any file the build's user
    can read) never becomes a file of the new, public bundle."""
    previous, new, outside = tmp_path / "previous", tmp_path / "new", tmp_path / "outside"
    outside.mkdir()
    (outside / "key").write_text("not the bundle's")
    _bundle_with(previous, {"web/boot-aaaa.mjs": b"old boot"})
    (previous / "web" / "worker-aaaa.mjs").symlink_to(outside / "key")
    (previous / "vendor").symlink_to(outside)
    listing = json.loads((previous / "integrity.json").read_text())
    listing |= {"/web/worker-aaaa.mjs": "sha384-x", "/vendor/key": "sha384-x"}
    (previous / "integrity.json").write_text(json.dumps(listing))
    new.mkdir()
    assert keep_previous(previous, new) == Kept(found=True, files=1, bytes=len(b"old boot"))
    files = sorted(p.relative_to(new).as_posix() for p in new.rglob("*") if p.is_file())
    assert files == ["kept.json", "web/boot-aaaa.mjs"]


@pytest.mark.parametrize("command", ["assemble", "build"])
def test_an_output_folder_that_cannot_be_listed_is_said_in_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
) -> None:
    """An output folder the user may not list (its mode 000, say): the command says it
    cannot write there, in its one line, exit status 1, never a traceback from noting
    what the earlier output held."""
    out = tmp_path / "out"
    out.mkdir()
    listing = Path.iterdir

    def iterdir(self: Path) -> object:
        if self.absolute() == out.absolute():
            raise PermissionError(13, "Permission denied", str(self))
        return listing(self)

    def refused(_root: Path, out: Path, *_args: object, **_kwargs: object) -> object:
        return any(out.iterdir())  # as `site.replacing` looks into it first

    monkeypatch.setattr(Path, "iterdir", iterdir)
    monkeypatch.setattr("pagecontext.server.site.assemble", refused)
    monkeypatch.setattr("pagecontext.server.bundle.build_bundle", refused)
    args = ["assemble", "--out", str(out), "--wheels", str(tmp_path)]
    assert main(args if command == "assemble" else ["build", str(out)]) == 1
    said = "cannot assemble the site" if command == "assemble" else "cannot build the bundle"
    assert f"pagecontext: {said}: [Errno 13] Permission denied" in capsys.readouterr().err
