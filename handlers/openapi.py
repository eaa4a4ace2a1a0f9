"""GET /v1/openapi.json: the OpenAPI document, without auth, assembled once per application."""

from handlers import jsonio
from handlers.base import APIHandler
from schemas.openapi import build_document


def openapi_document(settings: dict) -> dict:
    """The application's OpenAPI document, built from its schemas on first use."""
    if "openapi" not in settings:
        document = build_document(settings["schemas"])
        settings["openapi"] = (document, jsonio.dumps(document).encode())
    return settings["openapi"][0]


class OpenAPIHandler(APIHandler):
    auth_required = False

    async def get(self) -> None:
        openapi_document(self.settings)
        self.set_header("Content-Type", "application/json; charset=utf-8")
        self.finish(self.settings["openapi"][1])


default_handlers = [(r"/v1/openapi.json", OpenAPIHandler)]
