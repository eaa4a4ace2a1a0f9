"""The interactive reference: GET /reference, GET /reference/problems, its static assets, and
GET / (a redirect to /reference). Rendered server-side with Jinja2 from the OpenAPI document,
under a Content-Security-Policy that allows only this origin's scripts, styles and requests."""

from __future__ import annotations

import hashlib
from pathlib import Path

import jinja2
from tornado.web import HTTPError, StaticFileHandler

from console.view import View
from handlers import ranges
from handlers.base import APIHandler
from handlers.openapi import openapi_document

CONSOLE = Path(__file__).resolve().parent.parent / "console"
STATIC = CONSOLE / "static"
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "media-src 'self' blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'self'"
)


class ConsolePages:
    """The Jinja environment and the view of the document, built once per application."""

    def __init__(self, document: dict):
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(CONSOLE / "templates"),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.view = View(document)
        self.env.filters["markdown"] = self.view.markdown
        self.env.globals["static"] = self.static_url
        self.versions = {
            path.name: hashlib.sha256(path.read_bytes()).hexdigest()[:12]
            for path in STATIC.iterdir()
            if path.is_file()
        }

    def static_url(self, name: str) -> str:
        return f"/reference/static/{name}?v={self.versions[name]}"

    def render(self, template: str, **values: object) -> str:
        return self.env.get_template(template).render(view=self.view, **values)


def console_pages(settings: dict) -> ConsolePages:
    if "console_pages" not in settings:
        settings["console_pages"] = ConsolePages(openapi_document(settings))
    return settings["console_pages"]


class PageHandler(APIHandler):
    """An HTML page of the reference: no key needed, strict CSP, never framed."""

    auth_required = False
    in_api_document = False  # the console is not part of the API (schemas/openapi.py)
    template = ""

    def set_default_headers(self) -> None:
        super().set_default_headers()
        self.set_header("Content-Security-Policy", CSP)
        self.set_header("Referrer-Policy", "no-referrer")
        self.set_header("X-Frame-Options", "DENY")

    async def get(self) -> None:
        html = console_pages(self.settings).render(self.template)
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.finish(html)


class ReferenceHandler(PageHandler):
    template = "reference.html"


class ProblemsHandler(PageHandler):
    template = "problems.html"


class RootHandler(APIHandler):
    auth_required = False
    in_api_document = False

    async def get(self) -> None:
        self.redirect("/reference")


class StaticHandler(APIHandler, StaticFileHandler):
    """The console's scripts and styles, with the API's request ids and problem bodies;
    versioned URLs (?v=<hash>) are cached for long."""

    auth_required = False
    in_api_document = False
    compute_etag = StaticFileHandler.compute_etag

    async def prepare(self) -> None:
        if self.request.method not in self.allowed_methods():
            raise HTTPError(405)

    async def get(self, path: str, include_body: bool = True) -> None:
        # Only the folder's own files by their exact names: a NUL byte, an escape or any other
        # odd name never reaches the file system (where it could raise, not just miss).
        if path not in console_pages(self.settings).versions:
            raise HTTPError(404)
        try:
            span = self.wanted_span((STATIC / path).stat().st_size)
            if span is None:
                await super().get(path, include_body)
            else:
                await self.get_span(path, *span, include_body)
        except HTTPError as exc:  # outside the folder, or not a file: simply not found
            raise HTTPError(404 if exc.status_code == 403 else exc.status_code) from exc

    def wanted_span(self, size: int) -> tuple[int, int, int] | None:
        """The first and last byte the Range header asks for, judged as the API judges it
        (handlers/ranges.py: an end past the end is the last byte, whatever its digits), and
        the size; None for the whole file. What cannot be satisfied is a 416 problem."""
        raw = self.request.headers.get("Range")
        if raw is None:
            return None
        try:
            wanted = ranges.parse_range(raw)
        except ranges.InvalidRange:
            raise ranges.unsatisfiable(size, "file") from None
        if wanted is None:  # several ranges: the whole file
            return None
        span = wanted.resolve(size)
        if span is None:
            raise ranges.unsatisfiable(size, "file")
        return (*span, size)

    async def get_span(
        self, path: str, first: int, last: int, size: int, include_body: bool
    ) -> None:
        """Bytes first-last of a file as 206 (Tornado would answer a range that covers the
        whole file with 200), with the headers and validators of the whole file."""
        self.path = self.parse_url_path(path)
        self.absolute_path = self.validate_absolute_path(
            self.root, self.get_absolute_path(self.root, self.path)
        )
        if self.absolute_path is None:
            return
        self.modified = self.get_modified_time()
        self.set_headers()
        if self.should_return_304():
            self.set_status(304)
            return
        self.set_status(206)
        self.set_header("Content-Range", f"bytes {first}-{last}/{size}")
        self.set_header("Content-Length", last - first + 1)
        if include_body:
            for chunk in self.get_content(self.absolute_path, first, last + 1):
                self.write(chunk)


default_handlers = [
    (r"/", RootHandler),
    (r"/reference", ReferenceHandler),
    (r"/reference/problems", ProblemsHandler),
    (r"/reference/static/(.+)", StaticHandler, {"path": str(STATIC)}),
]
