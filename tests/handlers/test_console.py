"""The reference pages as HTML: rendered from the OpenAPI document, a strict CSP with no inline
script or style, every error code on the problems page, assets served locally."""

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from handlers.console import CSP
from schemas.openapi import build_document, operations
from schemas.problems import PROBLEMS

STATIC = Path(__file__).resolve().parents[2] / "console" / "static"


class Page(HTMLParser):
    """Collects what the CSP and the offline rule care about."""

    def __init__(self, html: str):
        super().__init__()
        self.ids, self.scripts, self.styles, self.inline = set(), [], [], []
        self.links, self._in_script = [], False
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        for name in attrs:
            if name.startswith("on") or name == "style":
                self.inline.append(f"<{tag} {name}=...>")
        if tag == "style":
            self.inline.append("<style>")
        if tag == "script":
            if "src" in attrs:
                self.scripts.append(attrs["src"])
            else:
                self.inline.append("<script> without src")
        if tag == "link":
            self.styles.append(attrs["href"])
        if tag == "a" and "href" in attrs:
            self.links.append(attrs["href"])
        if tag in ("img", "audio", "iframe", "source") and "src" in attrs:
            self.scripts.append(attrs["src"])


async def test_root_redirects_to_the_reference(anon):
    response = await anon.get("/")
    assert response.code == 302
    assert response.headers["Location"] == "/reference"


async def test_reference_page_documents_every_operation(anon):
    response = await anon.get("/reference")
    assert response.code == 200
    assert response.headers["Content-Type"] == "text/html; charset=utf-8"
    page = Page(response.body.decode())
    document = build_document()
    for path, method, op in operations(document):
        if method == "HEAD":
            continue
        anchor = "op-" + op["operationId"]
        assert anchor in page.ids, (method, path)
    html = response.body.decode()
    for name in document["components"]["schemas"]:  # the public schemas, folded by default
        public = name.startswith(("records.", "requests.", "responses."))
        assert (f'id="schema-{name}"' in html) == public, name
    assert '<details id="schemas" class="schemas">' in html  # closed until opened
    assert "(spec " not in html
    # parameters, descriptions and try-it forms
    assert 'name="pageSize" data-in="query"' in html
    assert 'name="listId" data-in="path"' in html
    assert html.count('class="try"') >= 5
    assert (
        "count against your workspace&#39;s rate limit" in html
        or "count against your workspace's rate limit" in html
    )
    assert 'id="api-key"' in html
    # the provider's callbacks: form bodies, no key, no try-it form
    for operation_id in ("receiveProviderStatusCallback", "receiveProviderRecordingCallback"):
        start = html.index(f'id="op-{operation_id}"')
        article = html[start : html.index("</article>", start)]
        assert 'data-auth="none"' in html[start - 200 : start + 400]
        assert '<span class="media">application/x-www-form-urlencoded</span>' in article
        assert "X-Twilio-Signature" in article and 'class="try"' not in article
    assert 'id="op-listPendingCalls"' in html and 'id="op-resolvePendingCall"' in html
    # text from the schemas is escaped, never markup
    assert "Bearer &lt;API key&gt;" in html and "<API key>" not in html


async def test_pages_carry_a_strict_csp_and_nothing_inline(anon):
    for path in ("/reference", "/reference/problems"):
        response = await anon.get(path)
        assert response.headers["Content-Security-Policy"] == CSP
        assert "unsafe-inline" not in CSP and "script-src 'self';" in CSP
        assert response.headers["X-Frame-Options"] == "DENY"
        page = Page(response.body.decode())
        assert page.inline == [], path
        for url in page.scripts + page.styles:
            assert url.startswith("/reference/static/"), url  # offline: nothing from a CDN
            asset = await anon.get(url, check=False)
            assert asset.code == 200, url
            assert asset.headers["Cache-Control"].startswith("max-age="), url


async def test_static_assets_are_local_and_never_store_the_key_elsewhere(anon):
    scripts = {path.name: path.read_text() for path in STATIC.glob("*.js")}
    assert {"console.js", "chart.js"} <= set(scripts)
    for name, text in scripts.items():
        assert "localStorage" not in text and "document.cookie" not in text, name
        assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", text), name
        assert "innerHTML" not in text and "eval(" not in text, name
    assert "sessionStorage" in scripts["console.js"]
    css = (STATIC / "console.css").read_text()
    assert "@import" not in css and "url(" not in css
    response = await anon.get("/reference/static/chart.js", check=False)
    assert response.code == 200 and "javascript" in response.headers["Content-Type"]
    assert response.headers["X-Content-Type-Options"] == "nosniff"


@pytest.mark.parametrize("method", ["GET", "HEAD"])
@pytest.mark.parametrize(
    "last", ["9223372036854775807", "18446744073709551615", "9" * 40, "1" + "0" * 5000]
)
async def test_static_ranges_past_the_end_are_clamped_to_the_last_byte(anon, method, last):
    whole = (STATIC / "console.css").read_bytes()
    size = len(whole)
    for first in (0, 5):
        response = await anon.fetch(
            "/reference/static/console.css",
            method,
            headers={"Range": f"bytes={first}-{last}"},
            check=False,  # the client's checks know the API's content types, not CSS
        )
        assert response.code == 206, response
        assert response.headers["X-Request-Id"]
        assert response.headers["Content-Range"] == f"bytes {first}-{size - 1}/{size}"
        assert int(response.headers["Content-Length"]) == size - first
        assert response.headers["Content-Type"].startswith("text/css")
        if method == "GET":
            assert response.body == whole[first:]
    middle = await anon.get(
        "/reference/static/console.css", headers={"Range": "bytes=5-9"}, check=False
    )
    assert middle.code == 206 and middle.body == whole[5:10]


@pytest.mark.parametrize("header", ["bytes=999999-", "bytes=-0", "bytes=5-1", "items=0-1"])
async def test_static_ranges_that_cannot_be_satisfied_are_416_problems(anon, header):
    size = (STATIC / "console.css").stat().st_size
    response = await anon.get("/reference/static/console.css", headers={"Range": header})
    assert response.code == 416  # problem+json with X-Request-Id: checked by the client
    assert response.json()["code"] == "range_not_satisfiable"
    assert response.headers["Content-Range"] == f"bytes */{size}"


ODD_ASSETS = [
    "nope.js",
    "..%2Fviews.py",
    "../templates/base.html",
    "console.js%00.css",
    "console.js%00",
    "%00",
    "..%00/console.js",
    "..%00/..%00/etc/passwd",
    "console.js%2F",
    "./console.js",
    "CONSOLE.JS",
    "console.js%20",
    "%2E%2E%2Fview.py",
    "%C0%AE%C0%AE/view.py",
    "%FF",
    "a" * 300,
    "console.js/",
    "%5C..%5Cview.py",
]


@pytest.mark.parametrize("method", ["GET", "HEAD"])
@pytest.mark.parametrize("name", ODD_ASSETS, ids=[n[:30] for n in ODD_ASSETS])
async def test_missing_escaping_or_odd_asset_is_a_404_problem(anon, method, name):
    path = "/reference/static/" + name
    response = await anon.fetch(path, method)  # problem+json with X-Request-Id: checked there
    not_utf8 = name.startswith(("%FF", "%C0"))  # Tornado refuses to decode it: a 400 problem
    assert response.code == (400 if not_utf8 else 404), path


async def test_problems_page_has_an_entry_for_every_code(anon):
    response = await anon.get("/reference/problems")
    assert response.code == 200
    page = Page(response.body.decode())
    html = response.body.decode()
    for code, (_, title, _) in PROBLEMS.items():
        assert code in page.ids
        assert f">{title}<" in html
    assert "/reference#op-createList" in html  # 'returned by' links back to the operations


async def test_error_type_uris_point_at_the_problems_page(anon):
    problem = (await anon.get("/v1/users")).json()
    path, _, fragment = problem["type"].partition("#")
    assert path == "/reference/problems"
    page = Page((await anon.get(path)).body.decode())
    assert fragment in page.ids


async def test_unknown_query_parameter_on_a_page_is_400(anon):
    assert (await anon.get("/reference?x=1")).code == 400


def test_descriptions_render_a_safe_markdown_subset():
    from console.view import View

    view = View(build_document())
    html = str(view.markdown("Use `<b>` and **this**:\n- see GET /users\n- <script>x</script>"))
    assert html == (
        "<p>Use <code>&lt;b&gt;</code> and <strong>this</strong>:</p>"
        '<ul><li>see <a href="/reference#op-listUsers">GET /users</a></li>'
        "<li>&lt;script&gt;x&lt;/script&gt;</li></ul>"
    )
