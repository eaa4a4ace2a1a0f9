"""Dialer lists: GET/POST /v1/lists, GET/PATCH/DELETE /v1/lists/{id},
POST /v1/lists/{id}/contacts and POST /v1/lists/{id}/contacts/remove."""

from handlers.base import APIError, APIHandler, invalid, not_found, path_uuid
from handlers.deletions import INCLUDE, deleted_walk, include_deleted, split
from handlers.idempotency import IdempotentHandler, Reply, idempotent
from handlers.pagination import serve_page
from handlers.params import instant
from store.lists import Removal
from store.paging import Page, Window
from store.prospects import Upload


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
            wanted, tombstones = split(filters)
            return await lists.page(
                self.workspace_id,
                window,
                updated_since=wanted.get("updatedSince"),
                encoded=True,
                include_deleted=tombstones,
            )

        filters = {**list_filters(self.query), INCLUDE: include_deleted(self.query)}
        await serve_page(self, "lists", filters, fetch, deleted_walk(self))

    @idempotent
    async def post(self) -> None:
        store = self.store
        owner = self.body["ownerUserId"].lower()
        if not await store.users.is_active(self.workspace_id, owner):
            raise invalid_owner()
        name = self.body["name"].strip()
        self.answer(await store.lists.create(self.workspace_id, name, owner, once=self.once))

    def reply(self, created: dict) -> Reply:
        return Reply(201, {"list": created}, f"/v1/lists/{created['id']}")


def invalid_owner() -> APIError:
    """The 422 of an `ownerUserId` that is not a non-deleted user of the workspace."""
    return APIError(
        "invalid_reference",
        "ownerUserId must be an existing, non-deleted user of your workspace",
        [{"pointer": "#/ownerUserId", "detail": "is not an active user of your workspace"}],
    )


class ListHandler(APIHandler):
    scopes = {"GET": "read", "HEAD": "read", "PATCH": "write", "DELETE": "write"}
    body_schemas = {"PATCH": "/schemas/requests/list-update.json"}

    async def get(self, list_id: str) -> None:
        list_id = path_uuid(list_id, "list")
        found = await self.store.lists.get(self.workspace_id, list_id)
        if found is None:
            raise not_found("list")
        self.send_json({"list": found})

    async def patch(self, list_id: str) -> None:
        list_id = path_uuid(list_id, "list")
        owner = self.body.get("ownerUserId")
        if owner is not None and not await self.store.users.is_active(
            self.workspace_id, owner.lower()
        ):
            raise invalid_owner()
        changed = await self.store.lists.update(self.workspace_id, list_id, self.body)
        if changed is None:
            raise not_found("list")
        self.send_json({"list": changed[0]})

    async def delete(self, list_id: str) -> None:
        list_id = path_uuid(list_id, "list")
        # A list deleted before (its tombstone still kept) is deleted: 204 again.
        if await self.store.lists.delete(self.workspace_id, list_id) is None:
            raise not_found("list")
        if (work := self.settings.get("list_work")) is not None:
            work.kick()  # its members lose it in the background, starting now
        self.set_status(204)
        self.finish()


class ContactsHandler(IdempotentHandler):
    scopes = {"POST": "write"}
    body_schemas = {"POST": "/schemas/requests/contacts-upload.json"}
    list_id = ""

    @idempotent
    async def post(self, list_id: str) -> None:
        store = self.store
        self.list_id = path_uuid(list_id, "list")
        contacts = self.body["contacts"]
        unreadable = [
            {
                "pointer": f"#/contacts/{index}/phoneNumber",
                "detail": "is not a phone number that can be read; send it in E.164, such as "
                "+14155550101",
            }
            for index, contact in enumerate(contacts)
            if isinstance(phone := contact.get("phoneNumber"), str)
            and phone.strip()  # blank values are ignored, as everywhere in a contact
            and store.prospects.normalize_phone(phone) is None
        ]
        if unreadable:
            raise invalid(unreadable)
        target = await store.lists.get(self.workspace_id, self.list_id)
        if target is None:
            raise not_found("list")
        upload = await store.prospects.add_to_list(
            self.workspace_id, target, contacts, once=self.once
        )
        if (metrics := self.settings.get("metrics")) is not None:
            metrics.imported("contacts", (entry["outcome"] for entry in upload.results))
        self.answer(upload)

    def reply(self, upload: Upload) -> Reply:
        return Reply(
            200,
            {
                "listId": self.list_id,
                "acceptedContacts": len(self.body["contacts"]) - upload.suppressed,
                "suppressedContacts": upload.suppressed,
                "totalProspects": upload.members,
                "results": upload.results,
            },
        )


class RemoveContactsHandler(IdempotentHandler):
    scopes = {"POST": "write"}
    body_schemas = {"POST": "/schemas/requests/contacts-remove.json"}
    list_id = ""

    @idempotent
    async def post(self, list_id: str) -> None:
        self.list_id = path_uuid(list_id, "list")
        target = await self.store.lists.get(self.workspace_id, self.list_id)
        if target is None:
            raise not_found("list")
        self.answer(
            await self.store.lists.remove_members(
                self.workspace_id, target, self.body["prospectIds"], once=self.once
            )
        )

    def reply(self, removal: Removal) -> Reply:
        return Reply(
            200,
            {
                "listId": self.list_id,
                "removed": removal.removed,
                "prospectsCount": removal.members,
                "results": removal.results,
            },
        )


default_handlers = [
    (r"/v1/lists", ListsHandler),
    (r"/v1/lists/([^/]+)", ListHandler),
    (r"/v1/lists/([^/]+)/contacts", ContactsHandler),
    (r"/v1/lists/([^/]+)/contacts/remove", RemoveContactsHandler),
]
