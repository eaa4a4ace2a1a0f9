"""GET /v1/prospects: the workspace's prospects, paginated (page numbers or cursors) and
filtered."""

from collections.abc import Callable

from handlers.base import APIHandler
from handlers.pagination import serve_page
from handlers.params import instant, phone, uuid_param
from store.identity import normalize_email
from store.paging import Page, Window

STORE_ARGS = {
    "listId": "list_id",
    "email": "email",
    "phoneNumber": "phone",
    "updatedSince": "updated_since",
    "doNotCall": "do_not_call",
}


def prospect_filters(query: dict, normalize_phone: Callable[[str], str | None]) -> dict:
    """The filters of GET /prospects (and its export) by parameter name, None when absent."""
    return {
        "listId": uuid_param(query, "listId"),
        "email": normalize_email(query.get("email")),
        "phoneNumber": phone(query, "phoneNumber", normalize_phone),
        "updatedSince": instant(query, "updatedSince"),
        "doNotCall": None if "doNotCall" not in query else query["doNotCall"] == "true",
    }


def store_args(filters: dict) -> dict:
    return {STORE_ARGS[name]: value for name, value in filters.items()}


class ProspectsHandler(APIHandler):
    query_schemas = {"GET": "/schemas/queries/prospects.json"}

    async def get(self) -> None:
        prospects = self.store.prospects

        async def fetch(window: Window, filters: dict) -> Page:
            return await prospects.page(
                self.workspace_id, window, encoded=True, **store_args(filters)
            )

        filters = prospect_filters(self.query, prospects.normalize_phone)
        await serve_page(self, "prospects", filters, fetch)


default_handlers = [(r"/v1/prospects", ProspectsHandler)]
