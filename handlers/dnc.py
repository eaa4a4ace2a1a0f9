"""The do-not-call suppression list: GET/POST /v1/do-not-call, DELETE /v1/do-not-call/{id}.
Reading needs `read`; adding and removing entries need `write`."""

from urllib.parse import urlencode

from handlers.base import APIHandler, invalid, not_found, path_uuid
from handlers.pagination import decode_cursor
from store.dnc import UnreadablePhone
from store.paging import DEFAULT_SORT, Window

RESOURCE = "do-not-call"  # the cursors' resource name


class DoNotCallHandler(APIHandler):
    scopes = {"GET": "read", "HEAD": "read", "POST": "write"}
    query_schemas = {"GET": "/schemas/queries/do-not-call.json"}
    body_schemas = {"POST": "/schemas/requests/do-not-call-add.json"}

    async def get(self) -> None:
        query = self.query
        filters = {"phoneNumber": query.get("phoneNumber"), "email": query.get("email")}
        position = None
        if (token := query.get("cursor")) is not None:
            _, filters, position = decode_cursor(self, RESOURCE, token, None, filters)
        window = Window(query.get("pageSize", 50), None, DEFAULT_SORT, position)
        page = await self.store.do_not_call.page(
            self.workspace_id,
            window,
            phone=filters.get("phoneNumber"),
            email=filters.get("email"),
        )
        next_cursor = None
        if page.has_more:
            next_cursor = self.settings["cursors"].encode(
                self.workspace_id, RESOURCE, DEFAULT_SORT, filters, page.last
            )
            params = urlencode({"cursor": next_cursor, "pageSize": window.page_size})
            self.set_header("Link", f'<{self.request.path}?{params}>; rel="next"')
        self.send_json(
            {
                "entries": page.items,
                "pageSize": page.page_size,
                "hasMore": page.has_more,
                "nextCursor": next_cursor,
            }
        )

    async def post(self) -> None:
        try:
            results = await self.store.do_not_call.add(
                self.workspace_id, self.body["entries"], self.body.get("reason")
            )
        except UnreadablePhone as exc:
            raise invalid(
                [
                    {
                        "pointer": f"#/entries/{exc.index}/phoneNumber",
                        "detail": "is not a phone number that can be read; send it in E.164, "
                        "such as +14155550101",
                    }
                ]
            ) from None
        self.send_json({"results": results})


class DoNotCallEntryHandler(APIHandler):
    scopes = {"DELETE": "write"}

    async def delete(self, entry_id: str) -> None:
        entry_id = path_uuid(entry_id, "do-not-call entry")
        if not await self.store.do_not_call.remove(self.workspace_id, entry_id):
            raise not_found("do-not-call entry")
        self.set_status(204)
        self.finish()


default_handlers = [
    (r"/v1/do-not-call", DoNotCallHandler),
    (r"/v1/do-not-call/([^/]+)", DoNotCallEntryHandler),
]
