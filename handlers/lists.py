"""Dialer lists: GET/POST /v1/lists, GET /v1/lists/{id}, POST /v1/lists/{id}/contacts."""

from handlers.base import APIError, APIHandler, not_found, path_uuid
from handlers.idempotency import IdempotentHandler, idempotent
from handlers.pagination import serve_page
from handlers.params import instant
from store.paging import Page, Window


def list_filters(query: dict) -> dict:
    """The filters of GET /lists (and its export) by parameter name, None when absent."""
    return {"updatedSince": instant(query, "updatedSince")}


class ListsHandler(IdempotentHandler):
    scopes = {"GET": "read", "HEAD": "read", "POST": "write"}
    query_schemas = {"GET": "/schemas/queries/lists.json"}
    body_schemas = {"POST": "/schemas/requests/list-create.json"}

    async def get(self) -> None:
        lists = self.store.lists

        async def fetch(window: Window, filters: dict) -> Page:
            return await lists.page(
                self.workspace_id, window, updated_since=filters.get("updatedSince"), encoded=True
            )

        await serve_page(self, "lists", list_filters(self.query), fetch)

    @idempotent
    async def post(self) -> None:
        store = self.store
        owner = self.body["ownerUserId"].lower()
        if not await store.users.is_active(self.workspace_id, owner):
            raise APIError(
                "invalid_reference",
                "ownerUserId must be an existing, non-deleted user of your workspace",
                [{"pointer": "#/ownerUserId", "detail": "is not an active user of your workspace"}],
            )
        created = await store.lists.create(self.workspace_id, self.body["name"].strip(), owner)
        self.set_header("Location", f"/v1/lists/{created['id']}")
        self.send_json({"list": created}, status=201)


class ListHandler(APIHandler):
    async def get(self, list_id: str) -> None:
        list_id = path_uuid(list_id, "list")
        found = await self.store.lists.get(self.workspace_id, list_id)
        if found is None:
            raise not_found("list")
        self.send_json({"list": found})


class ContactsHandler(IdempotentHandler):
    scopes = {"POST": "write"}
    body_schemas = {"POST": "/schemas/requests/contacts-upload.json"}

    @idempotent
    async def post(self, list_id: str) -> None:
        store = self.store
        list_id = path_uuid(list_id, "list")
        target = await store.lists.get(self.workspace_id, list_id)
        if target is None:
            raise not_found("list")
        contacts = self.body["contacts"]
        upload = await store.prospects.add_to_list(self.workspace_id, target, contacts)
        updated = await store.lists.set_count(self.workspace_id, list_id, upload.members)
        if updated is None:  # lists are never deleted: found above, so found here
            raise not_found("list")
        self.send_json(
            {
                "listId": list_id,
                "acceptedContacts": len(contacts),
                "totalProspects": updated["prospectsCount"],
                "results": upload.results,
            }
        )


default_handlers = [
    (r"/v1/lists", ListsHandler),
    (r"/v1/lists/([^/]+)", ListHandler),
    (r"/v1/lists/([^/]+)/contacts", ContactsHandler),
]
