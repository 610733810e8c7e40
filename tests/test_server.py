"""The demo server's apps and data: /api/sales, templates, static files, HTTP policy."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from clients import assistant_client, page_client
from pagecontext.server import site
from pagecontext.server.app import ServerConfig
from pagecontext.server.data import (
    MONTHS,
    OUTLIER_REFS,
    REGIONS,
    create_demo_db,
    query_sales,
)

IMMUTABLE = "public, max-age=31536000, immutable"

INDEX_HTML = (
    '<!doctype html><meta name="origins" content="{{PAGE_ORIGIN}} {{ASSISTANT_ORIGIN}}">'
    '<iframe src="{{ASSISTANT_ORIGIN}}/assistant.html"></iframe>'
)
ASSISTANT_HTML = (
    '<!doctype html><meta name="page" content="{{PAGE_ORIGIN}}">'
    '<script type="application/json">{"authorization": "{{AUTHORIZATION}}"}</script>'
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A small repository: the two HTML templates, a web file and a built site."""
    (tmp_path / "index.html").write_text(INDEX_HTML)
    web = tmp_path / "web"
    web.mkdir()
    (web / "assistant.html").write_text(ASSISTANT_HTML)
    (web / "boot.mjs").write_text("export const x = 1;\n")
    (web / "style.css").write_text("body { margin: 0 }\n" * 200)
    site = tmp_path / "build" / "site"
    files = {
        site / "vendor" / "pyodide-0.0.0" / "pyodide.asm.wasm": b"\0asm" + bytes(16),
        site / "vendor" / "pyodide-0.0.0" / "pyodide.mjs": b"export default 1;\n",
        site / "vendor" / "pyodide-0.0.0" / "pyodide.js": b"var x = 1;\n",
        site / "vendor" / "pyodide-0.0.0" / "python_stdlib.zip": b"PK\x05\x06" + bytes(18),
        site / "wheels" / "pkg-1.0-py3-none-any.whl": b"PK\x05\x06" + bytes(18),
        site / "py" / "edge" / "pagecontext" / "windowrules.py": b"X = 1\n",
        site / "py" / "runtime.json": b'{"packages": []}',
    }
    for path, content in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    return tmp_path


@pytest.fixture
def config(root: Path) -> ServerConfig:
    """The default configuration over the fixture repository."""
    return ServerConfig(root=root)


@pytest.fixture
def page(config: ServerConfig) -> Iterator[TestClient]:
    """A client of the page origin, started (so the demo database exists)."""
    with page_client(config) as client:
        yield client


@pytest.fixture
def assistant(config: ServerConfig) -> Iterator[TestClient]:
    """A client of the assistant origin, not following redirects."""
    with assistant_client(config, follow_redirects=False) as client:
        yield client


# --- data -------------------------------------------------------------------


def test_demo_db_has_every_region_and_month_with_units(tmp_path: Path) -> None:
    """A fresh database holds 60 rows, one per region and month, with positive numbers."""
    db = tmp_path / "nested" / "demo.db"
    create_demo_db(db)
    rows = query_sales(db)
    assert len(rows) == 60
    assert {(row["region"], row["month"]) for row in rows} == {
        (region, month) for region in REGIONS for month in MONTHS
    }
    assert all(row["unitsSold"] > 0 and row["revenueEur"] > 0 for row in rows)
    assert all(row["ref"] == f"sales-{row['month']}-{row['region'].lower()}" for row in rows)


def test_demo_db_is_deterministic(tmp_path: Path) -> None:
    """Two fresh databases hold identical rows, so tests and the agent can rely on them;
    an empty SQLite file is filled as a new one is (it holds no other application's
    tables)."""
    sqlite3.connect(tmp_path / "b.db").close()
    create_demo_db(tmp_path / "a.db")
    create_demo_db(tmp_path / "b.db")
    assert query_sales(tmp_path / "a.db") == query_sales(tmp_path / "b.db")


def test_demo_db_high_outlier_stands_out(tmp_path: Path) -> None:
    """The high outlier sells over twice as much as any other row of its region."""
    db = tmp_path / "demo.db"
    create_demo_db(db)
    by_ref = {row["ref"]: row for row in query_sales(db)}
    high = by_ref[OUTLIER_REFS[0]]
    others = [r for r in query_sales(db, region=high["region"]) if r["ref"] != high["ref"]]
    assert high["unitsSold"] > 2 * max(r["unitsSold"] for r in others)


def test_create_demo_db_is_idempotent_and_keeps_edits(tmp_path: Path) -> None:
    """Creating the database again changes nothing, even rows edited since."""
    db = tmp_path / "demo.db"
    create_demo_db(db)
    with sqlite3.connect(db) as connection:
        connection.execute("UPDATE sales SET units_sold = 7 WHERE ref = 'sales-2026-01-west'")
    connection.close()
    create_demo_db(db)
    rows = query_sales(db)
    assert len(rows) == 60
    assert [r["unitsSold"] for r in rows if r["ref"] == "sales-2026-01-west"] == [7]


def test_query_sales_orders_by_month_then_region(tmp_path: Path) -> None:
    """Rows come back ordered by month, then by region name."""
    db = tmp_path / "demo.db"
    create_demo_db(db)
    keys = [(row["month"], row["region"]) for row in query_sales(db)]
    assert keys == sorted(keys)


def test_query_sales_without_database_raises(tmp_path: Path) -> None:
    """Querying a database that was never created is an error, not an empty answer."""
    with pytest.raises(FileNotFoundError):
        query_sales(tmp_path / "missing.db")
    assert not (tmp_path / "missing.db").exists()


# --- /api/sales ---------------------------------------------------------------


def test_api_sales_returns_all_rows_with_units(page: TestClient) -> None:
    """Without filters the API returns every row and names the units of each column."""
    response = page.get("/api/sales")
    assert response.status_code == 200
    body = response.json()
    assert len(body["rows"]) == 60
    assert body["units"] == {"unitsSold": "units", "revenueEur": "EUR"}
    assert set(body["rows"][0]) == {"ref", "region", "month", "unitsSold", "revenueEur"}
    assert response.headers["cache-control"] == "no-store"


def test_api_sales_filters_by_region(page: TestClient) -> None:
    """A region filter returns exactly that region's twelve months."""
    rows = page.get("/api/sales", params={"region": "North"}).json()["rows"]
    assert [row["month"] for row in rows] == list(MONTHS)
    assert {row["region"] for row in rows} == {"North"}


def test_api_sales_filters_by_inclusive_month_range(page: TestClient) -> None:
    """A month range includes both ends and every region in between."""
    rows = page.get("/api/sales", params={"from": "2026-03", "to": "2026-05"}).json()["rows"]
    assert {(row["month"], row["region"]) for row in rows} == {
        (month, region) for month in ("2026-03", "2026-04", "2026-05") for region in REGIONS
    }


def test_api_sales_combines_region_and_months(page: TestClient) -> None:
    """Region and month filters combine; empty parameters mean no filter."""
    params = {"region": "West", "from": "2026-11", "to": ""}
    rows = page.get("/api/sales", params=params).json()["rows"]
    assert [row["ref"] for row in rows] == ["sales-2026-11-west", "sales-2026-12-west"]


@pytest.mark.parametrize(
    ("params", "mentions"),
    [
        ({"region": "Atlantis"}, "region"),
        ({"region": "north"}, "region"),
        ({"region": "North' OR '1'='1"}, "region"),
        ({"from": "2026-13"}, "from"),
        ({"to": "March"}, "to"),
        ({"from": "2026-06", "to": "2026-02"}, "after"),
    ],
)
def test_api_sales_rejects_bad_input_with_400(
    page: TestClient, params: dict[str, str], mentions: str
) -> None:
    """Invalid filters answer 400 `bad-filter`, in the APIs' error shape, with a detail
    that names the problem."""
    response = page.get("/api/sales", params=params)
    assert response.status_code == 400
    body = response.json()
    assert (body["error"], body["reason"]) == ("bad-request", "bad-filter")
    assert mentions in body["detail"]
    assert response.headers["cache-control"] == "no-store"


@pytest.mark.parametrize(
    ("query", "reason", "mentions"),
    [
        ("region=North&region=South", "repeated-parameter", "region is given twice"),
        ("to=2026-02&from=2026-01&to=2026-12", "repeated-parameter", "to is given twice"),
        ("regoin=North", "unknown-parameter", "'regoin' is not a filter"),
        ("region=North&limit=5", "unknown-parameter", "'limit' is not a filter"),
    ],
)
def test_api_sales_refuses_a_parameter_it_does_not_take_or_given_twice(
    page: TestClient, query: str, reason: str, mentions: str
) -> None:
    """A filter given twice, or a parameter that is no filter, is refused, rather than
    one of the values (or the misspelt filter) being dropped without a word."""
    response = page.get("/api/sales?" + query)
    assert response.status_code == 400
    body = response.json()
    assert (body["error"], body["reason"]) == ("bad-request", reason)
    assert mentions in body["detail"]


def test_api_sales_echoes_no_more_than_the_start_of_a_refused_value(page: TestClient) -> None:
    """A refused value is named by its first 40 characters, not sent back whole."""
    response = page.get("/api/sales", params={"region": "N" * 5000})
    assert response.status_code == 400
    assert "'NNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNN'..." in response.json()["detail"]
    assert len(response.text) < 300
    response = page.get("/api/sales", params={"from": "2" * 5000})
    assert response.json()["detail"] == (
        "from must be a month written YYYY-MM, got '" + "2" * 40 + "'..."
    )


def test_page_app_creates_demo_db_at_startup(config: ServerConfig) -> None:
    """Starting the page app creates the demo database if it is missing."""
    assert not config.db_path.exists()
    with page_client(config):
        pass
    assert config.db_path.is_file()


# --- templates ------------------------------------------------------------------


def test_index_html_has_origin_tokens_replaced(page: TestClient) -> None:
    """GET / serves index.html with both origin tokens replaced by the configured origins."""
    response = page.get("/")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert "{{" not in response.text
    assert 'content="http://127.0.0.1:8000 http://localhost:8001"' in response.text
    assert 'src="http://localhost:8001/assistant.html"' in response.text


def test_template_origins_are_html_escaped(root: Path) -> None:
    """An origin is HTML-escaped before it enters the page, so it cannot break out."""
    config = ServerConfig(root=root, assistant_host='evil"><script>')
    with page_client(config) as client:
        text = client.get("/").text
    assert "<script>" not in text
    assert "evil&quot;&gt;&lt;script&gt;" in text


def test_assistant_html_has_origin_tokens_replaced(assistant: TestClient) -> None:
    """GET /assistant.html serves web/assistant.html with the page origin filled in."""
    response = assistant.get("/assistant.html")
    assert response.status_code == 200
    assert 'content="http://127.0.0.1:8000"' in response.text


def test_assistant_root_redirects_to_assistant_html(assistant: TestClient) -> None:
    """GET / on the assistant origin redirects to /assistant.html."""
    response = assistant.get("/")
    assert response.is_redirect
    assert response.headers["location"] == "/assistant.html"


def test_an_example_page_is_served_with_its_tokens_replaced(root: Path) -> None:
    """GET /examples/NAME serves web/examples/NAME as a template; any other name is 404,
    whatever it looks like."""
    examples = root / "web" / "examples"
    examples.mkdir()
    (examples / "orders.html").write_text(INDEX_HTML)
    (examples / "orders.mjs").write_text("export {};\n")
    with page_client(ServerConfig(root=root)) as client:
        response = client.get("/examples/orders.html")
        assert response.status_code == 200
        assert 'src="http://localhost:8001/assistant.html"' in response.text
        for name in ("missing.html", "orders.mjs", "..%2Findex.html", "%2E%2E"):
            assert client.get("/examples/" + name).status_code == 404, name


def test_missing_template_is_404(tmp_path: Path) -> None:
    """Without index.html the page origin answers 404, not a server error."""
    with page_client(ServerConfig(root=tmp_path)) as client:
        assert client.get("/").status_code == 404


# --- static files and HTTP policy -------------------------------------------------


@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        ("/vendor/pyodide-0.0.0/pyodide.asm.wasm", "application/wasm"),
        ("/vendor/pyodide-0.0.0/pyodide.mjs", "text/javascript"),
        ("/vendor/pyodide-0.0.0/pyodide.js", "text/javascript"),
        ("/vendor/pyodide-0.0.0/python_stdlib.zip", "application/zip"),
        ("/web/boot.mjs", "text/javascript"),
        ("/py/edge/pagecontext/windowrules.py", "text/plain; charset=utf-8"),
        ("/py/runtime.json", "application/json"),
        ("/wheels/pkg-1.0-py3-none-any.whl", "application/zip"),
    ],
)
def test_static_files_have_browser_mime_types(
    page: TestClient, assistant: TestClient, path: str, content_type: str
) -> None:
    """Both origins serve each static file with the MIME type the browser requires."""
    for client in (page, assistant):
        response = client.get(path)
        assert response.status_code == 200
        assert response.headers["content-type"].split(";")[0] == content_type.split(";")[0]
        if ";" in content_type:
            assert response.headers["content-type"] == content_type


def test_a_link_out_of_the_site_is_not_followed(
    root: Path, page: TestClient, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A symbolic link in the site that leads out of its folder is not served: 404, not
    the file it names. A folder linked from inside the site's own folder is."""
    outside = tmp_path_factory.mktemp("outside") / "secret.txt"
    outside.write_text("not the site's")
    vendor = root / "build" / "site" / "vendor"
    (vendor / "secret.txt").symlink_to(outside)
    (vendor / "same").symlink_to(vendor / "pyodide-0.0.0")
    assert page.get("/vendor/secret.txt").status_code == 404
    assert page.get("/vendor/same/pyodide.mjs").status_code == 200


@pytest.mark.parametrize(
    ("path", "cache_control"),
    [
        ("/", "private, no-cache"),
        ("/web/boot.mjs", "no-cache"),
        ("/py/runtime.json", "no-cache"),
        ("/vendor/pyodide-0.0.0/pyodide.asm.wasm", IMMUTABLE),
        ("/wheels/pkg-1.0-py3-none-any.whl", IMMUTABLE),
    ],
)
def test_cache_headers_follow_what_is_versioned(
    page: TestClient, path: str, cache_control: str
) -> None:
    """Pinned artifacts are cached for a year; HTML, web/ and py/ are revalidated."""
    assert page.get(path).headers["cache-control"] == cache_control


def test_assistant_html_is_kept_in_no_cache(assistant: TestClient) -> None:
    """The assistant's HTML, which carries the user's credentials, is stored nowhere,
    not even in the browser's own cache; the page's, which carries none, is revalidated
    on every visit and private."""
    response = assistant.get("/assistant.html")
    assert "pc-demo-token-ana" in response.text
    assert response.headers["cache-control"] == "no-store"


def test_not_modified_keeps_the_cache_policy(page: TestClient) -> None:
    """A 304 revalidation of a pinned file still carries its immutable policy."""
    first = page.get("/wheels/pkg-1.0-py3-none-any.whl")
    again = page.get(
        "/wheels/pkg-1.0-py3-none-any.whl", headers={"If-None-Match": first.headers["etag"]}
    )
    assert again.status_code == 304
    assert again.headers["cache-control"] == IMMUTABLE


@pytest.mark.parametrize(
    "path",
    ["/", "/api/sales", "/api/sales?region=x", "/web/boot.mjs", "/vendor/none.wasm", "/nowhere"],
)
def test_every_response_has_nosniff(page: TestClient, path: str) -> None:
    """Every response, errors included, forbids MIME sniffing."""
    assert page.get(path).headers["x-content-type-options"] == "nosniff"


def test_no_cors_headers_are_sent(page: TestClient) -> None:
    """A cross-origin request gets no Access-Control-* header: the origins never share."""
    response = page.get("/api/sales", headers={"Origin": "http://localhost:8001"})
    assert not [name for name in response.headers if name.startswith("access-control-")]


@pytest.mark.parametrize(
    "path",
    [
        "/web/missing.js",
        "/vendor/pyodide-0.0.0/missing.wasm",
        "/wheels/missing.whl",
        "/py/missing.py",
        "/web/%2e%2e/index.html",
    ],
)
def test_missing_static_file_is_404(page: TestClient, path: str) -> None:
    """A file that is not there is a 404, and the 404 is never cached as immutable."""
    response = page.get(path)
    assert response.status_code == 404
    assert response.headers.get("cache-control") != IMMUTABLE


@pytest.mark.parametrize("path", ["/web/%00", "/web/" + "a" * 300, "/vendor/x%00.wasm"])
@pytest.mark.parametrize("encoding", ["gzip", "br"])
def test_a_path_no_file_can_have_is_404_whatever_the_encoding(
    config: ServerConfig, path: str, encoding: str
) -> None:
    """A NUL or a name too long for the file system is a 404 (with nosniff), also when
    the browser takes brotli and the server looks for the `.br` variant first."""
    with page_client(config, raise_server_exceptions=False) as client:
        response = client.get(path, headers={"Accept-Encoding": encoding})
    assert response.status_code == 404
    assert response.headers["x-content-type-options"] == "nosniff"


def test_missing_build_folder_is_404_not_500(tmp_path: Path) -> None:
    """Before the site is built the app still starts and static requests are 404s."""
    (tmp_path / "index.html").write_text(INDEX_HTML)
    with page_client(ServerConfig(root=tmp_path)) as client:
        assert client.get("/").status_code == 200
        assert client.get("/vendor/pyodide-0.0.0/pyodide.mjs").status_code == 404
        assert client.get("/web/boot.mjs").status_code == 404


def test_large_text_is_gzipped(page: TestClient) -> None:
    """Text over the minimum size is compressed when the browser accepts gzip."""
    response = page.get("/web/style.css", headers={"Accept-Encoding": "gzip"})
    assert response.headers["content-encoding"] == "gzip"
    assert response.text.startswith("body { margin: 0 }")


def test_server_config_derives_paths_and_origins(tmp_path: Path) -> None:
    """The build folder, database and origins derive from the root and the hosts."""
    config = ServerConfig(root=tmp_path, page_port=9000, assistant_host="assistant.test")
    assert config.build_dir == tmp_path / "build"
    assert config.db_path == tmp_path / "build" / "demo.db"
    assert config.page_origin == "http://127.0.0.1:9000"
    assert config.assistant_origin == "http://assistant.test:8001"
    # On http's default port, the origin as a browser writes it: no port.
    on_80 = ServerConfig(root=tmp_path, page_port=80, assistant_port=80, assistant_host="localhost")
    assert (on_80.page_origin, on_80.assistant_origin) == ("http://127.0.0.1", "http://localhost")


def test_a_brotli_variant_is_served_to_browsers_that_take_br(
    config: ServerConfig, page: TestClient
) -> None:
    """With `<file>.br` beside a file, a br-accepting request gets it, encoded as br, with
    the original content type; any other request gets the file itself."""
    import brotli

    wasm = config.site_dir / "vendor" / "pyodide-0.0.0" / "pyodide.asm.wasm"
    (wasm.parent / (wasm.name + ".br")).write_bytes(brotli.compress(wasm.read_bytes()))
    url = "/vendor/pyodide-0.0.0/pyodide.asm.wasm"
    taken = page.get(url, headers={"Accept-Encoding": "gzip, br"})
    assert taken.status_code == 200
    assert taken.headers["content-encoding"] == "br"
    assert taken.headers["content-type"] == "application/wasm"
    assert taken.headers["vary"] == "Accept-Encoding"
    assert taken.headers["cache-control"] == IMMUTABLE
    assert taken.content == wasm.read_bytes()  # the client decoded the br body
    plain = page.get(url, headers={"Accept-Encoding": "identity"})
    assert "content-encoding" not in plain.headers
    assert plain.content == wasm.read_bytes()


def test_precompress_writes_brotli_variants_and_stores_the_stdlib_zip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """precompress writes `.br` files that decode to the originals, rewrites the standard
    library zip with stored members (same files), and reuses its cache."""
    import zipfile

    import brotli

    from pagecontext.server.compress import precompress

    vendor = tmp_path / "site" / "vendor" / "pyodide-1"
    vendor.mkdir(parents=True)
    wasm = vendor / "pyodide.asm.wasm"
    wasm.write_bytes(b"\0asm" + bytes(range(256)) * 400)
    stdlib = vendor / "python_stdlib.zip"
    with zipfile.ZipFile(stdlib, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("json/__init__.py", "x = 1\n" * 20_000)
    (vendor / "small.mjs").write_text("export {};\n")
    done = precompress(tmp_path / "site", tmp_path / "cache")
    assert sorted(path.name for path, _, _ in done) == ["pyodide.asm.wasm", "python_stdlib.zip"]
    for path in (wasm, stdlib):
        packed = path.with_name(path.name + ".br").read_bytes()
        assert brotli.decompress(packed) == path.read_bytes()
    with zipfile.ZipFile(stdlib) as zf:
        assert [info.compress_type for info in zf.infolist()] == [zipfile.ZIP_STORED]
        assert zf.read("json/__init__.py") == b"x = 1\n" * 20_000
    assert not (vendor / "small.mjs.br").exists()
    assert len(list((tmp_path / "cache").iterdir())) == 2
    # The same files in another site: their variants come from the cache.
    from pagecontext.server import compress

    def refuse(*_args: object, **_kwargs: object) -> bytes:
        raise AssertionError("compressed again")

    monkeypatch.setattr(compress.brotli, "compress", refuse)
    again = tmp_path / "again" / "vendor" / "pyodide-1"
    again.mkdir(parents=True)
    for path in (wasm, stdlib):
        (again / path.name).write_bytes(path.read_bytes())
    redone = precompress(tmp_path / "again", tmp_path / "cache")
    assert [(path.name, size, packed) for path, size, packed in redone] == [
        (path.name, size, packed) for path, size, packed in done
    ]
    for path in (wasm, stdlib):
        assert (again / (path.name + ".br")).read_bytes() == path.with_name(
            path.name + ".br"
        ).read_bytes()


def test_assemble_writes_the_brotli_variants_before_the_site_is_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server reading the site while it is assembled sees the old site whole: the new
    one takes its place with its brotli variants written, never before them."""
    from pagecontext.server import site

    out = tmp_path / "site"
    (out / "py").mkdir(parents=True)
    (out / site.OUTPUT_MARK).write_text("")
    (out / "py" / "runtime.json").write_text("old")

    def assembled(_root: Path, folder: Path, *_args: object) -> dict[str, object]:
        vendor = folder / "vendor" / "pyodide-1"
        vendor.mkdir(parents=True)
        (vendor / "pyodide.asm.wasm").write_bytes(b"\0asm" + bytes(range(256)) * 400)
        (folder / "py").mkdir()
        (folder / "py" / "runtime.json").write_text("new")
        return {"runtime": "new"}

    seen_while_compressing = []
    compress = site.precompress

    def precompress(folder: Path, cache: Path) -> list[tuple[Path, int, int]]:
        seen_while_compressing.append((out / "py" / "runtime.json").read_text())
        return compress(folder, cache)

    monkeypatch.setattr(site, "assemble_into", assembled)
    monkeypatch.setattr(site, "precompress", precompress)
    runtime, compressed = site.assemble(
        tmp_path, out, tmp_path / "wheels", brotli_cache=tmp_path / "cache"
    )
    assert seen_while_compressing == ["old"]
    assert runtime == {"runtime": "new"}
    assert (out / "py" / "runtime.json").read_text() == "new"
    wasm = out / "vendor" / "pyodide-1" / "pyodide.asm.wasm"
    assert [path for path, _, _ in compressed] == [wasm]
    assert wasm.with_name("pyodide.asm.wasm.br").is_file()


def test_assistant_page_gets_the_agent_url_as_json_string_text(root: Path) -> None:
    """{{AGENT_URL}} becomes /agent by default, or the external URL escaped for a script."""
    (root / "web" / "assistant.html").write_text('<script>{"agentUrl": "{{AGENT_URL}}"}</script>')
    default = assistant_client(ServerConfig(root=root))
    assert default.get("/assistant.html").text == '<script>{"agentUrl": "/agent"}</script>'
    hostile = ServerConfig(root=root, agent_url='http://a.test/x?a=1&b="</script>')
    text = assistant_client(hostile).get("/assistant.html").text
    assert text == (
        '<script>{"agentUrl": "http://a.test/x?a=1\\u0026b=\\"\\u003c/script\\u003e"}</script>'
    )


def test_both_assistant_pages_get_the_one_panel_file(root: Path) -> None:
    """assistant.html and workbench.html show web/panel.html where they name {{PANEL}},
    with its own tokens replaced too."""
    (root / "web" / "panel.html").write_text('<form data-pc-composer data-p="{{PAGE_ORIGIN}}">')
    (root / "web" / "assistant.html").write_text("<body>{{PANEL}}</body>")
    (root / "web" / "workbench.html").write_text("<aside>{{PANEL}}</aside>")
    client = assistant_client(ServerConfig(root=root))
    panel = '<form data-pc-composer data-p="http://127.0.0.1:8000">'
    assert client.get("/assistant.html").text == f"<body>{panel}</body>"
    assert client.get("/workbench.html").text == f"<aside>{panel}</aside>"


def test_the_site_takes_only_the_pinned_wheels_by_their_hash(tmp_path: Path) -> None:
    """A wheels folder that still holds an older download of a package: only the wheel
    whose SHA-256 a pin names is taken; a pin with no such wheel is an error."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    new, old = (
        wheels / "typing_extensions-4.16.0-py3-none-any.whl",
        wheels / "typing_extensions-4.9.0-py3-none-any.whl",
    )
    new.write_bytes(b"new")
    old.write_bytes(b"old")
    pins = tmp_path / "browser-wheels.txt"
    digest = hashlib.sha256(b"new").hexdigest()
    pins.write_text(f"# the browser's wheels\ntyping-extensions==4.16.0 --hash=sha256:{digest}\n")
    assert site.pinned_wheels(pins, wheels) == [new]
    new.unlink()
    with pytest.raises(site.SiteError, match=r"typing-extensions==4\.16\.0"):
        site.pinned_wheels(pins, wheels)


def test_a_runtime_folder_is_named_by_its_content(tmp_path: Path) -> None:
    """The runtimes are served immutable for a year: their folder's name changes with
    any byte of its files, and stays with the same bytes."""
    names = []
    for text in (b"as the package has it", b"as the build changed it", b"as the package has it"):
        out = tmp_path / str(len(names))
        (out / "vendor" / "rt-1.0").mkdir(parents=True)
        (out / "vendor" / "rt-1.0" / "rt.mjs").write_bytes(text)
        names.append(site._content_named(out, "vendor/rt-1.0"))
        assert (out / names[-1] / "rt.mjs").read_bytes() == text
    assert names[0] == names[2] != names[1]
    assert names[0].startswith("vendor/rt-1.0-")
