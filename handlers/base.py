"""APIHandler: authentication, rate limit, request ids, strict JSON in, JSON out, one error shape.

Handlers subclass it, declare `query_schemas` / `body_schemas` and the `scopes` a key needs
per method, read `self.query`, `self.body`, `self.key` and `self.workspace_id`, call the store,
and `send_json` the result. Errors are raised as `APIError` (handlers.errors; or escape as
exceptions), rendered only by `write_error`.

A request passes, in order: the method (405), the body size (413), the key (401), the
workspace's rate limit (429; counted from here on), the key's scope (403), the query (400), the
body (400, 415).
"""

from __future__ import annotations

import datetime as dt
import itertools
import logging
import os
import re
from types import TracebackType
from typing import Any

from tornado.httputil import HTTPServerRequest
from tornado.web import Application, HTTPError, RequestHandler

from handlers import jsonio
from handlers.errors import UUID, APIError, invalid, invalid_cursor, not_found, path_uuid
from schemas.problems import CODE_FOR_STATUS, PROBLEMS, problem_type
from store.contract.requests import RequestStore
from store.errors import StoreDamaged, StoreUnavailable
from store.keys import SCOPES, ActiveKey, KeyExpired, ordered

__all__ = [
    "ANY_SCOPE",
    "UUID",
    "APIError",
    "APIHandler",
    "NotFoundHandler",
    "invalid",
    "not_found",
    "path_uuid",
]

log = logging.getLogger("workspace_api")

REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")  # fullmatch: no newline slips past a $
BEARER = re.compile(r"^Bearer +([A-Za-z0-9._~+/-]+=*) *$", re.IGNORECASE)
JSON_TYPE = re.compile(r"^application/json\s*(;\s*charset\s*=\s*\"?utf-8\"?\s*)?$", re.IGNORECASE)
INTEGER = re.compile(r"-?[0-9]+")
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
NO_QUERY = "/schemas/queries/none.json"
CURSOR_PARAMETER = "/schemas/parameters/cursor.json"
MALFORMED_CURSOR = "the cursor is malformed"  # as store.cursors says of one it cannot read
# The store's StoreUnavailable (every backend), and a deadline that ran out around a store call.
DB_DOWN = (StoreUnavailable, TimeoutError)
RETRY_AFTER_DB = "5"
REALM = 'Bearer realm="workspace-api"'
# A handler's `scopes` value for a method any valid key may use, whatever its scopes (GET
# /v1/api-key: a key describing itself).
ANY_SCOPE = "any"


_ID_PREFIX: str
_ID_NUMBERS: itertools.count[int]


def _new_id_source() -> None:
    """Request ids made here: 16 random hex digits per process (drawn again in every forked
    child: `serve --processes N`), then a counter; 32 hex digits, as unique as a random UUID's,
    without reading random bytes for every request."""
    global _ID_PREFIX, _ID_NUMBERS
    _ID_PREFIX = os.urandom(8).hex()
    _ID_NUMBERS = itertools.count(int.from_bytes(os.urandom(4), "big"))


_new_id_source()
os.register_at_fork(after_in_child=_new_id_source)


def db_reason(exc: BaseException) -> str:
    """Why the database failed a request, for its log line: the store's message (the
    database's own reason: SQLite's message and code, or the driver's error class and message;
    never data or credentials), or the kind of time-out."""
    if isinstance(exc, StoreDamaged):  # explained once, in full, when it was found
        return "the database file is damaged (logged in full when it was found)"
    if isinstance(exc, StoreUnavailable):
        return str(exc) or type(exc).__name__
    return f"no answer in time ({type(exc).__name__})"


class UnparsedBodyRequest(HTTPServerRequest):
    """A request whose body Tornado leaves alone: it would parse form-encoded and multipart
    bodies (and answer a bare 400 for a broken one) before the key is checked. Bodies here are
    JSON, read by `validated_body` only."""

    def _parse_body(self) -> None:
        return None


class APIHandler(RequestHandler):
    auth_required = True
    query_schemas: dict[str, str] = {}
    body_schemas: dict[str, str] = {}
    # The one scope (store.keys.SCOPES) a key needs for each method the handler serves: `read`
    # for GET and HEAD; `write` for the integrator's writes (lists, contacts, webhook
    # endpoints); `ingest` for the dialer's (calls, activities). A handler with a write declares
    # its whole table, e.g. {"GET": "read", "HEAD": "read", "POST": "write"}; a served method
    # missing from it is an error when the class is defined.
    scopes: dict[str, str] = {"GET": "read", "HEAD": "read"}
    key: ActiveKey  # set by authenticate(), like workspace_id
    workspace_id: str  # set by authenticate(), before any method of a handler that needs a key
    query: dict = {}
    body: Any = None  # the validated JSON body
    _allowed_methods: list[str]  # allowed_methods(), once worked out

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.auth_required:
            return
        for method in cls.allowed_methods():
            needed = cls.scopes.get(method)
            if needed is None:
                raise TypeError(
                    f"{cls.__name__} serves {method} without a scope: add it to its `scopes`"
                )
            if needed not in (*SCOPES, ANY_SCOPE):
                raise TypeError(f"{cls.__name__}.scopes[{method!r}]: unknown scope {needed!r}")

    def __init__(self, application: Application, request: HTTPServerRequest, **kwargs: Any) -> None:
        if type(request) is HTTPServerRequest:
            request.__class__ = UnparsedBodyRequest
        super().__init__(application, request, **kwargs)

    @property
    def request_id(self) -> str:
        if not hasattr(self, "_request_id"):
            given = self.request.headers.get("X-Request-Id", "")
            self._request_id = (
                given if REQUEST_ID.fullmatch(given) else f"{_ID_PREFIX}{next(_ID_NUMBERS):016x}"
            )
        return self._request_id

    def set_default_headers(self) -> None:
        # Straight into the headers, past set_header's check for unsafe characters: every value
        # here is made of safe ones (a client's request id only when REQUEST_ID matches it), and
        # the checks were a tenth of the handler's own time on a small read.
        headers = self._headers
        headers["X-Request-Id"] = self.request_id
        headers["Cache-Control"] = "no-store"
        headers["X-Content-Type-Options"] = "nosniff"
        self.clear_header("Server")
        if (rate := getattr(self, "_rate_headers", None)) is not None:  # kept on error replies
            headers.update(rate)

    def compute_etag(self) -> str | None:
        """No automatic ETags: API responses are no-store; recordings set their own."""
        return None

    @classmethod
    def allowed_methods(cls) -> list[str]:
        """The methods the class serves (worked out once per class: every request asks)."""
        methods = cls.__dict__.get("_allowed_methods")
        if methods is None:
            methods = [
                m
                for m in METHODS
                if getattr(cls, m.lower()) is not getattr(RequestHandler, m.lower())
            ]
            if "GET" not in methods:
                methods = [m for m in methods if m != "HEAD"]
            cls._allowed_methods = methods
        return methods

    @property
    def store(self) -> RequestStore:
        """The store (built once at start-up): handlers know its request path, never its backend,
        its seeding or its hooks."""
        return self.settings["store"]

    def now(self) -> dt.datetime:
        """The service's clock's instant (store.clock: one clock for the store and handlers)."""
        return self.settings["clock"].now()

    async def head(self, *args: str) -> None:
        """HEAD is GET without the body (RFC 9110 9.3.2); Tornado drops the body bytes."""
        answered = self.get(*args)
        if answered is not None:
            await answered

    async def prepare(self) -> None:
        if self.request.method not in self.allowed_methods():
            raise HTTPError(405)
        limit = self.settings["max_body_bytes"]
        cut = getattr(self.request.connection, "body_too_large", False)  # set by server.gate
        if cut or len(self.request.body) > limit:
            raise APIError("payload_too_large", f"the body must be at most {limit} bytes")
        if self.auth_required:
            if not self.store.indexes_ready:
                if (metrics := self.settings.get("metrics")) is not None:
                    metrics.store_error(None)
                raise APIError(
                    "service_unavailable",
                    "the database is not ready yet",
                    headers={"Retry-After": RETRY_AFTER_DB},
                )
            await self.authenticate()
            await self.check_rate_limit()
            self.check_scope()
        self.query = self.validated_query()
        schema = self.body_schemas.get(self.request.method)
        if schema:
            self.body = self.validated_body(schema)

    async def authenticate(self) -> None:
        header = self.request.headers.get("Authorization")
        if header is None:
            raise APIError(
                "unauthorized",
                "send the API key as Authorization: Bearer <key>",
                headers={"WWW-Authenticate": REALM},
            )
        match = BEARER.match(header)
        try:
            key = match and await self.settings["auth"].authenticate(match.group(1))
        except KeyExpired:
            raise APIError(
                "unauthorized",
                "the API key has expired; ask your workspace's operator for a new key",
                headers={
                    "WWW-Authenticate": f'{REALM}, error="invalid_token", '
                    'error_description="The API key expired"'
                },
            ) from None
        if not key:
            raise APIError(
                "unauthorized",
                "the API key is malformed, unknown or revoked",
                headers={"WWW-Authenticate": f'{REALM}, error="invalid_token"'},
            )
        self.key = key
        self.workspace_id = key.workspace_id

    def check_scope(self) -> None:
        """403 `insufficient_scope` (RFC 6750 3.1) when the key's scopes do not allow the method;
        after the rate-limit count (a refused request counts), before the body is read."""
        method = self.request.method or ""
        needed = self.scopes.get(method)
        if needed == ANY_SCOPE or needed in self.key.scopes:
            return
        held = ", ".join(ordered(self.key.scopes))
        raise APIError(
            "insufficient_scope",
            f"{method} {self.request.path} needs an API key with the scope "
            f"`{needed}`; this key has {held}",
            headers={"WWW-Authenticate": f'{REALM}, error="insufficient_scope", scope="{needed}"'},
        )

    async def check_rate_limit(self) -> None:
        """Count the request against its workspace's limit (server.ratelimit); 429 when over."""
        if (limiter := self.settings.get("rate_limiter")) is None:
            return
        verdict = await limiter.hit(self.workspace_id)
        self._rate_headers = verdict.headers
        self._headers.update(verdict.headers)  # made of safe characters by the limiter
        if not verdict.allowed:
            if (metrics := self.settings.get("metrics")) is not None:
                metrics.rate_limited.inc()
            raise APIError(
                "rate_limited",
                f"the workspace's rate limit ({limiter.limit} requests "
                f"per {limiter.window} s) is used up; retry in {verdict.reset} s",
                headers={"Retry-After": str(verdict.reset)},
            )

    def validated_query(self) -> dict:
        schemas = self.settings["schemas"]
        method = "GET" if self.request.method == "HEAD" else self.request.method
        schema = schemas.documents[self.query_schemas.get(method, NO_QUERY)]
        if limit := getattr(self.request.connection, "query_fields_over", 0):  # server.gate
            raise invalid([{"pointer": "#/query", "detail": f"must have at most {limit} fields"}])
        values: dict[str, int | str] = {}
        errors: list[dict[str, str]] = []
        for name, raw in self.request.query_arguments.items():
            if len(raw) > 1:
                errors.append({"parameter": name, "detail": "must be given at most once"})
                continue
            text = raw[0].decode("utf-8", "replace")
            if "\x00" in text:
                errors.append({"parameter": name, "detail": jsonio.NUL_DETAIL})
                continue
            prop = schemas.resolve(schema.get("properties", {}).get(name, {}))
            if prop.get("type") == "integer" and INTEGER.fullmatch(text):
                # A huge number stands for one far outside every documented range, unconverted.
                huge = -(10**40) if text[0] == "-" else 10**40
                values[name] = int(text) if len(text) <= 40 else huge
            else:
                values[name] = text
        for error in schemas.query_errors(schema["$id"], values):
            name = error["pointer"][2:].split("/")[0]
            errors.append({"parameter": name, "detail": error["detail"]})
        if errors:
            # A cursor the schema refuses (wrong characters or shape, too long) is one the API
            # did not make: the same 400 `invalid_cursor` as an altered or another's cursor
            # (handlers.pagination), on every endpoint whose query uses the shared parameter.
            cursors = {
                name
                for name, prop in schema.get("properties", {}).items()
                if prop.get("$ref") == CURSOR_PARAMETER
            }
            for error in errors:
                error["pointer"] = "#/query/" + error["parameter"]
                if error["parameter"] in cursors:
                    error["detail"] = MALFORMED_CURSOR
            if all(error["parameter"] in cursors for error in errors):
                raise invalid_cursor(MALFORMED_CURSOR, errors[0]["parameter"])
            raise invalid(errors)
        return values

    def validated_body(self, schema_id: str) -> Any:
        content_type = self.request.headers.get("Content-Type", "")
        if not JSON_TYPE.match(content_type):
            raise APIError("unsupported_media_type", "send the body as application/json")
        if not self.request.body.strip():
            required = "a JSON body is required"
            raise APIError("invalid_request", required, [{"pointer": "#", "detail": required}])
        try:
            body = jsonio.parse(self.request.body)
        except jsonio.JSONInputError as exc:
            error = {"pointer": exc.pointer, "detail": str(exc)}
            if exc.pointer == "#":  # the body as a whole: the detail says it all
                raise APIError("invalid_request", str(exc), [error]) from None
            raise invalid([error]) from None
        errors = self.settings["schemas"].errors(schema_id, body)
        if errors:
            raise invalid(errors)
        return body

    def send_json(self, value: object, status: int = 200) -> None:
        self.set_status(status)
        self._headers["Content-Type"] = "application/json; charset=utf-8"
        self.finish(jsonio.dumps_bytes(value))

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        exc = kwargs.get("exc_info", (None, None, None))[1]
        extra: dict = {}
        if isinstance(exc, APIError):
            code, detail, errors, extra = exc.code, exc.detail, exc.errors, exc.extra
            for name, value in exc.headers.items():
                self.set_header(name, value)
        elif isinstance(exc, DB_DOWN):
            # The database's own reason goes to the log (log_exception), never to the client.
            code, detail, errors = "service_unavailable", "the database is not available", None
            self.set_header("Retry-After", RETRY_AFTER_DB)
        else:
            code = CODE_FOR_STATUS.get(
                status_code, "internal_error" if status_code >= 500 else "invalid_request"
            )
            detail, errors = PROBLEMS[code][2], None
            if code == "method_not_allowed":
                detail = f"{self.request.method} is not allowed here"
                self.set_header("Allow", ", ".join(self.allowed_methods()))
        problem = self.problem_of(code, detail, errors, extra)
        self.set_status(problem["status"])
        self.set_header("Content-Type", "application/problem+json")
        self.finish(jsonio.dumps(problem))

    def problem_of(
        self, code: str, detail: str, errors: list | None = None, extra: dict | None = None
    ) -> dict:
        """The problem details body (RFC 9457) of an error code, with members of its own."""
        status, title, _ = PROBLEMS[code]
        problem = {
            "type": problem_type(code),
            "title": title,
            "status": status,
            "code": code,
            "detail": detail,
        }
        if errors:
            problem["errors"] = errors
        problem.update(extra or {})
        problem["requestId"] = self.request_id
        return problem

    def log_exception(
        self,
        typ: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if isinstance(value, APIError | HTTPError):
            return
        if isinstance(value, DB_DOWN):
            if (metrics := self.settings.get("metrics")) is not None:
                metrics.store_error(value)
            log.warning("database unavailable: %s (request %s)", db_reason(value), self.request_id)
            return
        log.error("unhandled error in request %s", self.request_id, exc_info=value)


class NotFoundHandler(APIHandler):
    """Catch-all, registered last: a JSON 404 for any unknown path and method."""

    auth_required = False

    async def prepare(self) -> None:
        raise APIError("not_found", "there is no such resource")
