"""Erasure requests: POST/GET /v1/erasures, GET /v1/erasures/{id}, all with the `admin` scope.

A request names a person by email, phone number or prospect id (at least one); the prospects
they match now (normalised as contact matching normalises them) are what it erases. The request
keeps only keyed hashes of the identifiers (store/erasures.py), and no response shows them. The
work is done in the background (server/erasure_work.py): 202 and a `pending` request at once.
"""

from __future__ import annotations

from urllib.parse import urlencode

from handlers.base import APIError, APIHandler, invalid, not_found, path_uuid
from handlers.idempotency import IdempotentHandler, Reply, idempotent
from handlers.pagination import decode_cursor
from store.erasures import RESOURCE, identifier_hashes
from store.identity import normalize_email, normalize_phone
from store.paging import Window
from store.users import InvalidEmail, checked_email

SORT = "-requestedAt"
MATCHED = 10_000  # at most this many prospects per identifier (a person is a handful)


def bad(pointer: str, detail: str) -> APIError:
    return invalid([{"pointer": pointer, "detail": detail}])


class ErasuresHandler(IdempotentHandler):
    scopes = {"GET": "admin", "HEAD": "admin", "POST": "admin"}
    query_schemas = {"GET": "/schemas/queries/erasures.json"}
    body_schemas = {"POST": "/schemas/requests/erasure-create.json"}

    async def get(self) -> None:
        position = None
        if (token := self.query.get("cursor")) is not None:
            _, _, position = decode_cursor(self, RESOURCE, token, None, {})
        window = Window(self.query.get("pageSize", 50), None, SORT, position)
        page = await self.store.erasures.page(self.workspace_id, window)
        next_cursor = None
        if page.has_more:
            next_cursor = self.settings["cursors"].encode(
                self.workspace_id, RESOURCE, SORT, {}, page.last
            )
            params = urlencode({"cursor": next_cursor, "pageSize": window.page_size})
            self.set_header("Link", f'<{self.request.path}?{params}>; rel="next"')
        self.send_json(
            {
                "erasures": page.items,
                "pageSize": page.page_size,
                "hasMore": page.has_more,
                "nextCursor": next_cursor,
            }
        )

    @idempotent
    async def post(self) -> None:
        body = self.body
        email = phone = prospect_id = None
        if "email" in body:
            try:
                email = normalize_email(checked_email(body["email"]))
            except InvalidEmail as exc:
                raise bad("#/email", str(exc)) from None
        if "phoneNumber" in body:
            phone = normalize_phone(body["phoneNumber"], self.settings["config"].default_region)
            if phone is None:
                raise bad(
                    "#/phoneNumber",
                    "is not a phone number that can be read; send it in E.164, such as "
                    "+14155550101",
                )
        if "prospectId" in body:
            prospect_id = body["prospectId"].lower()
        prospects = self.store.prospects
        found: dict[str, None] = {}
        for given in (
            {"prospect_id": prospect_id},
            {"email": email},
            {"phone": phone},
        ):
            if next(iter(given.values())) is not None:
                for prospect in await prospects.lookup(self.workspace_id, limit=MATCHED, **given):
                    found[prospect["id"]] = None
        if prospect_id is not None:
            found[prospect_id] = None  # one deleted before still has its calls and events
        hashes = identifier_hashes(
            self.settings["auth"].subkey("erasures"),
            email=email,
            phone=phone,
            prospect_id=prospect_id,
        )
        created = await self.store.erasures.create(
            self.workspace_id, hashes, list(found), self.now(), once=self.once
        )
        if (work := self.settings.get("erasure_work")) is not None:
            work.kick()
        self.answer(created)

    def reply(self, created: dict) -> Reply:
        return Reply(202, {"erasure": created}, f"/v1/erasures/{created['id']}")


class ErasureHandler(APIHandler):
    scopes = {"GET": "admin", "HEAD": "admin"}

    async def get(self, erasure_id: str) -> None:
        erasure_id = path_uuid(erasure_id, "erasure")
        found = await self.store.erasures.get(self.workspace_id, erasure_id)
        if found is None:
            raise not_found("erasure")
        self.send_json({"erasure": found})


default_handlers = [
    (r"/v1/erasures", ErasuresHandler),
    (r"/v1/erasures/([^/]+)", ErasureHandler),
]
