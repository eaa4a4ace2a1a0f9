"""GET /v1/calls: the workspace's calls, paginated (page numbers or cursors) and filtered."""

from handlers.base import APIHandler
from handlers.pagination import serve_page
from handlers.params import instant, problem, uuid_param

STORE_ARGS = {
    "userId": "user_id",
    "prospectId": "prospect_id",
    "listId": "list_id",
    "direction": "direction",
    "disposition": "disposition",
    "createdFrom": "created_from",
    "createdTo": "created_to",
    "updatedSince": "updated_since",
}


class CallsHandler(APIHandler):
    query_schemas = {"GET": "/schemas/queries/calls.json"}

    async def get(self) -> None:
        query = self.query
        filters = {
            "userId": uuid_param(query, "userId"),
            "prospectId": uuid_param(query, "prospectId"),
            "listId": uuid_param(query, "listId"),
            "direction": query.get("direction"),
            "disposition": query.get("disposition"),
            "createdFrom": instant(query, "createdFrom"),
            "createdTo": instant(query, "createdTo"),
            "updatedSince": instant(query, "updatedSince"),
        }
        calls = self.store.calls

        async def fetch(window, filters):
            start, end = filters.get("createdFrom"), filters.get("createdTo")
            if start and end and end < start:
                raise problem("createdTo", "must not be before createdFrom")
            return await calls.page(
                self.workspace_id,
                window,
                encoded=True,
                **{STORE_ARGS[name]: value for name, value in filters.items()},
            )

        await serve_page(self, "calls", filters, fetch)


default_handlers = [(r"/v1/calls", CallsHandler)]
