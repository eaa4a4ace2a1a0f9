"""Every error code the API returns: status, title and meaning.

The one table behind the `type`/`title` of problem bodies and the console's problems page.
"""

from __future__ import annotations

PROBLEMS: dict[str, tuple[int, str, str]] = {
    "invalid_request": (
        400,
        "Invalid request",
        "The request is malformed: bad JSON, a body or query parameter that "
        "breaks the schema, or an unknown field or parameter. `errors` points "
        "at each offending location.",
    ),
    "invalid_cursor": (
        400,
        "Invalid cursor",
        "The `cursor` parameter is not a cursor this API gave your workspace: it "
        "was altered or truncated, is malformed, or was made with another "
        "workspace's key. Start the walk again without a cursor.",
    ),
    "unauthorized": (
        401,
        "Unauthorized",
        "The Authorization header is missing or is not `Bearer <API key>`, or the "
        "key is unknown, revoked or expired (the `detail` says when it expired; ask "
        "your workspace's operator for a new key).",
    ),
    "insufficient_scope": (
        403,
        "Insufficient scope",
        "The API key is valid but its scopes do not allow this request: `read` "
        "allows every GET and HEAD, `write` the integrator's writes (lists, "
        "contact uploads, webhook endpoints), `ingest` the dialer's writes (calls, "
        "activities). The `WWW-Authenticate` header names the scope needed "
        '(`Bearer error="insufficient_scope", scope="write"`). Nothing was '
        "changed; the request counted against the rate limit. Use a key with "
        "that scope.",
    ),
    "invalid_signature": (
        403,
        "Invalid signature",
        "A provider callback without a valid X-Twilio-Signature for this URL and these "
        "parameters, from another provider account, or for no workspace of this service. "
        "Nothing was written.",
    ),
    "not_found": (
        404,
        "Not found",
        "The resource does not exist in your workspace (ids of other workspaces "
        "behave exactly like ids that do not exist), or there is no such route.",
    ),
    "method_not_allowed": (
        405,
        "Method not allowed",
        "The route exists but not with this method; see the Allow header.",
    ),
    "events_expired": (
        410,
        "Events expired",
        "The `cursor` or `since` of GET /events is older than the events are kept "
        "(`event_retention_days`, default 30): events after it may have been removed. Note the "
        "current time, resync your records with `sort=updatedAt`, then restart the feed with "
        "`since=<that time>`. For POST /webhook-endpoints/{id}/recover: `since` is older than "
        "that; recover from a later instant.",
    ),
    "sync_expired": (
        410,
        "Sync expired",
        "With `includeDeleted=true`, the `cursor` or `updatedSince` of a `sort=updatedAt` walk "
        "is older than tombstones are kept (`tombstone_retention_days`, default 30): a deletion "
        "after it may be gone from the walk. Start a full resync: walk again without "
        "`updatedSince` and remove the records the walk no longer returns.",
    ),
    "erased": (
        410,
        "Erased",
        "A retry with an `Idempotency-Key` whose first answer carried a person who has since been "
        "erased (POST /erasures): the stored answer is gone, and the request is not done again. "
        "Nothing was written.",
    ),
    "payload_too_large": (413, "Payload too large", "The request body exceeds the size limit."),
    "unsupported_media_type": (
        415,
        "Unsupported media type",
        "A request body must be sent as Content-Type: application/json (a provider callback: "
        "application/x-www-form-urlencoded).",
    ),
    "range_not_satisfiable": (
        416,
        "Range not satisfiable",
        "The Range header is invalid or outside the recording; "
        "Content-Range gives the length when it is known.",
    ),
    "invalid_reference": (
        422,
        "Invalid reference",
        "A body field or query parameter is well-formed but refers to "
        "something that cannot be used: an ownerUserId or userId that is "
        "unknown, deleted, or of another workspace, a prospectId, listId or "
        "callId that is not a record of your workspace, or an email or phoneNumber "
        "selector that matches several prospects (select by prospectId "
        "instead). `errors` points at the offending field or parameter.",
    ),
    "invalid_webhook_url": (
        422,
        "Invalid webhook URL",
        "The webhook endpoint's `url` cannot be used: it must be an absolute `https` URL whose "
        "host resolves only to public addresses (loopback, private, link-local, shared and "
        "reserved ranges are refused, unless the operator allowed them with "
        "`webhook_allowed_networks`, where `http` is accepted too). The detail names the rule.",
    ),
    "call_exists": (
        409,
        "Call exists",
        "A call with this providerCallSid is recorded in your workspace already, with other "
        "content. `callId` is that call's id: change it with PATCH /calls/{id}. Posting the "
        "same content again is not an error (200 with the call).",
    ),
    "user_exists": (
        409,
        "User exists",
        "Another non-deleted user of your workspace has this email (emails are compared "
        "trimmed and case-insensitively). A deleted user's email may be taken again.",
    ),
    "prospect_exists": (
        409,
        "Prospect exists",
        "The email, phone number or LinkedIn URL a PATCH of a prospect gives are those another "
        "prospect of your workspace was created under: that prospect is the person. `errors` "
        "points at the fields; change or delete the other prospect instead.",
    ),
    "idempotency_key_in_use": (
        409,
        "Idempotency key in use",
        "A request with this Idempotency-Key is still being processed; "
        "retry after Retry-After seconds to get its response.",
    ),
    "idempotency_key_reused": (
        422,
        "Idempotency key reused",
        "This Idempotency-Key was used in the last 24 hours for a "
        "request with another method, path or body; use a new key for "
        "a new request.",
    ),
    "rate_limited": (
        429,
        "Too many requests",
        "The workspace's rate limit is used up; retry after Retry-After seconds.",
    ),
    "too_many_streams": (
        429,
        "Too many streams",
        "The workspace already has as many streamed responses (recordings, "
        "activity timelines and exports) open as it may; retry after Retry-After seconds, "
        "or when one of them ends.",
    ),
    "internal_error": (
        500,
        "Internal error",
        "An unexpected error on our side. Quote the requestId when reporting it.",
    ),
    "upstream_error": (
        502,
        "Upstream provider failure",
        "The telephony provider failed to deliver the recording.",
    ),
    "service_unavailable": (
        503,
        "Service unavailable",
        "The database is not available right now (unreachable, busy, out of disk space or "
        "damaged); retry after Retry-After seconds.",
    ),
}

# The generic code of each status (the first listed), for errors raised without one.
CODE_FOR_STATUS: dict[int, str] = {}
for _code, (_status, _, _) in PROBLEMS.items():
    CODE_FOR_STATUS.setdefault(_status, _code)


def problem_type(code: str) -> str:
    return f"/reference/problems#{code}"
