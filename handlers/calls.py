"""GET /v1/calls: the workspace's calls, newest first, paginated and filtered."""

from handlers.base import APIHandler
from handlers.pagination import page_args, send_page
from handlers.params import instant, problem, uuid_param


class CallsHandler(APIHandler):
    query_schemas = {"GET": "/schemas/queries/calls.json"}

    async def get(self) -> None:
        query = self.query
        created_from, created_to = instant(query, "createdFrom"), instant(query, "createdTo")
        if created_from and created_to and created_to < created_from:
            raise problem("createdTo", "must not be before createdFrom")
        page, page_size = page_args(query)
        send_page(self, "calls", await self.settings["store"].calls.page(
            self.workspace_id, page, page_size,
            user_id=uuid_param(query, "userId"),
            prospect_id=uuid_param(query, "prospectId"),
            list_id=uuid_param(query, "listId"),
            direction=query.get("direction"),
            disposition=query.get("disposition"),
            created_from=created_from,
            created_to=created_to,
            updated_since=instant(query, "updatedSince"),
        ))


default_handlers = [(r"/v1/calls", CallsHandler)]
