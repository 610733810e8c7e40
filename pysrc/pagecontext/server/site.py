"""Assembles everything the browser loads into one folder the server serves.

The browser never reaches a CDN: the runtimes come from the npm packages pinned in
package-lock.json, the third-party wheels from browser-wheels.txt (pinned by hash),
and the project's own wheel is built from pysrc. The result:

    site/vendor/pyodide-<version>/       Pyodide runtime files (immutable)
    site/vendor/micropython-<version>/   MicroPython runtime files (immutable)
    site/wheels/<wheel>                  third-party wheels (immutable, versioned names)
    site/wheels/<sha>/pagecontext-*.whl  the project wheel, under its content hash
    site/py/pyodide-lock.json            the lock Pyodide resolves packages from, with sha256
    site/py/runtime.json                 where the boot scripts find all of the above
    site/py/edge/...                     the edge's modules, compiled to MicroPython bytecode
    site/py/apps/<name>.mpy              the demo pages' own MicroPython modules, compiled

The edge ships as `.mpy` bytecode (mpy-cross, the same MicroPython version as the
runtime), so the main thread never spends a long task compiling Python source.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PYODIDE_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip")
MICROPYTHON_FILES = ("micropython.mjs", "micropython.wasm")
MICROPYTHON_PACKAGE = "@micropython/micropython-webassembly-pyscript"

# The modules the main-thread edge runs under MicroPython: the window-facing rules and
# the edge itself. Package __init__ files are written empty, since the CPython package
# initialisers may use what MicroPython lacks.
EDGE_MODULES = ("pagecontext/windowrules.py", "pagecontext/browser/edge.py")
EDGE_PACKAGES = ("pagecontext/__init__.py", "pagecontext/browser/__init__.py")
# The demo pages' own code, run by the same MicroPython after the edge.
APPS_DIR = "web/demo"


class SiteError(Exception):
    """The site cannot be assembled; the message says which input is missing."""


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _npm_version(node_modules: Path, package: str) -> str:
    manifest = node_modules / package / "package.json"
    if not manifest.is_file():
        raise SiteError(f"{manifest} is missing: run `npm ci` (make does)")
    version = json.loads(manifest.read_text())["version"]
    if not isinstance(version, str):
        raise SiteError(f"{manifest} has no version")
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
    """Build the pure-Python wheel of pysrc into out_dir and return its path."""
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
            str(root),
        ],
        check=True,
    )
    wheels = sorted(out_dir.glob("pagecontext-*.whl"))
    if len(wheels) != 1:
        raise SiteError(f"expected one pagecontext wheel in {out_dir}, found {len(wheels)}")
    return wheels[0]


def assemble(root: Path, out: Path, wheels_dir: Path) -> dict[str, object]:
    """Assemble the site under `out` and return the runtime description it wrote."""
    node_modules = root / "node_modules"
    pyodide_version = _npm_version(node_modules, "pyodide")
    mpy_version = _npm_version(node_modules, MICROPYTHON_PACKAGE)
    if out.exists():
        shutil.rmtree(out)
    pyodide_dir = f"vendor/pyodide-{pyodide_version}"
    mpy_dir = f"vendor/micropython-{mpy_version}"
    _copy_files(node_modules / "pyodide", PYODIDE_FILES, out / pyodide_dir)
    _copy_files(node_modules / MICROPYTHON_PACKAGE, MICROPYTHON_FILES, out / mpy_dir)

    third_party = sorted(wheels_dir.glob("*.whl"))
    if not third_party:
        raise SiteError(f"no wheels in {wheels_dir}: run `make` to download them")
    (out / "wheels").mkdir(parents=True)
    wheel_urls: list[tuple[Path, str]] = []
    for wheel in third_party:
        shutil.copyfile(wheel, out / "wheels" / wheel.name)
        wheel_urls.append((wheel, f"/wheels/{wheel.name}"))
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

    runtime: dict[str, object] = {
        "pyodide": {"version": pyodide_version, "indexURL": f"/{pyodide_dir}/"},
        "micropython": {"version": mpy_version, "module": f"/{mpy_dir}/micropython.mjs"},
        "lockFileURL": "/py/pyodide-lock.json",
        "packages": sorted(packages),
        "edge": {"base": "/py/edge/", "files": edge_files},
        "apps": {"base": "/py/apps/", "modules": apps},
    }
    (out / "py" / "runtime.json").write_text(json.dumps(runtime, indent=1))
    return runtime
