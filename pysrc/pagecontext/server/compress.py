"""Brotli variants of the big runtime files, made once at build time.

The server sends `<file>.br` with `Content-Encoding: br` to a browser that accepts it
(see `app._BuildStaticFiles`), so the runtime costs its brotli size on the wire, not its
gzip size. Compressing the 9.6 MB Pyodide wasm at quality 11 takes most of a minute,
so results are cached by content hash and reused while the input is unchanged
(`cached_brotli`, which the boot snapshot's variants use too).

Pyodide's standard library zip is stored deflated; it is first rewritten with its
members stored, which brotli then compresses far better than deflate did (the browser
gets the same files, in a zip that is larger on disk and smaller on the wire).
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from pathlib import Path

import brotli

# Files worth a brotli variant: the runtimes and the standard library.
SUFFIXES = (".wasm", ".mjs", ".js", ".zip", ".json")
MIN_BYTES = 50_000
STORED_ZIPS = ("python_stdlib.zip",)
# brotli's own default window (4 MB).
DEFAULT_WINDOW = 22


def restore_stored(path: Path) -> None:
    """Rewrite a zip with every member stored (no compression), keeping names and order."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as out:
        for info in source.infolist():
            stored = zipfile.ZipInfo(info.filename, date_time=info.date_time)
            stored.external_attr = info.external_attr
            out.writestr(stored, source.read(info), compress_type=zipfile.ZIP_STORED)
    path.write_bytes(buffer.getvalue())


def precompress(site: Path, cache: Path) -> list[tuple[Path, int, int]]:
    """Write `<file>.br` beside each big runtime file under `site/vendor`.

    Returns (file, size, brotli size) for each file compressed. The cache folder keeps
    compressed outputs by the input's sha256.
    """
    cache.mkdir(parents=True, exist_ok=True)
    done = []
    for path in sorted((site / "vendor").rglob("*")):
        if not path.is_file() or path.suffix not in SUFFIXES:
            continue
        if path.name in STORED_ZIPS:
            restore_stored(path)
        data = path.read_bytes()
        if len(data) < MIN_BYTES:
            continue
        target = path.with_name(path.name + ".br")
        target.write_bytes(cached_brotli(data, cache))
        done.append((path, len(data), target.stat().st_size))
    return done


def brotli_cache(root: Path) -> Path:
    """The folder of the repository `root` where brotli variants are kept between builds."""
    return root / "build" / "cache" / "brotli"


def cached_brotli(data: bytes, cache: Path, *, lgwin: int = DEFAULT_WINDOW) -> bytes:
    """`data` compressed with brotli at quality 11 and window `lgwin`, kept in the folder
    `cache` under the input's sha256 (and the window, when not the default) and reused
    while the input is unchanged."""
    cache.mkdir(parents=True, exist_ok=True)
    window = "" if lgwin == DEFAULT_WINDOW else f"-w{lgwin}"
    cached = cache / f"{hashlib.sha256(data).hexdigest()}{window}.br"
    if not cached.is_file():
        partial = cached.with_suffix(".partial")
        partial.write_bytes(brotli.compress(data, quality=11, lgwin=lgwin))
        partial.replace(cached)
    return cached.read_bytes()
