"""GET /v1/calls: the workspace's calls, paginated (page numbers or cursors) and filtered."""

from handlers.base import APIHandler
from handlers.pagination import serve_page
from handlers.params import instant, problem, uuid_param
from store.paging import Page, Window

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


def call_filters(query: dict) -> dict:
    """The filters of GET /calls (and its export) by parameter name, None when absent."""
    return {
        "userId": uuid_param(query, "userId"),
        "prospectId": uuid_param(query, "prospectId"),
        "listId": uuid_param(query, "listId"),
        "direction": query.get("direction"),
        "disposition": query.get("disposition"),
        "createdFrom": instant(query, "createdFrom"),
        "createdTo": instant(query, "createdTo"),
        "updatedSince": instant(query, "updatedSince"),
    }


def store_args(filters: dict) -> dict:
    """The store's arguments for the filters (a cursor's, or the request's); 400 when
    createdTo is before createdFrom."""
    start, end = filters.get("createdFrom"), filters.get("createdTo")
    if start and end and end < start:
        raise problem("createdTo", "must not be before createdFrom")
    return {STORE_ARGS[name]: value for name, value in filters.items()}


class CallsHandler(APIHandler):
    query_schemas = {"GET": "/schemas/queries/calls.json"}

    async def get(self) -> None:
        calls = self.store.calls

        async def fetch(window: Window, filters: dict) -> Page:
            return await calls.page(self.workspace_id, window, encoded=True, **store_args(filters))

        await serve_page(self, "calls", call_filters(self.query), fetch)


default_handlers = [(r"/v1/calls", CallsHandler)]
