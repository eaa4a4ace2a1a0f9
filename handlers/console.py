"""The interactive reference: GET /reference, GET /reference/problems, its static assets, and
GET / (a redirect to /reference). Rendered server-side with Jinja2 from the OpenAPI document,
under a Content-Security-Policy that allows only this origin's scripts, styles and requests."""

from __future__ import annotations

import hashlib
from pathlib import Path

import jinja2
from tornado.web import HTTPError, StaticFileHandler

from console.view import View
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
            await super().get(path, include_body)
        except HTTPError as exc:  # outside the folder, or not a file: simply not found
            raise HTTPError(404 if exc.status_code == 403 else exc.status_code) from exc


default_handlers = [
    (r"/", RootHandler),
    (r"/reference", ReferenceHandler),
    (r"/reference/problems", ProblemsHandler),
    (r"/reference/static/(.+)", StaticHandler, {"path": str(STATIC)}),
]
