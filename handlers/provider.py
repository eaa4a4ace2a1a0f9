"""Calls from the telephony provider: its signed status and recording callbacks
(POST /v1/provider/callbacks/{workspaceId}/status and .../recording: form-encoded, no API key,
X-Twilio-Signature), and the calls kept aside for want of a user
(GET /v1/provider/pending-calls, POST /v1/provider/pending-calls/{callSid}/resolve).

A callback is checked in this order, before anything is written: the body's size and media
type, the signature over `public_base_url` + path + query and the form, the AccountSid, the
workspace (unknown: the same 403 as a bad signature), the callbacks' own rate limit, the form's
schema. What a callback then does is store.provider_flow's.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl

from tornado.web import HTTPError

from handlers.base import RETRY_AFTER_DB, APIError, APIHandler, invalid, not_found
from handlers.ingest import refused
from store.ingest import CREATED, Refused
from store.provider_flow import CallbackFlow, Unresolvable
from telephony.signatures import HEADER, valid

FORM_TYPE = re.compile(r"^application/x-www-form-urlencoded\s*(;.*)?$", re.IGNORECASE)
CALL_SID = re.compile(r"^CA[0-9a-fA-F]{32}$")
MAX_FIELDS = 1000  # a provider's callback has a few dozen
# One answer for every refused callback (a bad or missing signature, another account, an
# unknown workspace): it tells a prober nothing.
SIGNATURE_REFUSED = "the request is not signed for this service"


def flow(settings: dict) -> CallbackFlow:
    """The callback flow, built once per application from its store and configuration."""
    if "provider_flow" not in settings:
        settings["provider_flow"] = CallbackFlow(
            settings["store"], settings["config"].provider_pending_days, settings["clock"]
        )
    return settings["provider_flow"]


class CallbackHandler(APIHandler):
    """One kind of provider callback, checked in `prepare`; the subclass's `post` applies it."""

    auth_required = False
    query_schemas = {"POST": "/schemas/queries/provider-callback.json"}
    form: dict[str, str]
    context: dict[str, str]

    async def prepare(self) -> None:
        if self.request.method not in self.allowed_methods():
            raise HTTPError(405)
        limit = self.settings["max_body_bytes"]
        cut = getattr(self.request.connection, "body_too_large", False)  # set by server.gate
        if cut or len(self.request.body) > limit:
            raise APIError("payload_too_large", f"the body must be at most {limit} bytes")
        if not FORM_TYPE.match(self.request.headers.get("Content-Type", "")):
            raise APIError(
                "unsupported_media_type", "send the body as application/x-www-form-urlencoded"
            )
        if not self.store.indexes_ready:
            raise APIError(
                "service_unavailable",
                "the database is not ready yet",
                headers={"Retry-After": RETRY_AFTER_DB},
            )
        try:
            pairs = parse_qsl(
                self.request.body.decode("utf-8", "replace"),
                keep_blank_values=True,
                max_num_fields=MAX_FIELDS,
            )
        except ValueError:  # more fields than any callback has
            raise APIError(
                "invalid_request", f"the form has more than {MAX_FIELDS} fields"
            ) from None
        signed: dict[str, list[str]] = {}
        for name, value in pairs:
            signed.setdefault(name, []).append(value)
        config = self.settings["config"]
        base = config.public_base_url or f"{self.request.protocol}://{self.request.host}"
        url = base.rstrip("/") + self.request.uri
        signature = self.request.headers.get(HEADER)
        workspace_id = self.path_args[0] if self.path_args else ""
        if (
            not valid(config.provider_auth_token, url, signed, signature)
            or signed.get("AccountSid") != [config.provider_account_id]
            or await self.store.workspaces.get(workspace_id) is None
        ):
            raise APIError("invalid_signature", SIGNATURE_REFUSED)
        self.workspace_id = workspace_id
        await self.check_callback_rate()
        self.form = {name: values[-1] for name, values in signed.items()}
        errors = self.settings["schemas"].errors(self.body_schemas["POST"], self.form)
        if errors:
            raise invalid(errors)
        self.context = {
            name: self.request.query_arguments[name][-1].decode("utf-8", "replace")
            for name in ("userId", "prospectId", "listId")
            if name in self.request.query_arguments
        }

    async def check_callback_rate(self) -> None:
        """The callbacks' own limit per workspace (provider_callbacks_per_minute), apart from
        the workspace's request limit."""
        limiter = self.settings.get("callback_limiter")
        if limiter is None:
            return
        verdict = await limiter.hit(self.workspace_id)
        if not verdict.allowed:
            raise APIError(
                "rate_limited",
                f"the workspace's provider callbacks limit ({limiter.limit} per "
                f"{limiter.window} s) is used up; retry in {verdict.reset} s",
                headers={"Retry-After": str(verdict.reset)},
            )

    def answered(self) -> None:
        self.set_status(204)
        self.finish()


class StatusCallbackHandler(CallbackHandler):
    body_schemas = {"POST": "/schemas/requests/provider-status-callback.json"}

    async def post(self, workspace_id: str) -> None:
        await flow(self.settings).status(self.workspace_id, self.form, self.context)
        self.answered()


class RecordingCallbackHandler(CallbackHandler):
    body_schemas = {"POST": "/schemas/requests/provider-recording-callback.json"}

    async def post(self, workspace_id: str) -> None:
        await flow(self.settings).recording(self.workspace_id, self.form)
        self.answered()


class PendingCallsHandler(APIHandler):
    scopes = {"GET": "ingest", "HEAD": "ingest"}

    async def get(self) -> None:
        pending = await self.store.provider_calls.pending(self.workspace_id, self.now())
        self.send_json({"pendingCalls": pending})


class ResolveHandler(APIHandler):
    scopes = {"POST": "ingest"}
    body_schemas = {"POST": "/schemas/requests/pending-call-resolve.json"}

    async def post(self, call_sid: str) -> None:
        if not CALL_SID.match(call_sid):
            raise not_found("pending call")  # the same answer as an unknown SID
        try:
            recorded = await flow(self.settings).resolve(
                self.workspace_id, call_sid, self.body["userId"].lower()
            )
        except Refused as exc:
            raise refused(exc.refusal) from None
        except Unresolvable as exc:
            raise APIError("invalid_request", str(exc)) from None
        if recorded is None or recorded.call is None:
            raise not_found("pending call")
        value: dict = {"call": recorded.call}
        if recorded.match is not None:
            value["prospectMatch"] = recorded.match
        if recorded.outcome == CREATED:
            self.set_header("Location", f"/v1/calls/{recorded.call['id']}")
            self.send_json(value, 201)
        else:
            self.send_json(value)


default_handlers = [
    (r"/v1/provider/callbacks/([^/]+)/status", StatusCallbackHandler),
    (r"/v1/provider/callbacks/([^/]+)/recording", RecordingCallbackHandler),
    (r"/v1/provider/pending-calls", PendingCallsHandler),
    (r"/v1/provider/pending-calls/([^/]+)/resolve", ResolveHandler),
]
