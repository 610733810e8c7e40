"""Assembles everything the browser loads into one folder the server serves.

The browser never reaches a CDN: the runtimes come from the npm packages pinned in
package-lock.json, the third-party wheels from browser-wheels.txt (pinned by hash),
and the project's own wheel is built from pysrc. The result:

    site/vendor/pyodide-<version>-<sha>/ Pyodide runtime files (immutable; the name
                                         changes with any byte of them)
    site/vendor/micropython-<version>-<sha>/ MicroPython runtime files (immutable; the module
                                         with V8's compile hint as its first line)
    site/vendor/snapshot/pagecontext-<sha>-<n>.bin  the worker's boot snapshot, in parts
                                         (immutable), each with its brotli variant .br
    site/vendor/snapshot/pagecontext-files-<sha>.tar  the installed files the snapshot
                                         leaves out (immutable, with .br), read on demand
    site/wheels/<wheel>                  third-party wheels (immutable, versioned names)
    site/wheels/<sha>/pagecontext-*.whl  the project wheel, under its content hash
    site/py/pyodide-lock.json            the lock Pyodide resolves packages from, with sha256
    site/py/runtime.json                 where the boot scripts find all of the above
    site/py/edge/...                     the edge's modules, compiled to MicroPython bytecode
    site/py/apps/<name>.mpy              the demo pages' own MicroPython modules, compiled

The edge ships as `.mpy` bytecode (mpy-cross, the same MicroPython version as the
runtime), so the main thread never spends a long task compiling Python source.

The worker boots from a memory snapshot: Node.js runs `web/make-snapshot.mjs`, which
boots this Pyodide with every wheel installed and the core imported (from bytecode it
compiled in a first pass), and saves its memory. The bundle (a zip of the snapshot, the
dynamic libraries as a tar, and how the snapshot was made; see `web/snapshot.mjs`) is
named by its content hash; the wheels' other files, which the snapshot has imported
already, are a tar beside it that a worker downloads only if Python reads one of them.
The bundle's members are stored, and its brotli variant is written here (quality 11,
as the runtime's), so that the browser decodes it on its network thread while the worker
copies it into place. It is served in parts of at most 4 MiB on the wire, which any
HTTP cache keeps (Chromium's in-memory cache, in a private window, keeps no entry over
1/8 of its 50 MB). The wheels and the lock stay for the worker's fallback, a normal
boot.
"""

from __future__ import annotations

import base64
import hashlib
import io
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Final, Literal

from pagecontext.server.compress import (
    STORED_ZIPS,
    brotli_cache,
    cached_brotli,
    precompress,
    restore_stored,
)

PYODIDE_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip")
MICROPYTHON_FILES = ("micropython.mjs", "micropython.wasm")
# V8's explicit compile hint: a script that starts with this comment is compiled whole
# while it streams in, off the main thread. MicroPython's module is one function whose
# inner functions V8 would otherwise parse and compile on the main thread at its first
# call, in one task of each frame's boot (docs/performance.md, "MicroPython's module,
# compiled off the main thread"). Served as the package's file with this line first.
COMPILE_HINT = b"//# allFunctionsCalledOnLoad\n"
MICROPYTHON_PACKAGE = "@micropython/micropython-webassembly-pyscript"

# The modules the main-thread edge runs under MicroPython: the window-facing rules, the
# integration surface's rules and the edge itself, dependencies first (web/boot.mjs
# imports them in this order, each in its own task). Package __init__ files are written
# empty, since the CPython package initialisers may use what MicroPython lacks.
EDGE_MODULES = (
    "pagecontext/windowrules.py",
    "pagecontext/integration.py",
    "pagecontext/browser/panelview.py",
    "pagecontext/browser/edge.py",
)
EDGE_PACKAGES = ("pagecontext/__init__.py", "pagecontext/browser/__init__.py")
# The demo pages' own code, run by the same MicroPython after the edge.
APPS_DIR = "web/demo"
# What the worker's boot snapshot has imported already (the worker imports no more; a
# restored worker downloads the files of a module it imports later, see
# web/snapshot.mjs). pydantic imports its dataclass support while it builds the AG-UI
# event adapter, on the assistant's first answer (pagecontext.agui._event_adapter).
SNAPSHOT_IMPORTS = ("pagecontext.browser.worker", "pydantic._internal._dataclasses")
SNAPSHOT_SCRIPT = "web/make-snapshot.mjs"
SNAPSHOT_URL = "/vendor/snapshot/"
# A fixed zip and tar timestamp, so that equal inputs give equal bytes.
_EPOCH = (1980, 1, 1, 0, 0, 0)
# Quality 11, the runtime's (compress.cached_brotli), with a 16 MB window: 6.2 MB for a
# bundle that quality 8 made 7.1 MB (10: 6.5 MB), 0.9 MB less on the wire for each
# frame's first visit. It is the slowest (about 40 s of CPU per 9 MB part, the parts
# compressed side by side), so the variants are kept in the brotli cache: equal inputs
# make an equal snapshot (web/make-snapshot.mjs), which a later build then does not
# compress again.
SNAPSHOT_BROTLI_WINDOW = 24
SNAPSHOT_PART_MAX = 4 << 20


class SiteError(Exception):
    """The site cannot be assembled; the message says which input is missing."""


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sri(data: bytes) -> str:
    """The Subresource Integrity value of `data` (`sha384-`, base64)."""
    return "sha384-" + base64.b64encode(hashlib.sha384(data).digest()).decode()


def _npm_version(node_modules: Path, package: str) -> str:
    """The version of `package` installed in `node_modules`, which must be the one the
    repository's package-lock.json pins: what a build copies into the site is what
    the lock names, not what an earlier `npm ci` left."""
    manifest = node_modules / package / "package.json"
    if not manifest.is_file():
        raise SiteError(f"{manifest} is missing: run `npm ci` (make does)")
    version = json.loads(manifest.read_text())["version"]
    if not isinstance(version, str):
        raise SiteError(f"{manifest} has no version")
    lock = node_modules.parent / "package-lock.json"
    try:
        pinned = json.loads(lock.read_text())["packages"][f"node_modules/{package}"]["version"]
    except (OSError, ValueError, KeyError, TypeError):
        raise SiteError(f"{lock} pins no version of {package}") from None
    if version != pinned:
        raise SiteError(
            f"{manifest} is version {version}, and {lock.name} pins {pinned}: "
            "run `npm ci` (make does)"
        )
    return version


def _copy_files(src_dir: Path, names: tuple[str, ...], dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for name in names:
        src = src_dir / name
        if not src.is_file():
            raise SiteError(f"{src} is missing")
        shutil.copyfile(src, dest / name)


def _wheel_metadata(wheel: Path) -> tuple[str, str, list[str]]:
    """Return (name, version, top-level import names) read from a wheel."""
    with zipfile.ZipFile(wheel) as zf:
        meta_name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        meta = zf.read(meta_name).decode()
        tops = sorted(
            {
                n.split("/")[0].removesuffix(".py")
                for n in zf.namelist()
                if not n.split("/")[0].endswith((".dist-info", ".data"))
            }
        )
    fields = dict(
        line.split(": ", 1) for line in meta.splitlines() if ": " in line and not line[0].isspace()
    )
    return fields["Name"].lower().replace("_", "-"), fields["Version"], tops


def compile_mpy(source: Path, target: Path) -> None:
    """Compile one Python file to MicroPython bytecode with mpy-cross."""
    target.parent.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [sys.executable, "-m", "mpy_cross", "-s", source.name, "-o", str(target), str(source)],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise SiteError(f"mpy-cross could not compile {source}: {result.stderr.strip()}")


def build_project_wheel(root: Path, out_dir: Path) -> Path:
    """Build the pure-Python wheel of pysrc into out_dir and return its path. `root` may
    be relative: pip is given it absolute, since it reads a bare name (`repo`) as a
    project to find on an index, not as a folder."""
    out_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            str(out_dir),
            str(root.resolve()),
        ],
        check=True,
    )
    wheels = sorted(out_dir.glob("pagecontext-*.whl"))
    if len(wheels) != 1:
        raise SiteError(f"expected one pagecontext wheel in {out_dir}, found {len(wheels)}")
    return wheels[0]


def site_packages_files(wheels: list[Path]) -> dict[str, bytes]:
    """Return the files of `wheels` as installed in site-packages: path -> bytes."""
    files: dict[str, bytes] = {}
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as zf:
            for member in zf.infolist():
                if member.is_dir():
                    continue
                if ".data/" in member.filename:
                    raise SiteError(f"{wheel.name}: .data is not supported ({member.filename})")
                files[member.filename] = zf.read(member)
    return files


def tar_bytes(files: dict[str, bytes]) -> bytes:
    """Return `files` as one ustar archive (sorted, with fixed owners, modes and times)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name in sorted(files):
            entry = tarfile.TarInfo(name)
            entry.size = len(files[name])
            entry.mode = 0o644
            tar.addfile(entry, io.BytesIO(files[name]))
    return buffer.getvalue()


def bundle_zip(members: list[tuple[str, bytes]]) -> bytes:
    """Return a zip of `members`, in this order, stored, with fixed timestamps: the form
    `web/snapshot.mjs` reads while it downloads (sizes in each local header)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as zf:
        for name, data in members:
            zf.writestr(zipfile.ZipInfo(name, date_time=_EPOCH), data)
    return buffer.getvalue()


def build_snapshot(
    root: Path, out: Path, pyodide_dir: Path, lock: Path, wheels: list[Path]
) -> dict[str, object]:
    """Make the worker's boot snapshot bundle under `out`/vendor/snapshot and return its
    runtime.json entry (url, sizes).

    The bundle holds the dynamic libraries, which the restore needs before Python runs;
    every other installed file (imported already, in the snapshot) goes to a tar of its
    own beside it, which a worker downloads only if Python reads one of them."""
    node = shutil.which("node")
    if node is None:
        raise SiteError("node is missing: Node.js makes the boot snapshot (see package.json)")
    files = site_packages_files(wheels)
    folder = out / "vendor" / "snapshot"
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "site-packages.tar").write_bytes(tar_bytes(files))
        script = [node, str(root / SNAPSHOT_SCRIPT)]
        inputs = [str(pyodide_dir), str(lock), str(tmp / "site-packages.tar")]
        # First the wheels' bytecode, which the snapshot's imports then load (see
        # make-snapshot.mjs); the browser gets the sources only.
        _run_node([*script, "--bytecode", *inputs, str(tmp / "bytecode")])
        bytecode = {
            path.relative_to(tmp / "bytecode").as_posix(): path.read_bytes()
            for path in sorted((tmp / "bytecode").rglob("*.pyc"))
        }
        (tmp / "site-packages.tar").write_bytes(tar_bytes(files | bytecode))
        _run_node([*script, *inputs, str(tmp), *SNAPSHOT_IMPORTS])
        meta = json.loads((tmp / "meta.json").read_text())
        memory = (tmp / "memory.pages").read_bytes()
    prefix = meta["sitePackages"] + "/"
    eager = {lib["path"].removeprefix(prefix) for lib in meta["dynlibs"]}
    lazy = {name: data for name, data in files.items() if name not in eager}
    cache = brotli_cache(root)
    meta["lazyFiles"] = {
        "url": write_lazy_files(tar_bytes(lazy), folder, SNAPSHOT_URL, cache),
        "files": [[name, len(lazy[name])] for name in sorted(lazy)],
    }
    data = bundle_zip(
        [
            ("meta.json", json.dumps(meta).encode()),
            ("site-packages.tar", tar_bytes({name: files[name] for name in eager})),
            ("memory.pages", memory),
        ]
    )
    return write_parts(data, folder, SNAPSHOT_URL, cache)


def _run_node(command: list[str]) -> None:
    made = subprocess.run(command, capture_output=True, text=True, check=False)
    if made.returncode != 0:
        raise SiteError(f"the boot snapshot failed: {made.stderr.strip()[-4000:]}")


def write_lazy_files(data: bytes, folder: Path, url: str, cache: Path) -> str:
    """Write the tar of the files the bundle leaves out as `pagecontext-files-<sha>.tar`,
    with its brotli variant (kept in `cache`), and return its URL."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"pagecontext-files-{hashlib.sha256(data).hexdigest()[:16]}.tar"
    path.write_bytes(data)
    path.with_name(path.name + ".br").write_bytes(_brotli(data, cache))
    return url + path.name


def _brotli(data: bytes, cache: Path) -> bytes:
    return cached_brotli(data, cache, lgwin=SNAPSHOT_BROTLI_WINDOW)


def write_parts(data: bytes, folder: Path, url: str, cache: Path) -> dict[str, object]:
    """Write `data` as `pagecontext-<sha>-<n>.bin` parts, each with a brotli variant of at
    most SNAPSHOT_PART_MAX bytes (kept in `cache`), and return the runtime.json entry: the
    parts' URLs, in order, and the sizes."""
    name = f"pagecontext-{hashlib.sha256(data).hexdigest()[:16]}"
    # A first guess from the usual ratio (about 3.5 to 1), then one more part at a time.
    count = max(1, -(-len(data) // (SNAPSHOT_PART_MAX * 3)))
    while True:
        size = -(-len(data) // count)
        parts = [data[start : start + size] for start in range(0, len(data), size)]
        # Side by side: brotli lets go of the GIL while it compresses.
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            packed = list(pool.map(lambda part: _brotli(part, cache), parts))
        if max(len(p) for p in packed) <= SNAPSHOT_PART_MAX:
            break
        count += 1
    folder.mkdir(parents=True, exist_ok=True)
    urls = []
    for index, (part, brotli_part) in enumerate(zip(parts, packed, strict=True)):
        path = folder / f"{name}-{index}.bin"
        path.write_bytes(part)
        path.with_name(path.name + ".br").write_bytes(brotli_part)
        urls.append(url + path.name)
    return {
        "parts": urls,
        "bytes": len(data),
        "brotliBytes": sum(len(p) for p in packed),
        # What the worker checks a copy in its Cache API against.
        "sha256": hashlib.sha256(data).hexdigest(),
    }


# Written into every output: a folder that holds it may be replaced by the next output.
OUTPUT_MARK: Final = ".pagecontext-output"


def _is_output(folder: Path) -> bool:
    """True if `folder` holds an earlier output: its mark, and nothing less. (A bundle's
    files copied into a web root beside the site's own pages, without the mark, are not
    one: replacing that folder would delete the pages.)"""
    return (folder / OUTPUT_MARK).is_file()


# What each command writes, and how an earlier output shows which one wrote it.
OutputKind = Literal["site", "bundle"]
OUTPUT_KINDS: Final = {
    "site": "the site `pagecontext assemble` wrote (the one `pagecontext demo` serves)",
    "bundle": "a bundle `pagecontext build` wrote",
}


def output_kind(folder: Path) -> OutputKind | None:
    """Which command wrote the earlier output `folder`, from what it holds: a bundle
    names its files in manifest.json, a site's boot reads py/runtime.json under that
    name; None when neither."""
    if (folder / "manifest.json").is_file():
        return "bundle"
    if (folder / "py" / "runtime.json").is_file():
        return "site"
    return None


def _no_progress(_step: str) -> None:
    return None


@contextmanager
def replacing(out: Path, root: Path, kind: OutputKind) -> Iterator[Path]:
    """Yield a new, empty folder beside `out` to write an output into. When the block
    ends, the new folder takes `out`'s place (an earlier output there is removed); when
    it raises (Ctrl-C included), the new folder is removed and `out` is left as it was,
    and so are the folders above it: those made for it are removed again.

    Raises SiteError, before anything is written, if `out` is a file or a symbolic
    link, holds the repository `root`, or is a folder that is neither empty nor an
    earlier output (it holds no OUTPUT_MARK), or is an output of the other `kind` (a
    bundle is never replaced by a site, nor the demo's site by a bundle): nothing that is
    not an output of this command is ever deleted. Everything in an earlier output is
    replaced, also files put there since.
    """
    target = out.absolute()
    if target.is_symlink():
        # Its place would go to a folder, and the link switched by hand would be lost.
        raise SiteError(
            f"{out} is a symbolic link (to {os.readlink(target)}): write into the folder"
            " it names, or a copy of it, then switch the link (docs/deploy.md)"
        )
    if target.exists() and not target.is_dir():
        raise SiteError(f"{out} is a file, not a folder")
    repository = root.resolve()
    if target.resolve() == repository or target.resolve() in repository.parents:
        raise SiteError(f"{out} holds the repository {root}: write somewhere else")
    if target.is_dir() and any(target.iterdir()) and not _is_output(target):
        raise SiteError(
            f"{out} is not empty and holds no earlier output (no {OUTPUT_MARK}): "
            "write into a new or empty folder (an output of an older pagecontext, made "
            f"before the mark: `touch {out}/{OUTPUT_MARK}` to have it replaced)"
        )
    earlier = output_kind(target) if target.is_dir() and _is_output(target) else None
    if earlier is not None and earlier != kind:
        raise SiteError(f"{out} holds {OUTPUT_KINDS[earlier]}: write the {kind} somewhere else")
    # The folders above `out` that do not exist yet, the deepest first.
    made = list(itertools.takewhile(lambda folder: not folder.exists(), target.parents))
    new: Path | None = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            new = Path(tempfile.mkdtemp(prefix=f".{target.name}-new-", dir=target.parent))
        except OSError as error:
            # Named for the folder the user gave, not the one made beside it.
            raise SiteError(
                f"cannot write beside {out}, in {target.parent}: {error.strerror}"
            ) from None
        umask = os.umask(0)
        os.umask(umask)
        new.chmod(0o777 & ~umask)  # as a folder made by mkdir, not mkdtemp's 0700
        (new / OUTPUT_MARK).write_text(
            "Written by pagecontext (assemble, build): the next output replaces this folder,\n"
            "everything in it included.\n"
        )
        yield new
    except BaseException:
        if new is not None:
            shutil.rmtree(new, ignore_errors=True)
        for folder in made:
            try:
                folder.rmdir()  # only while empty: what another program put there stays
            except OSError:
                break
        raise
    if target.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}-old-", dir=target.parent))
        target.rename(old / target.name)
        new.rename(target)
        shutil.rmtree(old, ignore_errors=True)
    else:
        new.rename(target)


def assemble(
    root: Path,
    out: Path,
    wheels_dir: Path,
    progress: Callable[[str], None] = _no_progress,
    *,
    brotli_cache: Path | None = None,
) -> tuple[dict[str, object], list[tuple[Path, int, int]]]:
    """Assemble the site into `out`; return the runtime description it wrote and, for
    each brotli variant written, (file, size, brotli size).

    `brotli_cache` keeps the brotli variants of the runtime between builds (default: no
    variants). `out` is replaced only once the whole site is written, its variants
    included (`replacing`): a server reading `out` meanwhile serves the old site whole,
    never a variant half written. `progress` is told each step as it starts. Raises
    SiteError for a missing input or an `out` that must not be replaced.
    """
    with replacing(out, root, "site") as folder:
        runtime = assemble_into(root, folder, wheels_dir, progress)
        compressed = [
            (out / path.relative_to(folder), size, packed)
            for path, size, packed in brotli_variants(folder, brotli_cache, progress)
        ]
    return runtime, compressed


def brotli_variants(
    folder: Path, cache: Path | None, progress: Callable[[str], None] = _no_progress
) -> list[tuple[Path, int, int]]:
    """Write the brotli variants of the runtime files in `folder`, an output being
    written (before it replaces the one it is for), keeping them in `cache` between
    builds; none if `cache` is None. Returns (file, size, brotli size) for each."""
    if cache is None:
        return []
    progress(f"brotli variants of the runtime files (cached in {cache})")
    return precompress(folder, cache)


# The browser's third-party wheels, each pinned by version and SHA-256 (`make` downloads
# them into build/wheels with pip, which checks the hashes).
WHEEL_PINS: Final = "browser-wheels.txt"
_PIN_RE: Final = re.compile(r"^([A-Za-z0-9_.-]+)==(\S+)\s+--hash=sha256:([0-9a-f]{64})\s*$")


def pinned_wheels(pins: Path, wheels_dir: Path) -> list[Path]:
    """The wheels of `wheels_dir` that `pins` names, by their SHA-256, in the pins' order.

    A folder keeps what earlier downloads left there (an older version of a package, say):
    only the pinned files are taken. Raises SiteError for a pin with no wheel of its hash.
    """
    try:
        lines = pins.read_text().splitlines()
    except OSError as error:
        raise SiteError(f"cannot read the wheel pins {pins}: {error.strerror}") from None
    wanted = {}
    for line in lines:
        if line.strip() and not line.lstrip().startswith("#"):
            found = _PIN_RE.match(line.strip())
            if found is None:
                raise SiteError(f"{pins}: not a pin (name==version --hash=sha256:...): {line!r}")
            wanted[found.group(3)] = f"{found.group(1)}=={found.group(2)}"
    by_hash = {_sha256(wheel): wheel for wheel in sorted(wheels_dir.glob("*.whl"))}
    missing = [pin for digest, pin in wanted.items() if digest not in by_hash]
    if missing:
        raise SiteError(
            f"no wheel in {wheels_dir} for {', '.join(missing)}: `make` downloads them "
            "into build/wheels, where the commands look unless given --wheels"
        )
    return [by_hash[digest] for digest in wanted]


def _content_named(out: Path, folder: str) -> str:
    """Rename `out / folder` to `<folder>-<hash>`, the start of the SHA-256 of its files'
    names and bytes; return the new name."""
    digest = hashlib.sha256()
    for path in sorted((out / folder).rglob("*")):
        if path.is_file():
            digest.update(path.relative_to(out / folder).as_posix().encode() + b"\0")
            digest.update(_sha256(path).encode())
    named = f"{folder}-{digest.hexdigest()[:12]}"
    (out / folder).rename(out / named)
    return named


def assemble_into(
    root: Path, out: Path, wheels_dir: Path, progress: Callable[[str], None] = _no_progress
) -> dict[str, object]:
    """Assemble the site into the new, empty folder `out` (see `assemble`)."""
    node_modules = root / "node_modules"
    pyodide_version = _npm_version(node_modules, "pyodide")
    mpy_version = _npm_version(node_modules, MICROPYTHON_PACKAGE)
    third_party = pinned_wheels(root / WHEEL_PINS, wheels_dir)
    progress("the runtimes and the wheels")
    pyodide_dir = f"vendor/pyodide-{pyodide_version}"
    mpy_dir = f"vendor/micropython-{mpy_version}"
    _copy_files(node_modules / "pyodide", PYODIDE_FILES, out / pyodide_dir)
    _copy_files(node_modules / MICROPYTHON_PACKAGE, MICROPYTHON_FILES, out / mpy_dir)
    module = out / mpy_dir / "micropython.mjs"
    module.write_bytes(COMPILE_HINT + module.read_bytes())

    (out / "wheels").mkdir(parents=True)
    wheel_urls: list[tuple[Path, str]] = []
    for wheel in third_party:
        shutil.copyfile(wheel, out / "wheels" / wheel.name)
        wheel_urls.append((wheel, f"/wheels/{wheel.name}"))
    progress("the project's wheel")
    with tempfile.TemporaryDirectory() as tmp:
        own = build_project_wheel(root, Path(tmp))
        digest = _sha256(own)[:16]
        dest = out / "wheels" / digest / own.name
        dest.parent.mkdir(parents=True)
        shutil.copyfile(own, dest)
    wheel_urls.append((dest, f"/wheels/{digest}/{own.name}"))

    npm_lock = json.loads((node_modules / "pyodide" / "pyodide-lock.json").read_text())
    packages: dict[str, object] = {}
    for wheel, url in wheel_urls:
        name, version, imports = _wheel_metadata(wheel)
        packages[name] = {
            "name": name,
            "version": version,
            "file_name": url,
            "install_dir": "site",
            "sha256": _sha256(wheel),
            "package_type": "package",
            "imports": imports,
            "depends": [],
            "unvendored_tests": False,
            "shared_library": False,
        }
    # Dependencies are loaded explicitly (all of them, in one loadPackage call), so the
    # lock needs no dependency graph.
    lock = {"info": npm_lock["info"], "packages": packages}
    (out / "py").mkdir(parents=True)
    (out / "py" / "pyodide-lock.json").write_text(json.dumps(lock, indent=1))
    # The snapshot must see the standard library zip as the browser will get it, and
    # compress.precompress (after this) rewrites it stored: done here first, the same way.
    for name in STORED_ZIPS:
        restore_stored(out / pyodide_dir / name)
    progress("the workers' boot snapshot (Pyodide in Node.js)")
    snapshot = build_snapshot(
        root,
        out,
        out / pyodide_dir,
        out / "py" / "pyodide-lock.json",
        [wheel for wheel, _url in wheel_urls],
    )
    snapshot["packages"] = sorted(packages)

    progress("the edge and the apps, compiled for MicroPython")
    src = root / "pysrc"
    edge_files = []
    for rel in EDGE_PACKAGES:
        target = out / "py" / "edge" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("")
        edge_files.append(rel)
    for rel in EDGE_MODULES:
        compiled = rel.removesuffix(".py") + ".mpy"
        compile_mpy(src / rel, out / "py" / "edge" / compiled)
        edge_files.append(compiled)
    apps = []
    for source in sorted((root / APPS_DIR).glob("*.py")):
        compile_mpy(source, out / "py" / "apps" / (source.stem + ".mpy"))
        apps.append(source.stem)

    # Served immutable for a year: a name that changes whenever a byte does (the build
    # changes the packages' files: the zip stored, the module's compile hint).
    pyodide_dir = _content_named(out, pyodide_dir)
    mpy_dir = _content_named(out, mpy_dir)
    runtime: dict[str, object] = {
        "pyodide": {
            "version": pyodide_version,
            "indexURL": f"/{pyodide_dir}/",
            # What the worker checks a copy of the runtime's wasm (its Cache API's, its
            # embedder's) against.
            "wasmSha256": _sha256(out / pyodide_dir / "pyodide.asm.wasm"),
            "wasmBytes": (out / pyodide_dir / "pyodide.asm.wasm").stat().st_size,
        },
        "micropython": {"version": mpy_version, "module": f"/{mpy_dir}/micropython.mjs"},
        "lockFileURL": "/py/pyodide-lock.json",
        "packages": sorted(packages),
        "snapshot": snapshot,
        # The edge's and the apps' files with the digest the boot script fetches each
        # with (`fetch(url, {integrity})`): the browser runs no byte of them that is not
        # this build's.
        "edge": {
            "base": "/py/edge/",
            "files": edge_files,
            "integrity": {rel: sri((out / "py" / "edge" / rel).read_bytes()) for rel in edge_files},
        },
        "apps": {
            "base": "/py/apps/",
            "modules": apps,
            "integrity": {
                app: sri((out / "py" / "apps" / f"{app}.mpy").read_bytes()) for app in apps
            },
        },
    }
    (out / "py" / "runtime.json").write_text(json.dumps(runtime, indent=1))
    return runtime
