"""GET /v1/prospects: the workspace's prospects, newest first, paginated and filtered."""

from handlers.base import APIHandler
from handlers.pagination import page_args, send_page
from handlers.params import instant, phone, uuid_param


class ProspectsHandler(APIHandler):
    query_schemas = {"GET": "/schemas/queries/prospects.json"}

    async def get(self) -> None:
        prospects = self.settings["store"].prospects
        query = self.query
        page, page_size = page_args(query)
        send_page(self, "prospects", await prospects.page(
            self.workspace_id, page, page_size,
            list_id=uuid_param(query, "listId"),
            email=query.get("email"),
            phone=phone(query, "phoneNumber", prospects.normalize_phone),
            updated_since=instant(query, "updatedSince"),
        ))


default_handlers = [(r"/v1/prospects", ProspectsHandler)]
