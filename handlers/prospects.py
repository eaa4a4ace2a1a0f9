"""GET /v1/prospects: the workspace's prospects, paginated (page numbers or cursors) and
filtered."""

from handlers.base import APIHandler
from handlers.pagination import serve_page
from handlers.params import instant, phone, uuid_param
from store.identity import normalize_email

STORE_ARGS = {
    "listId": "list_id",
    "email": "email",
    "phoneNumber": "phone",
    "updatedSince": "updated_since",
}


class ProspectsHandler(APIHandler):
    query_schemas = {"GET": "/schemas/queries/prospects.json"}

    async def get(self) -> None:
        prospects = self.store.prospects
        query = self.query
        filters = {
            "listId": uuid_param(query, "listId"),
            "email": normalize_email(query.get("email")),
            "phoneNumber": phone(query, "phoneNumber", prospects.normalize_phone),
            "updatedSince": instant(query, "updatedSince"),
        }

        async def fetch(window, filters):
            return await prospects.page(
                self.workspace_id,
                window,
                encoded=True,
                **{STORE_ARGS[name]: value for name, value in filters.items()},
            )

        await serve_page(self, "prospects", filters, fetch)


default_handlers = [(r"/v1/prospects", ProspectsHandler)]
