"""The static bundle: everything the demo needs, for any static host (`pagecontext build`).

The bundle is one folder that both origins serve (the page's and the assistant's), as
they do under the demo server, so that every URL is the same:

    index.html, assistant.html, workbench.html   the demo pages, filled for the origins
                                    (no-cache: the only names that never change)
    api/sales                       the demo's rows, as /api/sales answers without filters
                                    (the page applies its filters itself)
    web/<name>-<sha>.mjs|.css       the boot script, the worker, the snapshot helpers and
                                    the styles, named by content hash
    py/runtime-<sha>.json, py/pyodide-lock-<sha>.json, py/edge-<sha>/, py/apps-<sha>/
    vendor/, wheels/                as `pagecontext.server.site` assembles them (names
                                    versioned or content-hashed)
    _headers                        the headers a host sends: the Content-Security-Policy
                                    of each page and of the scripts, the caching, and
                                    `X-Content-Type-Options: nosniff` on every file
    integrity.json                  the sha384 of every file the build wrote (the pages'
                                    script and stylesheet carry theirs as `integrity`);
                                    with `--keep-previous`, the earlier bundle's
                                    versioned files are kept beside them, unlisted
    manifest.json                   the boot script's and the stylesheet's URL and
                                    integrity, under fixed keys, for an integrator's own
                                    page to load them by; the two origins; the policies

Every name except the pages' and `api/sales` changes with its content, so a host may
cache it forever. A reference from one file to another is rewritten only where the build
expects it, and the build fails if an expected reference is missing.

A static host runs no code: the resource and action APIs and the built-in agent
(`POST /agent`) are not there. What the bundle's demo does without them is in
docs/deploy.md.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Final

from pagecontext.server.api import SALES_UNITS
from pagecontext.server.app import DEFAULT_AGENT_PATH, IMMUTABLE, NO_CACHE, fill_template
from pagecontext.server.csp import (
    agent_url_problem,
    assistant_connects,
    assistant_policy,
    page_policy,
    worker_policy,
)
from pagecontext.server.data import create_demo_db, query_sales
from pagecontext.server.site import SiteError, assemble_into, brotli_variants, replacing, sri

__all__ = ["Bundle", "Kept", "build_bundle", "headers_file", "keep_previous", "manifest"]

# The files served under their own names, with the references each holds to others, in
# an order where every file comes after those it names.
HASHED_FILES: Final = (
    ("web/snapshot.mjs", ()),
    ("web/styles.css", ()),
    ("py/pyodide-lock.json", ()),
    ("py/runtime.json", ("/py/pyodide-lock.json", "/py/edge/", "/py/apps/")),
    ("web/worker.mjs", ("/py/runtime.json", "/web/snapshot.mjs")),
    ("web/boot.mjs", ("/web/worker.mjs", "/py/runtime.json")),
)
# Folders of the site named by the hash of their files.
HASHED_FOLDERS: Final = ("py/edge", "py/apps")
# (page, template in the repository, the origin it is served from).
PAGES: Final = (
    ("index.html", "index.html", "page"),
    ("assistant.html", "web/assistant.html", "assistant"),
    ("workbench.html", "web/workbench.html", "assistant"),
)
# The files the pages load (by these attributes' values), each with its integrity, and
# manifest.json names for another page to load, under these keys.
PAGE_ASSETS: Final = (("boot", "src", "/web/boot.mjs"), ("styles", "href", "/web/styles.css"))
MANIFEST_PATH: Final = "manifest.json"
SALES_PATH: Final = "api/sales"
IMMUTABLE_FOLDERS: Final = ("/py/*", "/vendor/*", "/wheels/*")
# The folders whose every file is named by its content (or its version): those a page of
# an earlier build, still open in a browser, may load after a new build replaced it.
VERSIONED_FOLDERS: Final = ("web", "py", "vendor", "wheels")
INTEGRITY_PATH: Final = "integrity.json"
# The versioned files a bundle kept of the build before it (`--keep-previous`).
KEPT_PATH: Final = "kept.json"
# The folders that serve JavaScript: the boot script and the worker, and the runtimes.
SCRIPT_FOLDERS: Final = ("/web/*", "/vendor/*")


@dataclass(frozen=True)
class Kept:
    """The versioned files of an earlier bundle that a new one kept (`keep_previous`):
    how many, and their bytes. `found` is False when there was no earlier bundle."""

    found: bool
    files: int = 0
    bytes: int = 0


@dataclass(frozen=True)
class Bundle:
    """What `build_bundle` wrote: the folder, the page and assistant origins, each page's
    Content-Security-Policy by URL path, and what it kept of the earlier bundle (None
    when it was not asked to)."""

    out: Path
    page_origin: str
    assistant_origin: str
    policies: dict[str, str]
    kept: Kept | None = None


def keep_previous(previous: Path, folder: Path) -> Kept:
    """Copy into the new bundle `folder` the versioned files of the earlier bundle
    `previous` (its integrity.json's files under VERSIONED_FOLDERS) that `folder` does
    not have, so that a page loaded from the earlier build still finds every file it may
    yet load, and list them in `folder`'s kept.json. The new bundle's integrity.json
    lists its own files only, so the next build keeps this one's, not those it kept: one
    earlier build is kept, not all. A build that is the earlier one again (it has every
    file of its list: unchanged sources) keeps what that one kept, the build before it.

    Raises SiteError if `previous` holds an integrity.json that is not a bundle's, or a
    kept.json that is not a list of its files."""
    listing = previous / INTEGRITY_PATH
    if not listing.is_file():
        return Kept(found=False)
    urls = _read_listing(listing, dict)
    kept: list[str] = []
    same_build = True
    for url in urls:
        copied = _copy_versioned(previous, folder, str(url))
        if copied is not None:
            same_build = same_build and not copied
            if copied:
                kept.append(str(url))
    if same_build and (previous / KEPT_PATH).is_file():
        kept += [
            str(url)
            for url in _read_listing(previous / KEPT_PATH, list)
            if _copy_versioned(previous, folder, str(url))
        ]
    if kept:
        (folder / KEPT_PATH).write_text(json.dumps(sorted(kept), indent=1), encoding="utf-8")
    size = sum(folder.joinpath(*PurePosixPath(url).parts[1:]).stat().st_size for url in kept)
    return Kept(found=True, files=len(kept), bytes=size)


def _read_listing(path: Path, kind: type) -> Any:
    """The JSON object (integrity.json) or list (kept.json) of an earlier bundle."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(value, kind):
            raise ValueError(f"not a JSON {'object' if kind is dict else 'list'}")
    except ValueError as error:
        raise SiteError(f"{path} is not a bundle's file list ({error})") from None
    return value


def _copy_versioned(previous: Path, folder: Path, url: str) -> bool | None:
    """Copy the earlier bundle's versioned file at `url` into `folder` unless it has one
    there: True if copied, False if `folder` has it, None for a URL that names no
    versioned file of the earlier bundle (outside VERSIONED_FOLDERS, climbing out of
    them, reached through a symbolic link, or not there)."""
    parts = PurePosixPath(url).parts
    # "/web/x.mjs" -> ("/", "web", "x.mjs"); nothing outside the versioned folders,
    # nothing that climbs out of them.
    if len(parts) < 3 or parts[0] != "/" or parts[1] not in VERSIONED_FOLDERS:
        return None
    if any(part in ("", ".", "..") for part in parts[1:]):
        return None
    # Nothing through a symbolic link: a link in the earlier bundle (a file, or a folder
    # on the way to one) could name any file the build's user can read, which would
    # become a file of the new, public bundle.
    if any(previous.joinpath(*parts[1:end]).is_symlink() for end in range(2, len(parts) + 1)):
        return None
    source, target = previous.joinpath(*parts[1:]), folder.joinpath(*parts[1:])
    if not source.is_file():
        return None
    if target.exists():
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source, target)
    return True


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _rewrite(text: str, where: str, names: Iterable[str], urls: dict[str, str]) -> str:
    """Replace each quoted URL of `names` in `text` by its new URL; raise SiteError if
    one is not there."""
    for old in names:
        if f'"{old}"' not in text:
            raise SiteError(f"{where} no longer names {old!r}: update HASHED_FILES")
        text = text.replace(f'"{old}"', f'"{urls[old]}"')
    return text


def _hash_names(root: Path, out: Path) -> dict[str, str]:
    """Give the site's mutable names content hashes: copy the web files into `out`,
    rename the folders and files of `out`/py, rewrite the references between them.
    Return the old URL -> new URL map."""
    urls: dict[str, str] = {}
    for folder in HASHED_FOLDERS:
        files = sorted(p for p in (out / folder).rglob("*") if p.is_file())
        digest = hashlib.sha256()
        for path in files:
            digest.update(path.relative_to(out / folder).as_posix().encode() + b"\0")
            digest.update(path.read_bytes())
        renamed = f"{folder}-{digest.hexdigest()[:16]}"
        (out / folder).rename(out / renamed)
        urls[f"/{folder}/"] = f"/{renamed}/"
    for rel, names in HASHED_FILES:
        source = out / rel if rel.startswith("py/") else root / rel
        text = _rewrite(source.read_text(encoding="utf-8"), rel, names, urls)
        data = text.encode()
        stem, dot, suffix = rel.rpartition(".")
        target = out / f"{stem}-{_digest(data)}{dot}{suffix}"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        if source.parent == out / "py":
            source.unlink()
        urls[f"/{rel}"] = "/" + target.relative_to(out).as_posix()
    return urls


def _write_pages(
    root: Path,
    out: Path,
    assets: dict[str, dict[str, str]],
    origins: dict[str, str],
    agent_url: str,
) -> dict[str, str]:
    """Write the demo pages filled for `origins`, loading `assets` (`manifest`'s) with
    their integrity; return each page's policy by path."""
    policies: dict[str, str] = {}
    for name, template, origin in PAGES:
        text = fill_template(
            (root / template).read_text(encoding="utf-8"),
            root=root,
            page_origin=origins["page"],
            assistant_origin=origins["assistant"],
            sandboxed_panel=False,
            agent_url=agent_url,
            # No credentials: a static file is the same for every visitor. A deployment
            # that signs users in writes each user's into these pages as it serves them
            # (docs/deploy.md).
            authorization="",
            agent_authorization="",
        )
        for key, attribute, old in PAGE_ASSETS:
            if f'{attribute}="{old}"' not in text:
                raise SiteError(f"{template} no longer loads {old!r}: update PAGE_ASSETS")
            asset = assets[key]
            text = text.replace(
                f'{attribute}="{old}"',
                f'{attribute}="{asset["url"]}" integrity="{asset["integrity"]}"',
            )
        (out / name).write_text(text, encoding="utf-8")
        policy = (
            page_policy(origins["assistant"])
            if origin == "page"
            else assistant_policy(origins["page"], origins["assistant"], agent_url)
        )
        policies["/" + name] = policy
    policies["/"] = policies["/index.html"]
    return policies


def _write_sales(out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "demo.db"
        create_demo_db(db)
        rows = query_sales(db)
    (out / SALES_PATH).parent.mkdir(parents=True, exist_ok=True)
    (out / SALES_PATH).write_text(json.dumps({"rows": rows, "units": SALES_UNITS}))


def manifest(out: Path, urls: dict[str, str]) -> dict[str, dict[str, str]]:
    """Return manifest.json's content: for each of PAGE_ASSETS, the URL the bundle `out`
    serves it at (`urls`, from `_hash_names`) and its integrity. The demo pages load them
    so, and a page of the integrator's own loads the boot script by it, whose name
    changes with its content."""
    entries = {}
    for key, _attribute, old in PAGE_ASSETS:
        new = urls[old]
        entries[key] = {"url": new, "integrity": sri((out / new.lstrip("/")).read_bytes())}
    return entries


def headers_file(policies: dict[str, str], scripts: str) -> str:
    """Return the `_headers` file (the format of Netlify and Cloudflare Pages): each page's
    policy, the scripts' policy (`scripts`), the cache policy of the rest, and
    `X-Content-Type-Options: nosniff` on every file (a rule `/*`; the hosts send the
    headers of every rule a URL matches), as the demo server sends it.

    A page `/x.html` is listed as `/x` too: hosts that serve pages at their pretty URL
    (Cloudflare Pages redirects `/x.html` to `/x`) match a rule by the URL requested.
    Every folder that serves JavaScript (`/web`, `/vendor`) carries the workers' policy
    (on other files a browser ignores it)."""
    pages = dict(policies)
    for path, policy in policies.items():
        if path.endswith(".html") and path != "/index.html":
            pages.setdefault(path.removesuffix(".html"), policy)
    blocks = [("/*", [("X-Content-Type-Options", "nosniff")])]
    blocks += [
        (path, [("Content-Security-Policy", policy), ("Cache-Control", NO_CACHE)])
        for path, policy in sorted(pages.items())
    ]
    blocks.append(("/api/*", [("Cache-Control", NO_CACHE)]))
    # The worker's script is in /web: its response carries the worker's policy.
    for folder in ("/web/*", *IMMUTABLE_FOLDERS):
        headers = [("Cache-Control", IMMUTABLE)]
        if folder in SCRIPT_FOLDERS:
            headers.insert(0, ("Content-Security-Policy", scripts))
        blocks.append((folder, headers))
    lines = []
    for path, headers in blocks:
        lines.append(path)
        lines.extend(f"  {name}: {value}" for name, value in headers)
    return "\n".join(lines) + "\n"


NOT_FOUND_PAGE: Final = (
    '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>Not found</title>'
    "</head><body><p>Not found.</p></body></html>\n"
)


def build_bundle(
    root: Path,
    out: Path,
    wheels_dir: Path,
    *,
    page_origin: str,
    assistant_origin: str,
    agent_url: str | None = None,
    brotli_cache: Path | None = None,
    keep: bool = False,
    progress: Callable[[str], None] | None = None,
) -> Bundle:
    """Write the static bundle for the two origins into `out` and return what was
    written. `agent_url` is the agent the assistant calls (default: ``/agent`` on the
    assistant origin, which a static host does not serve; ``""`` for none: the assistant
    then answers every question `no-agent` and asks nothing). `brotli_cache` keeps the
    brotli variants of the runtime between builds (default: no variants). `keep` keeps
    the versioned files of the bundle `out` held before (`keep_previous`). `progress` is
    told each step as it starts.

    `out` is replaced only once the whole bundle is written (`site.replacing`): a build
    that fails, or is interrupted, leaves it as it was.

    Raises SiteError when an input is missing, `out` must not be replaced, or a file no
    longer names what the build rewrites, and subprocess.CalledProcessError when the
    project wheel cannot be built.
    """
    step = progress if progress is not None else (lambda _step: None)
    problem = agent_url_problem(agent_url) if agent_url else None
    if problem is not None:
        raise SiteError(f"{problem}: {agent_url!r}")
    with replacing(out, root, "bundle") as folder:
        assemble_into(root, folder, wheels_dir, step)
        brotli_variants(folder, brotli_cache, step)
        step("content-hashed names, the pages and their headers")
        urls = _hash_names(root, folder)
        origins = {"page": page_origin, "assistant": assistant_origin}
        assets = manifest(folder, urls)
        agent = agent_url if agent_url is not None else DEFAULT_AGENT_PATH
        policies = _write_pages(root, folder, assets, origins, agent)
        # The two origins serve the same files: their workers' scripts, one policy, which
        # lets either connect where the assistant's does.
        scripts = worker_policy(*assistant_connects(page_origin, assistant_origin, agent))
        _write_sales(folder)
        # A host that finds no 404.html answers a missing file with index.html and 200
        # (Cloudflare Pages takes the folder for a single-page app): a page of an earlier
        # build asking for a file that is gone would get HTML, under a name cached as
        # immutable.
        (folder / "404.html").write_text(NOT_FOUND_PAGE, encoding="utf-8")
        # And the policies an integrator's own page, the assistant's page (which a
        # deployment with signed-in users serves through its app) and the scripts'
        # folders are sent.
        listed = {
            **assets,
            "origins": origins,
            "policies": {
                "page": policies["/index.html"],
                "assistant": policies["/assistant.html"],
                "scripts": scripts,
            },
        }
        (folder / MANIFEST_PATH).write_text(json.dumps(listed, indent=1), encoding="utf-8")
        (folder / "_headers").write_text(headers_file(policies, scripts), encoding="utf-8")
        step("integrity hashes")
        integrity = {
            "/" + path.relative_to(folder).as_posix(): sri(path.read_bytes())
            for path in sorted(folder.rglob("*"))
            if path.is_file()
        }
        (folder / INTEGRITY_PATH).write_text(json.dumps(integrity, indent=1), encoding="utf-8")
        kept = None
        if keep:
            step("the earlier bundle's versioned files, for its pages still open")
            kept = keep_previous(out, folder)
    return Bundle(out, page_origin, assistant_origin, policies, kept)
