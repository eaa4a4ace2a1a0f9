"""Prospects: GET /v1/prospects (paginated by page numbers or cursors, filtered), and
GET/PATCH/DELETE /v1/prospects/{id} (changing and deleting need `write`)."""

from collections.abc import Callable

from handlers.base import APIError, APIHandler, invalid, not_found, path_uuid
from handlers.deletions import INCLUDE, deleted_walk, include_deleted, split
from handlers.pagination import serve_page
from handlers.params import instant, phone, uuid_param
from store.identity import normalize_email
from store.paging import Page, Window
from store.prospect_changes import NoContactLeft, ProspectExists, UnreadablePhone

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
            wanted, tombstones = split(filters)
            return await prospects.page(
                self.workspace_id,
                window,
                encoded=True,
                include_deleted=tombstones,
                **store_args(wanted),
            )

        filters = prospect_filters(self.query, prospects.normalize_phone)
        filters[INCLUDE] = include_deleted(self.query)
        await serve_page(self, "prospects", filters, fetch, deleted_walk(self))


UNREADABLE = "is not a phone number that can be read; send it in E.164, such as +14155550101"


class ProspectHandler(APIHandler):
    scopes = {"GET": "read", "HEAD": "read", "PATCH": "write", "DELETE": "write"}
    body_schemas = {"PATCH": "/schemas/requests/prospect-update.json"}

    async def get(self, prospect_id: str) -> None:
        prospect_id = path_uuid(prospect_id, "prospect")
        found = await self.store.prospects.lookup(self.workspace_id, prospect_id=prospect_id)
        if not found:
            raise not_found("prospect")
        self.send_json({"prospect": found[0]})

    async def patch(self, prospect_id: str) -> None:
        prospect_id = path_uuid(prospect_id, "prospect")
        store, body = self.store, self.body
        phone = body.get("phoneNumber")
        if phone is not None and store.prospects.normalize_phone(phone) is None:
            raise invalid([{"pointer": "#/phoneNumber", "detail": UNREADABLE}])
        owner = body.get("ownerUserId")
        if owner is not None and not await store.users.is_active(self.workspace_id, owner.lower()):
            raise APIError(
                "invalid_reference",
                "ownerUserId must be an existing, non-deleted user of your workspace",
                [{"pointer": "#/ownerUserId", "detail": "is not an active user of your workspace"}],
            )
        try:
            changed = await store.prospects.update(self.workspace_id, prospect_id, body)
        except UnreadablePhone:
            raise invalid([{"pointer": "#/phoneNumber", "detail": UNREADABLE}]) from None
        except NoContactLeft:
            raise invalid(
                [
                    {
                        "pointer": "#",
                        "detail": "would leave the prospect without any contact field "
                        "(delete it instead)",
                    }
                ]
            ) from None
        except ProspectExists as exc:
            raise APIError(
                "prospect_exists",
                "another prospect of your workspace was created under these identifiers",
                [
                    {"pointer": f"#/{name}", "detail": "identifies another prospect"}
                    for name in exc.fields
                ],
            ) from None
        if changed is None:
            raise not_found("prospect")
        self.send_json({"prospect": changed[0]})

    async def delete(self, prospect_id: str) -> None:
        prospect_id = path_uuid(prospect_id, "prospect")
        # A prospect deleted before is deleted: 204 again while its tombstone is kept.
        if await self.store.prospects.delete(self.workspace_id, prospect_id) is None:
            raise not_found("prospect")
        self.set_status(204)
        self.finish()


default_handlers = [
    (r"/v1/prospects", ProspectsHandler),
    (r"/v1/prospects/([^/]+)", ProspectHandler),
]
