"""The worker's boot snapshot bundle: what `pagecontext.server.site` writes is what
`web/snapshot.mjs` reads back (in Node.js, the way the worker reads it while it
downloads). Making and restoring a real snapshot is covered by e2e/test_boot.py."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import brotli
import pytest

from node import run_node
from pagecontext.server import compress, site
from pagecontext.server.site import (
    SiteError,
    bundle_zip,
    site_packages_files,
    tar_bytes,
    write_parts,
)

ROOT = Path(__file__).resolve().parents[1]
READER = Path(__file__).parent / "snapshot" / "read_bundle.mjs"
LAZY_FILES = Path(__file__).parent / "snapshot" / "lazy_files.mjs"
XOR_BASE = Path(__file__).parent / "snapshot" / "xor_base.mjs"
PAGE = 4096
# A path long enough to need the ustar prefix field (over 100 characters).
LONG = "pkg/" + "/".join(["deeply_nested_directory"] * 4) + "/module_with_a_long_name.py"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _wheel(path: Path, files: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return path


def _sparse(memory: bytes) -> tuple[list[list[int]], bytes]:
    """The memory without its all-zero pages, as web/make-snapshot.mjs stores it."""
    runs: list[list[int]] = []
    for start in range(0, len(memory), PAGE):
        page = memory[start : start + PAGE]
        if not page.strip(b"\0"):
            continue
        if runs and runs[-1][0] + runs[-1][1] == start:
            runs[-1][1] += len(page)
        else:
            runs.append([start, len(page)])
    return runs, b"".join(memory[s : s + n] for s, n in runs)


def _read(bundle: Path, chunk: int = 997) -> dict[str, object]:
    return run_node(str(READER), str(ROOT), str(bundle), str(chunk))


@pytest.fixture
def wheels(tmp_path: Path) -> tuple[list[Path], dict[str, bytes]]:
    first = {
        "alpha/__init__.py": b"VALUE = 1\n",
        "alpha/sub/data.json": b'{"a": [1, 2]}',
        "alpha-1.0.dist-info/METADATA": b"Name: alpha\nVersion: 1.0\n",
        LONG: b"# long\n" * 200,
    }
    second = {"beta.py": b"", "beta-2.0.dist-info/METADATA": b"Name: beta\nVersion: 2.0\n"}
    paths = [_wheel(tmp_path / "a.whl", first), _wheel(tmp_path / "b.whl", second)]
    return paths, first | second


def _bundle(tmp_path: Path, wheels: list[Path], memory: bytes) -> Path:
    runs, stored = _sparse(memory)
    meta = {
        "version": 3,
        "sitePackages": "/lib/python3.14/site-packages",
        "memoryBytes": len(memory),
        "pages": runs,
        "dynlibs": [],
    }
    data = bundle_zip(
        [
            ("meta.json", json.dumps(meta).encode()),
            ("site-packages.tar", tar_bytes(site_packages_files(wheels))),
            ("memory.pages", stored),
        ]
    )
    bundle = tmp_path / "bundle.zip"
    bundle.write_bytes(data)
    return bundle


def _memory() -> bytes:
    """Zero pages, partly filled pages, a run of full pages and a short last page."""
    memory = bytearray(PAGE * 40 + 100)
    memory[5:9] = b"head"
    memory[PAGE * 3 + 17] = 1
    memory[PAGE * 10 : PAGE * 14] = bytes(range(256)) * (PAGE * 4 // 256)
    memory[-3:] = b"end"
    return bytes(memory)


def test_the_worker_reads_back_the_files_and_the_memory(
    tmp_path: Path, wheels: tuple[list[Path], dict[str, bytes]]
) -> None:
    """Every wheel file, the memory (zero pages restored) and meta.json come back."""
    paths, files = wheels
    memory = _memory()
    bundle = _bundle(tmp_path, paths, memory)
    result = _read(bundle)
    assert result.get("error") is None
    assert result["files"] == {name: _sha(data) for name, data in files.items()}
    assert result["memory"] == _sha(memory)
    assert result["memoryLength"] == len(memory)
    assert result["meta"]["memoryBytes"] == len(memory)  # type: ignore[index]


def test_a_damaged_bundle_is_refused_not_waited_for(
    tmp_path: Path, wheels: tuple[list[Path], dict[str, bytes]]
) -> None:
    """A short bundle, a member of the wrong size, a compressed member, or one missing:
    each is an error (so the worker boots without the snapshot), never a wait."""
    bundle = _bundle(tmp_path, wheels[0], _memory())
    data = bundle.read_bytes()
    bundle.write_bytes(data[: len(data) // 2])
    assert "ended early" in str(_read(bundle).get("error"))
    meta = json.dumps({"version": 3, "memoryBytes": 10, "pages": [[0, 4096]], "dynlibs": []})
    bundle.write_bytes(bundle_zip([("meta.json", meta.encode()), ("memory.pages", b"x" * 4097)]))
    assert "4097 bytes, expected 4096" in str(_read(bundle).get("error"))
    with zipfile.ZipFile(bundle, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("meta.json", meta)
    assert "compressed" in str(_read(bundle).get("error"))
    bundle.write_bytes(bundle_zip([("meta.json", meta.encode())]))
    assert "the zip has no" in str(_read(bundle).get("error"))


def test_wheel_data_directories_are_refused(tmp_path: Path) -> None:
    """Files a wheel installs outside site-packages (.data) have nowhere to go."""
    wheel = _wheel(tmp_path / "c.whl", {"c-1.0.data/scripts/tool": b"#!"})
    with pytest.raises(SiteError, match=r"\.data"):
        site_packages_files([wheel])


def test_the_bundle_is_served_in_parts_small_enough_for_any_http_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Parts, in order, make the bundle; each has a brotli variant within the limit, and
    all are named by the bundle's hash."""
    data = bytes(range(256)) * 4096 + hashlib.sha256(b"seed").digest() * 20_000
    monkeypatch.setattr(site, "SNAPSHOT_PART_MAX", 64 << 10)
    entry = write_parts(data, tmp_path / "out", "/vendor/snapshot/", tmp_path / "cache")
    urls = entry["parts"]
    assert isinstance(urls, list)
    assert len(urls) > 1
    names = [url.removeprefix("/vendor/snapshot/") for url in urls]
    assert names == [f"pagecontext-{_sha(data)[:16]}-{i}.bin" for i in range(len(names))]
    out = tmp_path / "out"
    assert b"".join((out / name).read_bytes() for name in names) == data
    for name in names:
        packed = (out / (name + ".br")).read_bytes()
        assert len(packed) <= 64 << 10
        assert brotli.decompress(packed) == (out / name).read_bytes()
    assert entry["bytes"] == len(data)


def test_a_snapshot_made_again_is_not_compressed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parts' brotli variants are kept in the cache by content: the same bytes written
    again (a build of unchanged sources) take them from there."""
    data = hashlib.sha256(b"seed").digest() * 10_000
    cache = tmp_path / "cache"
    first = write_parts(data, tmp_path / "first", "/vendor/snapshot/", cache)

    def refuse(*_args: object, **_kwargs: object) -> bytes:
        raise AssertionError("compressed again")

    monkeypatch.setattr(compress.brotli, "compress", refuse)
    again = write_parts(data, tmp_path / "again", "/vendor/snapshot/", cache)
    assert again == first
    for url in again["parts"]:  # type: ignore[attr-defined]  # a list of URLs
        name = str(url).removeprefix("/vendor/snapshot/") + ".br"
        assert (tmp_path / "again" / name).read_bytes() == (tmp_path / "first" / name).read_bytes()


def test_lazy_files_load_at_the_first_import_that_reads_them(tmp_path: Path) -> None:
    """Pyodide (in Node.js) as a restored worker has it: the standard library zip a
    `lazyFile`, and the installed files the bundle leaves out `lazyFiles` from their tar.
    Nothing is loaded until Python reads a file, and sizes are right before that. After
    the restore step, importing an installed module does not read the standard library
    zip. A load that fails, or brings the wrong size, is an OSError for that import, and
    the next import tries again; one good load serves every later read."""
    files = {
        "lazy_pkg/__init__.py": b"VALUE = 'lazy '\n",
        "lazy_pkg/sub.py": b"def read():\n"
        b"    with open(__file__.rpartition('/')[0] + '/data.txt') as f:\n"
        b"        return f.read()\n",
        "lazy_pkg/data.txt": b"data",
        "lazy_pkg/py.typed": b"",
    }
    tar = tmp_path / "files.tar"
    tar.write_bytes(tar_bytes(files))
    listing = [[name, len(data)] for name, data in sorted(files.items())]
    result = run_node(str(LAZY_FILES), str(ROOT), str(tar), json.dumps(listing))
    assert result["size"] == result["expected"]
    assert result["before"] == 0
    assert (result["offline"], result["afterOffline"]) == ("OSError", 1)
    assert result["short"] == "OSError"
    assert (result["whole"], result["afterWhole"]) == ("imported", 3)
    assert (result["another"], result["afterAnother"]) == ("imported", 3)
    assert result["same"] == [0, 1, 1]
    assert result["sizes"] == [size for _name, size in listing]
    assert result["tarBefore"] == 0
    assert (result["value"], result["tarAfter"]) == ("lazy data", 1)


def test_the_static_data_is_stored_as_its_difference_from_the_instantiated_memory() -> None:
    """The snapshot's pages that instantiation wrote are stored XORed with what it wrote:
    unchanged pages become zero (and are not stored), a changed word stays; a restore with
    the same instantiated memory gets the memory back exactly, and one with a different
    instantiated memory is refused (the worker then boots normally) without changing
    anything."""
    result = run_node(str(XOR_BASE), str(ROOT))
    assert result["runs"] == [[4096, 8192], [20480, 4096]]
    assert result["zeroPages"] == [0, 1, 3, 4, 5, 7]
    assert result["restored"] is True
    assert "is not the snapshot's" in str(result["refused"])
    assert result["untouched"] is True


def _make_snapshot(out: Path, tar: Path, modules: list[str]) -> tuple[bytes, bytes]:
    """Run web/make-snapshot.mjs with npm's Pyodide; return memory.pages and meta.json."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node and the npm runtime packages are needed: run `make unit`")
    pyodide = ROOT / "node_modules" / "pyodide"
    command = [node, str(ROOT / site.SNAPSHOT_SCRIPT), str(pyodide)]
    command += [str(pyodide / "pyodide-lock.json"), str(tar), str(out), *modules]
    subprocess.run(command, capture_output=True, timeout=120, check=True)
    return (out / "memory.pages").read_bytes(), (out / "meta.json").read_bytes()


def test_equal_inputs_make_an_equal_snapshot_and_other_inputs_another(tmp_path: Path) -> None:
    """Made twice from the same files, the snapshot is the same bytes (its randomness and
    clocks come from its inputs, web/make-snapshot.mjs), so a build of unchanged sources
    keeps its name; other files make another (the string-hash secret among them)."""
    tar = tmp_path / "site-packages.tar"
    tar.write_bytes(
        tar_bytes({"tiny.py": b"import random\nTABLE = {str(i): i for i in range(99)}\n"})
    )
    modules = ["json", "tiny"]
    first = _make_snapshot(tmp_path / "first", tar, modules)
    assert _make_snapshot(tmp_path / "second", tar, modules) == first
    tar.write_bytes(
        tar_bytes({"tiny.py": b"import random\nTABLE = {str(i): i for i in range(98)}\n"})
    )
    other = _make_snapshot(tmp_path / "other", tar, modules)
    assert other[0] != first[0]
