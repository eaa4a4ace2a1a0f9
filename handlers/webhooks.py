"""Webhook endpoints: POST/GET /v1/webhook-endpoints, GET/PATCH/DELETE
/v1/webhook-endpoints/{id}, POST .../rotate-secret, GET .../deliveries, POST .../recover.

An endpoint's secret is in the responses of its creation and of a rotation, and nowhere else.
A URL is checked where it is given (webhooks/transport.py `check_url`: https, public addresses
only unless the operator allowed a range) and again at every delivery (the dispatcher,
webhooks/dispatcher.py, does the sending). Another workspace's endpoint is not found, like an
unknown id.
"""

from __future__ import annotations

import datetime as dt
from urllib.parse import urlencode

from handlers.base import APIError, APIHandler, invalid, not_found, path_uuid
from handlers.idempotency import IdempotentHandler, Reply, idempotent
from handlers.pagination import decode_cursor
from handlers.params import INSTANT_FORM, instant
from store.webhooks import RESOURCE, SORT
from webhooks.signing import derived_secret, new_secret
from webhooks.transport import check_url

READ = {"GET": "read", "HEAD": "read"}
SECRET_OVERLAP = dt.timedelta(hours=24)  # a rotated-out secret still signs this long


async def checked_url(handler: APIHandler, url: str) -> str:
    """The URL, if deliveries may go there; else 422 invalid_webhook_url naming the rule."""
    reason = await check_url(url, handler.settings["webhook_policy"])
    if reason is not None:
        raise APIError(
            "invalid_webhook_url",
            f"url cannot be used: {reason}",
            [{"pointer": "#/url", "detail": reason}],
        )
    return url


def secret_for(handler: IdempotentHandler, purpose: str) -> str:
    """A new signing secret; with an Idempotency-Key, the same in every attempt of the request
    (derived from the key's stored seed), so that a retry after a crash never makes a second
    one that the client was not shown."""
    once = handler.once
    return derived_secret(once.seed, purpose) if once else new_secret()


def event_types(body: dict) -> list[str] | None:
    """The endpoint's types in one spelling (sorted), or None for every type."""
    given = body.get("eventTypes")
    return sorted(given) if given is not None else None


class WebhookEndpointsHandler(IdempotentHandler):
    scopes = {**READ, "POST": "write"}
    body_schemas = {"POST": "/schemas/requests/webhook-endpoint-create.json"}

    async def get(self) -> None:
        found = await self.store.webhook_endpoints.list(self.workspace_id)
        self.send_json({"webhookEndpoints": found})

    @idempotent
    async def post(self) -> None:
        url = await checked_url(self, self.body["url"])
        created = await self.store.webhook_endpoints.create(
            self.workspace_id,
            url,
            event_types(self.body),
            self.body.get("description"),
            secret_for(self, "create"),
            self.now(),
            once=self.once,
        )
        self.answer(created)

    def reply(self, created: dict) -> Reply:
        return Reply(201, {"webhookEndpoint": created}, f"/v1/webhook-endpoints/{created['id']}")


class WebhookEndpointHandler(APIHandler):
    scopes = {**READ, "PATCH": "write", "DELETE": "write"}
    body_schemas = {"PATCH": "/schemas/requests/webhook-endpoint-update.json"}

    async def get(self, endpoint_id: str) -> None:
        endpoint_id = path_uuid(endpoint_id, "webhook endpoint")
        found = await self.store.webhook_endpoints.get(self.workspace_id, endpoint_id)
        if found is None:
            raise not_found("webhook endpoint")
        self.send_json({"webhookEndpoint": found})

    async def patch(self, endpoint_id: str) -> None:
        endpoint_id = path_uuid(endpoint_id, "webhook endpoint")
        if await self.store.webhook_endpoints.get(self.workspace_id, endpoint_id) is None:
            raise not_found("webhook endpoint")
        changes = dict(self.body)
        if "url" in changes:
            await checked_url(self, changes["url"])
        if "eventTypes" in changes:
            changes["eventTypes"] = event_types(changes)
        updated = await self.store.webhook_endpoints.update(
            self.workspace_id, endpoint_id, changes, self.now()
        )
        if updated is None:  # deleted meanwhile
            raise not_found("webhook endpoint")
        self.send_json({"webhookEndpoint": updated})

    async def delete(self, endpoint_id: str) -> None:
        endpoint_id = path_uuid(endpoint_id, "webhook endpoint")
        if not await self.store.webhook_endpoints.delete(self.workspace_id, endpoint_id):
            raise not_found("webhook endpoint")
        self.set_status(204)
        self.finish()


class RotateSecretHandler(IdempotentHandler):
    scopes = {"POST": "write"}

    @idempotent
    async def post(self, endpoint_id: str) -> None:
        endpoint_id = path_uuid(endpoint_id, "webhook endpoint")
        rotated = await self.store.webhook_endpoints.rotate_secret(
            self.workspace_id,
            endpoint_id,
            secret_for(self, "rotate"),
            self.now(),
            SECRET_OVERLAP,
            once=self.once,
        )
        if rotated is None:
            raise not_found("webhook endpoint")
        self.answer(rotated)

    def reply(self, rotated: dict) -> Reply:
        return Reply(200, {"webhookEndpoint": rotated})


class DeliveriesHandler(APIHandler):
    query_schemas = {"GET": "/schemas/queries/webhook-deliveries.json"}

    async def get(self, endpoint_id: str) -> None:
        endpoint_id = path_uuid(endpoint_id, "webhook endpoint")
        after = None
        filters = {"endpoint": endpoint_id}
        if (token := self.query.get("cursor")) is not None:  # a bad cursor is 400 before all
            _, made, after = decode_cursor(self, RESOURCE, token, None, {})
            if made.get("endpoint") != endpoint_id or after is None:
                raise APIError(
                    "invalid_cursor",
                    "cursor: it was made for another endpoint's deliveries; start again without "
                    "a cursor",
                    [{"parameter": "cursor", "pointer": "#/query/cursor", "detail": "is foreign"}],
                )
        if await self.store.webhook_endpoints.get(self.workspace_id, endpoint_id) is None:
            raise not_found("webhook endpoint")
        page_size = self.query.get("pageSize", 50)
        page = await self.store.webhook_deliveries.page(
            self.workspace_id, endpoint_id, after, page_size
        )
        next_cursor = None
        if page.has_more:
            next_cursor = self.settings["cursors"].encode(
                self.workspace_id, RESOURCE, SORT, filters, page.last
            )
            link = urlencode({"cursor": next_cursor, "pageSize": page_size})
            self.set_header("Link", f'<{self.request.path}?{link}>; rel="next"')
        self.send_json(
            {
                "deliveries": page.attempts,
                "pageSize": page_size,
                "hasMore": page.has_more,
                "nextCursor": next_cursor,
            }
        )


class RecoverHandler(IdempotentHandler):
    scopes = {"POST": "write"}
    body_schemas = {"POST": "/schemas/requests/webhook-recover.json"}

    @idempotent
    async def post(self, endpoint_id: str) -> None:
        endpoint_id = path_uuid(endpoint_id, "webhook endpoint")
        try:
            since = instant(self.body, "since")
        except APIError:
            raise invalid([{"pointer": "#/since", "detail": INSTANT_FORM}]) from None
        assert since is not None  # required by the schema
        config = self.settings["config"]
        now = self.now()
        if since < now - dt.timedelta(days=config.event_retention_days):
            raise APIError(
                "events_expired",
                f"since is older than the {config.event_retention_days:g} days events are "
                "kept; recover from a later instant",
                [{"pointer": "#/since", "detail": "has expired"}],
            )
        self.recovery = {"endpointId": endpoint_id, "since": since}
        if not await self.store.webhook_endpoints.recover(
            self.workspace_id, endpoint_id, since, now, once=self.once
        ):
            raise not_found("webhook endpoint")
        self.answer(True)

    def reply(self, result: object) -> Reply:
        return Reply(202, {"recovery": self.recovery})


default_handlers = [
    (r"/v1/webhook-endpoints", WebhookEndpointsHandler),
    (r"/v1/webhook-endpoints/([^/]+)", WebhookEndpointHandler),
    (r"/v1/webhook-endpoints/([^/]+)/rotate-secret", RotateSecretHandler),
    (r"/v1/webhook-endpoints/([^/]+)/deliveries", DeliveriesHandler),
    (r"/v1/webhook-endpoints/([^/]+)/recover", RecoverHandler),
]
