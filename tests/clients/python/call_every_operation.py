"""Calls every operation of the Workspace Data API through the Python client that
openapi-python-client generates from /v1/openapi.json, reading every field of every response
through its generated, typed attribute. Type-checked with `mypy --strict` and run against a live
demo by tests/e2e/test_generated_clients.py.

Usage: python call_every_operation.py BASE_URL API_KEY OUTPUT_DIR INGEST_KEY WORKSPACE_ID
    PROVIDER_ACCOUNT_SID PROVIDER_AUTH_TOKEN
(the provider's credentials sign its callbacks; BASE_URL is the service's public_base_url)
Prints a JSON report: {"called": {operationId: status}, "untyped": [...], "recording": path, ...}.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import json
import re
import sys
import time
import uuid
from itertools import pairwise
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlsplit

import attrs
from workspace_api_client import AuthenticatedClient, Client
from workspace_api_client.api.api_key import get_api_key, get_api_key_head
from workspace_api_client.api.calls import (
    change_call,
    get_call,
    get_call_head,
    get_call_recording,
    get_call_recording_head,
    list_calls,
    list_calls_head,
    record_call,
    record_calls,
)
from workspace_api_client.api.calls_from_the_provider import (
    list_pending_calls,
    list_pending_calls_head,
    receive_provider_recording_callback,
    receive_provider_status_callback,
    resolve_pending_call,
)
from workspace_api_client.api.dialer_lists import (
    create_list,
    delete_list,
    get_list,
    get_list_head,
    list_lists,
    list_lists_head,
    remove_contacts,
    update_list,
    upload_contacts,
)
from workspace_api_client.api.do_not_call import (
    add_do_not_call,
    list_do_not_call,
    list_do_not_call_head,
    remove_do_not_call,
)
from workspace_api_client.api.erasure import (
    create_erasure,
    get_erasure,
    get_erasure_head,
    list_erasures,
    list_erasures_head,
)
from workspace_api_client.api.events import list_events, list_events_head
from workspace_api_client.api.exports import (
    export_activities,
    export_activities_head,
    export_calls,
    export_calls_head,
    export_lists,
    export_lists_head,
    export_prospects,
    export_prospects_head,
)
from workspace_api_client.api.prospects import (
    delete_prospect,
    get_prospect,
    get_prospect_activities,
    get_prospect_activities_head,
    get_prospect_head,
    list_prospects,
    list_prospects_head,
    log_activity,
    update_prospect,
)
from workspace_api_client.api.reference import get_open_api, get_open_api_head
from workspace_api_client.api.reporting import get_dialer_metrics, get_dialer_metrics_head
from workspace_api_client.api.service import (
    get_liveness,
    get_liveness_head,
    get_readiness,
    get_readiness_head,
)
from workspace_api_client.api.users import (
    create_user,
    delete_user,
    get_user,
    get_user_head,
    list_users,
    list_users_head,
    update_user,
)
from workspace_api_client.api.webhooks import (
    create_webhook_endpoint,
    delete_webhook_endpoint,
    get_webhook_endpoint,
    get_webhook_endpoint_head,
    list_webhook_deliveries,
    list_webhook_deliveries_head,
    list_webhook_endpoints,
    list_webhook_endpoints_head,
    recover_webhook_deliveries,
    rotate_webhook_endpoint_secret,
    update_webhook_endpoint,
)
from workspace_api_client.models import (
    ActivityCreatedEvent,
    AddToTheDoNotCallList,
    AddToTheDoNotCallListEntriesItem,
    APIKey,
    APIKeyScopesItem,
    Call,
    CallActivity,
    CallCreatedEvent,
    CallDirection,
    CallDisposition,
    CallOutcomeOutcome,
    CallUpdatedEvent,
    ChangeACall,
    ChangeList,
    ChangeProspect,
    ChangeUser,
    ChangeWebhookEndpoint,
    ChangeWebhookEndpointEventTypesType0Item,
    ChangeWebhookEndpointStatus,
    Contact,
    CreateList,
    CreateUser,
    CreateWebhookEndpoint,
    CreateWebhookEndpointEventTypesType0Item,
    DialerList,
    DialerListCreatedEvent,
    DialerListDeletedEvent,
    DialerListUpdatedEvent,
    DialerMetrics,
    DialerMetricsReportDialerMetricsOfOneDay,
    DialerMetricsReportDialerMetricsOfOneUser,
    DoNotCallEntriesAddedResultsItemOutcome,
    DoNotCallEntry,
    DoNotCallEntryAddedEvent,
    DoNotCallEntryRemovedEvent,
    DoNotCallReason,
    EmailActivity,
    ErasedRecord,
    Erasure,
    ErasureCompletedEvent,
    ErasureStatus,
    ListAddedActivity,
    ListRemovedActivity,
    LogANote,
    LogANoteNoteDetails,
    MeetingBookedActivity,
    NoteActivity,
    PageOfDeliveryAttempts,
    PageSize,
    PendingCallReason,
    PendingCalls,
    Problem,
    ProblemCode,
    Prospect,
    ProspectCreatedEvent,
    ProspectDeletedEvent,
    ProspectMatchOutcome,
    ProspectUpdatedEvent,
    ProviderRecordingCallback,
    ProviderStatusCallback,
    RecordACall,
    RecordCalls,
    RecoverWebhookDeliveries,
    RemoveContacts,
    RequestAnErasure,
    ResolveAPendingCall,
    Sort,
    StatusChangeActivity,
    UploadContacts,
    User,
    UserCreatedEvent,
    UserDeletedEvent,
    UserUpdatedEvent,
    WebhookDeliveryAttempt,
    WebhookEndpoint,
    WebhookEndpointWithItsSecret,
)
from workspace_api_client.types import UNSET, File, Response, Unset

T = TypeVar("T")
called: dict[str, int] = {}
untyped: list[str] = []


def expect(operation_id: str, response: Response[T | Problem], status: int) -> T:
    """The typed body of a successful response (and a record of the call)."""
    called[operation_id] = response.status_code
    assert response.status_code == status, (operation_id, response.status_code, response.content)
    parsed = response.parsed
    assert parsed is not None and not isinstance(parsed, Problem), (operation_id, parsed)
    find_untyped(parsed, operation_id)
    return parsed


def expect_problem(operation_id: str, response: Response[T | Problem], status: int) -> Problem:
    called.setdefault(operation_id, response.status_code)
    assert response.status_code == status, (operation_id, response.status_code)
    problem = response.parsed
    assert isinstance(problem, Problem), (operation_id, problem)
    assert problem.status == status and problem.request_id == response.headers["x-request-id"]
    assert problem.type_ == f"/reference/problems#{problem.code.value}"
    assert problem.title and problem.detail
    find_untyped(problem, operation_id)
    return problem


def expect_head(operation_id: str, response: Response[Any], status: int = 200) -> None:
    called[operation_id] = response.status_code
    assert response.status_code == status, (operation_id, response.status_code)
    assert response.content == b"" and response.headers["x-request-id"]


def find_untyped(value: object, where: str) -> None:
    """Fields that arrived in a generated model's additional_properties (untyped)."""
    cls = type(value)
    if isinstance(value, list):
        for i, item in enumerate(value):
            find_untyped(item, f"{where}[{i}]")
    elif attrs.has(cls):
        extra = getattr(value, "additional_properties", {})
        if extra and not where.startswith("getOpenApi"):  # the document is open by nature
            untyped.append(f"{where}: {sorted(extra)}")
        for field in attrs.fields(cls):
            if field.name != "additional_properties":
                find_untyped(getattr(value, field.name), f"{where}.{field.name}")


def export_lines(operation_id: str, response: Response[File | Problem]) -> list[dict[str, Any]]:
    """The records of an export (NDJSON, gzip-decoded by httpx): one JSON object per line."""
    body = expect(operation_id, response, 200)
    assert isinstance(body, File), (operation_id, body)
    assert response.headers["content-type"] == "application/x-ndjson"
    data = body.payload.read()
    assert data == b"" or data.endswith(b"\n"), operation_id
    return [json.loads(line) for line in data.splitlines()]


def activity_of(
    line: dict[str, Any],
) -> (
    CallActivity
    | NoteActivity
    | EmailActivity
    | ListAddedActivity
    | ListRemovedActivity
    | MeetingBookedActivity
    | StatusChangeActivity
):
    """An exported activity as the model of its type (the line's discriminator)."""
    kind = line["type"]
    if kind == "call":
        return CallActivity.from_dict(line)
    if kind == "note":
        return NoteActivity.from_dict(line)
    if kind == "email":
        return EmailActivity.from_dict(line)
    if kind == "list_added":
        return ListAddedActivity.from_dict(line)
    if kind == "list_removed":
        return ListRemovedActivity.from_dict(line)
    if kind == "meeting_booked":
        return MeetingBookedActivity.from_dict(line)
    assert kind == "status_change", kind
    return StatusChangeActivity.from_dict(line)


# --- every field through its typed attribute ----------------------------------------------


def read_user(user: User) -> str:
    assert isinstance(user.id, uuid.UUID) and isinstance(user.created_at, dt.datetime)
    assert user.created_at <= user.updated_at
    deleted = user.deleted_at
    assert not isinstance(deleted, dt.datetime) or deleted >= user.created_at
    return f"{user.first_name} {user.last_name} <{user.email}>"


def read_api_key(key: APIKey) -> list[str]:
    assert isinstance(key.id, uuid.UUID) and isinstance(key.created_at, dt.datetime)
    assert key.name and (key.expires_at is None or isinstance(key.expires_at, dt.datetime))
    assert all(isinstance(scope, APIKeyScopesItem) for scope in key.scopes)
    return [scope.value for scope in key.scopes]


def read_list(item: DialerList) -> None:
    assert isinstance(item.id, uuid.UUID) and isinstance(item.owner_user_id, uuid.UUID)
    assert item.name.strip() and item.source and item.prospects_count >= 0
    assert item.created_at <= item.updated_at


def read_call(call: Call) -> None:
    assert isinstance(call.id, uuid.UUID) and isinstance(call.user_id, uuid.UUID)
    erased = isinstance(call.erased_at, dt.datetime)  # a call of an erased person: nulls
    assert erased or isinstance(call.prospect_id, uuid.UUID)
    assert call.list_id is None or isinstance(call.list_id, uuid.UUID)
    assert call.direction in CallDirection and call.disposition.value
    assert (call.from_number or "+").startswith("+") and (call.to_number or "+").startswith("+")
    assert call.started_at == call.created_at <= call.ended_at <= call.updated_at
    if call.answered_at is not None:
        assert call.started_at <= call.answered_at <= call.ended_at
    assert call.duration_seconds >= 0
    assert (call.recording_duration_seconds is not None) == call.has_recording
    assert isinstance(call.meeting_booked, bool) and isinstance(call.to_number_suppressed, bool)
    assert call.notes is None or isinstance(call.notes, str)


def read_prospect(prospect: Prospect) -> None:
    assert isinstance(prospect.id, uuid.UUID)
    contact = [
        prospect.first_name,
        prospect.last_name,
        prospect.phone_number,
        prospect.email,
        prospect.company_name,
        prospect.company_domain,
        prospect.job_title,
        prospect.linkedin_url,
    ]
    assert all(value is None or isinstance(value, str) for value in contact)
    assert prospect.owner_user_id is None or isinstance(prospect.owner_user_id, uuid.UUID)
    assert all(isinstance(list_id, uuid.UUID) for list_id in prospect.list_ids)
    assert prospect.created_at <= prospect.updated_at
    reason = prospect.do_not_call_reason
    assert prospect.do_not_call is (reason is not None)
    assert reason is None or isinstance(reason, DoNotCallReason)


def read_entry(entry: DoNotCallEntry) -> str:
    assert isinstance(entry.id, uuid.UUID) and isinstance(entry.created_at, dt.datetime)
    assert entry.reason is None or isinstance(entry.reason, str)
    phone, email = entry.phone_number, entry.email
    assert isinstance(phone, Unset) != isinstance(email, Unset)  # exactly one of them
    return phone if isinstance(phone, str) else str(email)


def read_metrics(
    row: DialerMetrics
    | DialerMetricsReportDialerMetricsOfOneDay
    | DialerMetricsReportDialerMetricsOfOneUser,
) -> int:
    assert 0 <= row.connects <= row.dials and 0 <= row.conversations <= row.connects
    for rate in (row.connect_rate, row.conversation_rate, row.meeting_rate):
        assert 0 <= rate <= 1
    assert row.meetings_booked >= 0 and row.voicemails >= 0
    assert row.talk_time_seconds >= 0 and row.average_talk_time_seconds >= 0
    assert 0 <= row.calls_to_suppressed_numbers <= row.dials
    return row.dials


def read_activity(
    activity: CallActivity
    | NoteActivity
    | EmailActivity
    | ListAddedActivity
    | ListRemovedActivity
    | MeetingBookedActivity
    | StatusChangeActivity,
) -> str:
    assert isinstance(activity.id, uuid.UUID) and activity.summary
    assert isinstance(activity.occurred_at, dt.datetime)
    assert activity.user_id is None or isinstance(activity.user_id, uuid.UUID)
    if isinstance(activity, CallActivity):
        assert isinstance(activity.call_id, uuid.UUID)
        details = activity.details
        assert details.duration_seconds >= 0 and details.direction.value
        assert details.disposition.value
    elif isinstance(activity, NoteActivity):
        assert isinstance(activity.details.text, str)
    elif isinstance(activity, EmailActivity):
        assert activity.details.direction.value in ("inbound", "outbound")
        assert isinstance(activity.details.subject, str)
    elif isinstance(activity, (ListAddedActivity, ListRemovedActivity)):
        assert isinstance(activity.details.list_id, uuid.UUID)
        assert activity.details.list_name is None or activity.details.list_name
    elif isinstance(activity, MeetingBookedActivity):
        scheduled = activity.details.scheduled_for
        assert scheduled is None or isinstance(scheduled, dt.datetime)
    else:
        assert activity.details.from_ is None or activity.details.from_
        assert activity.details.to
    return activity.type_


Event = (
    CallCreatedEvent
    | CallUpdatedEvent
    | ProspectCreatedEvent
    | ProspectUpdatedEvent
    | ProspectDeletedEvent
    | DialerListCreatedEvent
    | DialerListUpdatedEvent
    | ActivityCreatedEvent
    | ErasureCompletedEvent
    | UserCreatedEvent
    | UserUpdatedEvent
    | UserDeletedEvent
    | DialerListDeletedEvent
    | DoNotCallEntryAddedEvent
    | DoNotCallEntryRemovedEvent
)


def read_event(event: Event) -> str:
    assert isinstance(event.id, uuid.UUID) and event.id.version == 7
    assert isinstance(event.occurred_at, dt.datetime)
    if isinstance(event, CallCreatedEvent | CallUpdatedEvent):
        read_call(event.data)
    elif isinstance(event, ProspectCreatedEvent | ProspectUpdatedEvent):
        if isinstance(event.data, ErasedRecord):
            assert isinstance(event.data.id, uuid.UUID) and event.data.erased is True
        else:
            read_prospect(event.data)
    elif isinstance(event, ErasureCompletedEvent):
        assert isinstance(event.data.id, uuid.UUID)
        assert all(isinstance(i, uuid.UUID) for i in event.data.prospect_ids + event.data.call_ids)
    elif isinstance(event, DialerListCreatedEvent | DialerListUpdatedEvent):
        read_list(event.data)
    elif isinstance(event, UserCreatedEvent | UserUpdatedEvent):
        read_user(event.data)
    elif isinstance(event, UserDeletedEvent | DialerListDeletedEvent | ProspectDeletedEvent):
        assert isinstance(event.data.id, uuid.UUID)
        assert isinstance(event.data.deleted_at, dt.datetime)
    elif isinstance(event, DoNotCallEntryAddedEvent | DoNotCallEntryRemovedEvent):
        read_entry(event.data)
    elif isinstance(event.data, ErasedRecord):
        assert isinstance(event.data.id, uuid.UUID) and event.data.erased is True
    else:
        read_activity(event.data)
        assert isinstance(event.data.prospect_id, uuid.UUID)
    return event.type_


def follow_events(api: AuthenticatedClient, wanted: set[str]) -> list[Event]:
    """The feed by its cursors until events of every `wanted` type have settled (30 s)."""
    deadline, cursor = time.monotonic() + 30, None
    events: list[Event] = []
    while not wanted <= {event.type_ for event in events}:
        assert time.monotonic() < deadline, [event.type_ for event in events]
        page = expect(
            "listEvents",
            list_events.sync_detailed(client=api, page_size=100, cursor=cursor or UNSET),
            200,
        )
        events += page.events
        assert isinstance(page.next_cursor, str) and 1 <= page.page_size <= 100
        cursor = page.next_cursor
        if not page.has_more:
            time.sleep(0.5)
    return events


# --- webhook endpoints ----------------------------------------------------------------------

# The demo allows 127.0.0.0/8; nothing listens on the discard port, so every attempt fails.
HOOK_URL = "http://127.0.0.1:9/hook"
HOOK_TYPES = ["activity.created", "list.created", "prospect.created"]  # the run's own writes
SECRET = re.compile(r"whsec_[A-Za-z0-9+/]{43}=")


def read_secret(secret: str) -> str:
    """A Standard Webhooks secret: whsec_ + base64 of 32 bytes."""
    assert SECRET.fullmatch(secret), secret
    assert len(base64.b64decode(secret.removeprefix("whsec_"), validate=True)) == 32
    return secret


def read_endpoint(endpoint: WebhookEndpoint | WebhookEndpointWithItsSecret) -> dict[str, Any]:
    """The endpoint's fields (its secret, if any, left out), each read through its attribute."""
    assert isinstance(endpoint.id, uuid.UUID) and endpoint.url == HOOK_URL
    types = None if endpoint.event_types is None else [t.value for t in endpoint.event_types]
    assert types is None or types == sorted(types)
    assert endpoint.description is None or isinstance(endpoint.description, str)
    enabled = endpoint.status == "enabled"
    assert endpoint.status in ("enabled", "disabled")
    assert (endpoint.disabled_reason is None) == (endpoint.disabled_at is None) == enabled
    assert endpoint.disabled_at is None or isinstance(endpoint.disabled_at, dt.datetime)
    assert endpoint.created_at <= endpoint.updated_at
    return {
        "id": endpoint.id,
        "url": endpoint.url,
        "eventTypes": types,
        "description": endpoint.description,
        "status": endpoint.status.value,
        "disabledReason": endpoint.disabled_reason,
        "disabledAt": endpoint.disabled_at,
        "createdAt": endpoint.created_at,
        "updatedAt": endpoint.updated_at,
    }


def read_attempt(attempt: WebhookDeliveryAttempt) -> None:
    """A failed attempt (nothing listens at HOOK_URL): no status code, a short error."""
    assert isinstance(attempt.event_id, uuid.UUID) and attempt.event_id.version == 7
    assert attempt.event_type in HOOK_TYPES and attempt.attempt >= 1
    assert isinstance(attempt.at, dt.datetime) and attempt.duration_ms >= 0
    assert attempt.status_code is None and attempt.error, attempt
    assert attempt.next_attempt_at is None or attempt.next_attempt_at > attempt.at


def unchanged(endpoint: dict[str, Any]) -> dict[str, Any]:
    """The fields that enabling or disabling an endpoint leaves as they are."""
    return {k: endpoint[k] for k in ("id", "url", "eventTypes", "description", "createdAt")}


def without_secret(response: Response[Any], *secrets: str) -> None:
    """A response that is not a creation or a rotation shows no secret."""
    assert b'"secret"' not in response.content, response.content
    assert not any(secret.encode() in response.content for secret in secrets)


def new_webhook_endpoint(api: AuthenticatedClient) -> WebhookEndpointWithItsSecret:
    """An endpoint for the run's own writes, made before them (it gets the events after now)."""
    refused = CreateWebhookEndpoint(url="https://10.1.2.3/hook")  # private, not allowed
    problem = expect_problem(
        "createWebhookEndpoint",
        create_webhook_endpoint.sync_detailed(client=api, body=refused),
        422,
    )
    assert problem.code == ProblemCode.INVALID_WEBHOOK_URL
    assert not isinstance(problem.errors, Unset) and problem.errors[0].pointer == "#/url"
    body = CreateWebhookEndpoint(
        url=HOOK_URL,
        event_types=[CreateWebhookEndpointEventTypesType0Item(t) for t in reversed(HOOK_TYPES)],
        description="Generated Python client",
    )
    response = create_webhook_endpoint.sync_detailed(client=api, body=body)
    created = expect("createWebhookEndpoint", response, 201).webhook_endpoint
    assert read_endpoint(created)["eventTypes"] == HOOK_TYPES  # one spelling: sorted
    assert created.status == "enabled" and created.description == "Generated Python client"
    assert response.headers["location"].endswith(f"/v1/webhook-endpoints/{created.id}")
    read_secret(created.secret)
    return created


def read_attempts(api: AuthenticatedClient, endpoint_id: uuid.UUID, secret: str) -> None:
    """The endpoint's attempts once there are at least two (30 s), by their cursors, one a page."""
    deadline = time.monotonic() + 30
    while True:
        response = list_webhook_deliveries.sync_detailed(endpoint_id, client=api, page_size=100)
        page = expect("listWebhookDeliveries", response, 200)
        without_secret(response, secret)
        assert page.page_size == 100
        newest_first = all(newer.at >= older.at for newer, older in pairwise(page.deliveries))
        assert newest_first, page.deliveries
        if len(page.deliveries) >= 2:
            break
        assert time.monotonic() < deadline, page.deliveries
        time.sleep(0.5)
    for attempt in page.deliveries:
        read_attempt(attempt)
    first = expect(
        "listWebhookDeliveries",
        list_webhook_deliveries.sync_detailed(endpoint_id, client=api, page_size=1),
        200,
    )
    assert len(first.deliveries) == 1 and first.has_more and isinstance(first.next_cursor, str)
    second: PageOfDeliveryAttempts = expect(
        "listWebhookDeliveries",
        list_webhook_deliveries.sync_detailed(
            endpoint_id, client=api, page_size=1, cursor=first.next_cursor
        ),
        200,
    )
    assert len(second.deliveries) == 1 and second.page_size == 1
    assert second.deliveries[0] != first.deliveries[0]
    assert second.deliveries[0].at <= first.deliveries[0].at
    foreign = expect_problem(
        "listWebhookDeliveries",
        list_webhook_deliveries.sync_detailed(endpoint_id, client=api, cursor="not-a-cursor"),
        400,
    )
    assert foreign.code == ProblemCode.INVALID_CURSOR


def exercise_webhook_endpoint(
    api: AuthenticatedClient, created: WebhookEndpointWithItsSecret
) -> None:
    """Read, list, change, rotate, page the attempts of, recover and delete the endpoint."""
    endpoint_id, secret = created.id, created.secret
    as_created = read_endpoint(created)

    response = get_webhook_endpoint.sync_detailed(endpoint_id, client=api)
    fetched = expect("getWebhookEndpoint", response, 200).webhook_endpoint
    without_secret(response, secret)
    assert read_endpoint(fetched) == as_created
    expect_head(
        "getWebhookEndpointHead", get_webhook_endpoint_head.sync_detailed(endpoint_id, client=api)
    )
    missing = get_webhook_endpoint.sync_detailed(uuid.uuid4(), client=api)
    assert expect_problem("getWebhookEndpoint", missing, 404).code == ProblemCode.NOT_FOUND

    every = list_webhook_endpoints.sync_detailed(client=api)
    listed = expect("listWebhookEndpoints", every, 200).webhook_endpoints
    without_secret(every, secret)
    assert [read_endpoint(e) for e in listed if e.id == endpoint_id] == [as_created]
    assert all(e.url != "https://10.1.2.3/hook" for e in listed)  # the refused one is not kept
    expect_head("listWebhookEndpointsHead", list_webhook_endpoints_head.sync_detailed(client=api))

    read_attempts(api, endpoint_id, secret)  # the run's writes, failing at HOOK_URL
    expect_head(
        "listWebhookDeliveriesHead",
        list_webhook_deliveries_head.sync_detailed(endpoint_id, client=api, page_size=1),
    )

    changes = ChangeWebhookEndpoint(
        description="Changed by the Python client",
        event_types=[
            ChangeWebhookEndpointEventTypesType0Item.LIST_UPDATED,
            ChangeWebhookEndpointEventTypesType0Item.LIST_CREATED,
        ],
        status=ChangeWebhookEndpointStatus.DISABLED,
    )
    response = update_webhook_endpoint.sync_detailed(endpoint_id, client=api, body=changes)
    disabled = expect("updateWebhookEndpoint", response, 200).webhook_endpoint
    without_secret(response, secret)
    assert read_endpoint(disabled)["eventTypes"] == ["list.created", "list.updated"]
    assert disabled.description == "Changed by the Python client"
    assert disabled.status == "disabled" and disabled.disabled_at is not None
    assert disabled.disabled_reason == "disabled through the API"
    enable = ChangeWebhookEndpoint(status=ChangeWebhookEndpointStatus.ENABLED)
    response = update_webhook_endpoint.sync_detailed(endpoint_id, client=api, body=enable)
    enabled = expect("updateWebhookEndpoint", response, 200).webhook_endpoint
    without_secret(response, secret)
    assert unchanged(read_endpoint(enabled)) == unchanged(read_endpoint(disabled))
    assert enabled.status == "enabled" and enabled.updated_at >= disabled.updated_at

    rotation = rotate_webhook_endpoint_secret.sync_detailed(endpoint_id, client=api)
    rotated = expect("rotateWebhookEndpointSecret", rotation, 200).webhook_endpoint
    assert read_secret(rotated.secret) != secret
    assert read_endpoint(rotated) == read_endpoint(enabled) | {"updatedAt": rotated.updated_at}
    response = get_webhook_endpoint.sync_detailed(endpoint_id, client=api)
    expect("getWebhookEndpoint", response, 200)
    without_secret(response, secret, rotated.secret)

    # Deliver the events since the endpoint was disabled again (in the background: 202).
    assert disabled.disabled_at is not None
    since = RecoverWebhookDeliveries(since=disabled.disabled_at.isoformat())
    accepted = recover_webhook_deliveries.sync_detailed(endpoint_id, client=api, body=since)
    recovery = expect("recoverWebhookDeliveries", accepted, 202).recovery
    assert (recovery.endpoint_id, recovery.since) == (endpoint_id, disabled.disabled_at)
    expired = RecoverWebhookDeliveries(since="2000-01-01T00:00:00Z")
    too_old = recover_webhook_deliveries.sync_detailed(endpoint_id, client=api, body=expired)
    assert expect_problem("recoverWebhookDeliveries", too_old, 410).code == (
        ProblemCode.EVENTS_EXPIRED
    )

    deleted = delete_webhook_endpoint.sync_detailed(endpoint_id, client=api)
    called["deleteWebhookEndpoint"] = deleted.status_code
    assert deleted.status_code == 204 and deleted.content == b"", deleted.content
    gone = get_webhook_endpoint.sync_detailed(endpoint_id, client=api)
    assert expect_problem("getWebhookEndpoint", gone, 404).code == ProblemCode.NOT_FOUND
    again = delete_webhook_endpoint.sync_detailed(endpoint_id, client=api)
    assert expect_problem("deleteWebhookEndpoint", again, 404).code == ProblemCode.NOT_FOUND
    listed = expect(
        "listWebhookEndpoints", list_webhook_endpoints.sync_detailed(client=api), 200
    ).webhook_endpoints
    assert endpoint_id not in {e.id for e in listed}


# --- users --------------------------------------------------------------------------------


def exercise_users(base_url: str, admin_key: str, api: AuthenticatedClient) -> None:
    """The users' writes with a key of the `admin` scope: create (a taken email: 409), read,
    change, delete (then still readable, with deletedAt); the full key (read, write) is 403."""
    admin = AuthenticatedClient(base_url=base_url, token=admin_key)
    described = expect("getApiKey", get_api_key.sync_detailed(client=admin), 200).api_key
    assert read_api_key(described) == ["read", "write", "admin"]
    body = CreateUser(
        email="grace.hopper@python.generated.example", first_name="Grace", last_name="H"
    )
    refused = create_user.sync_detailed(client=api, body=body)
    assert expect_problem("createUser", refused, 403).code == ProblemCode.INSUFFICIENT_SCOPE
    response = create_user.sync_detailed(client=admin, body=body)
    created = expect("createUser", response, 201).user
    read_user(created)
    assert created.deleted_at is None and response.headers["location"].endswith(str(created.id))
    taken = CreateUser(email="GRACE.Hopper@python.generated.example", first_name="G", last_name="H")
    conflict = create_user.sync_detailed(client=admin, body=taken)
    assert expect_problem("createUser", conflict, 409).code == ProblemCode.USER_EXISTS
    fetched = expect("getUser", get_user.sync_detailed(created.id, client=api), 200).user
    assert fetched == created
    expect_head("getUserHead", get_user_head.sync_detailed(created.id, client=api))
    change = ChangeUser(last_name="Hopper")
    response = update_user.sync_detailed(created.id, client=admin, body=change)
    changed = expect("updateUser", response, 200).user
    read_user(changed)
    assert changed.last_name == "Hopper" and changed.updated_at > created.updated_at
    deleted = delete_user.sync_detailed(created.id, client=admin)
    called["deleteUser"] = deleted.status_code
    assert deleted.status_code == 204 and deleted.content == b"", deleted.content
    gone = expect("getUser", get_user.sync_detailed(created.id, client=api), 200).user
    read_user(gone)
    assert isinstance(gone.deleted_at, dt.datetime)
    listed = expect("listUsers", list_users.sync_detailed(client=api), 200).users
    assert created.id not in {user.id for user in listed}
    missing = delete_user.sync_detailed(uuid.uuid4(), client=admin)
    assert expect_problem("deleteUser", missing, 404).code == ProblemCode.NOT_FOUND


# --- erasure ---------------------------------------------------------------------------------


def read_erasure(erasure: Erasure) -> str:
    assert isinstance(erasure.id, uuid.UUID) and isinstance(erasure.requested_at, dt.datetime)
    assert isinstance(erasure.status, ErasureStatus)
    done = erasure.completed_at
    assert done is None or (isinstance(done, dt.datetime) and done >= erasure.requested_at)
    assert erasure.reason is None or isinstance(erasure.reason, str)
    counts = erasure.counts
    assert min(counts.prospects, counts.activities, counts.calls) >= 0
    assert min(counts.recordings, counts.events) >= 0
    return erasure.status.value


def exercise_erasures(base_url: str, admin_key: str, api: AuthenticatedClient) -> None:
    """Erasure requests with a key of the `admin` scope: request one (202, Location), read it
    and list it (never showing the identifier); an unreadable phone is 400; the full key (read,
    write) is 403."""
    admin = AuthenticatedClient(base_url=base_url, token=admin_key)
    body = RequestAnErasure(email="nobody.at.all@python.generated.example")
    refused = create_erasure.sync_detailed(client=api, body=body)
    assert expect_problem("createErasure", refused, 403).code == ProblemCode.INSUFFICIENT_SCOPE
    response = create_erasure.sync_detailed(client=admin, body=body)
    created = expect("createErasure", response, 202).erasure
    assert read_erasure(created) == "pending" and created.completed_at is None
    assert response.headers["location"] == f"/v1/erasures/{created.id}"
    assert b"python.generated" not in response.content
    unreadable = create_erasure.sync_detailed(
        client=admin, body=RequestAnErasure(phone_number="not a number")
    )
    assert expect_problem("createErasure", unreadable, 400).code == ProblemCode.INVALID_REQUEST
    fetched = expect("getErasure", get_erasure.sync_detailed(created.id, client=admin), 200)
    assert fetched.erasure.id == created.id and read_erasure(fetched.erasure)
    expect_head("getErasureHead", get_erasure_head.sync_detailed(created.id, client=admin))
    page = expect("listErasures", list_erasures.sync_detailed(client=admin), 200)
    assert page.erasures[0].id == created.id and page.has_more is False
    assert [read_erasure(e) for e in page.erasures] and page.next_cursor is None
    expect_head("listErasuresHead", list_erasures_head.sync_detailed(client=admin))
    missing = get_erasure.sync_detailed(uuid.uuid4(), client=admin)
    assert expect_problem("getErasure", missing, 404).code == ProblemCode.NOT_FOUND


# --- do not call ---------------------------------------------------------------------------


def exercise_do_not_call(api: AuthenticatedClient) -> None:
    """The suppression list: add (normalised; again: existing), list by cursor and look up,
    an unreadable number (400 with its pointer), remove (then 404)."""
    body = AddToTheDoNotCallList(
        entries=[
            AddToTheDoNotCallListEntriesItem(phone_number="(415) 555-0199"),
            AddToTheDoNotCallListEntriesItem(email="Opted.Out@Python.Generated.example"),
        ],
        reason="Opted out in the CRM",
    )
    added = expect("addDoNotCall", add_do_not_call.sync_detailed(client=api, body=body), 200)
    outcomes = [result.outcome for result in added.results]
    assert outcomes == [DoNotCallEntriesAddedResultsItemOutcome.ADDED] * 2
    phone, email = (read_entry(result.entry) for result in added.results)
    assert (phone, email) == ("+14155550199", "opted.out@python.generated.example")
    again = expect("addDoNotCall", add_do_not_call.sync_detailed(client=api, body=body), 200)
    assert [r.outcome.value for r in again.results] == ["existing", "existing"]
    page = expect("listDoNotCall", list_do_not_call.sync_detailed(client=api), 200)
    assert {read_entry(entry) for entry in page.entries} >= {phone, email}
    assert page.page_size.value == 50 and isinstance(page.has_more, bool)
    found = list_do_not_call.sync_detailed(client=api, phone_number="4155550199")
    assert [e.id for e in expect("listDoNotCall", found, 200).entries] == [
        added.results[0].entry.id
    ]
    expect_head("listDoNotCallHead", list_do_not_call_head.sync_detailed(client=api))
    unreadable = AddToTheDoNotCallList(
        entries=[AddToTheDoNotCallListEntriesItem(phone_number="not a number")]
    )
    refused = add_do_not_call.sync_detailed(client=api, body=unreadable)
    problem = expect_problem("addDoNotCall", refused, 400)
    assert not isinstance(problem.errors, Unset)
    assert problem.errors[0].pointer == "#/entries/0/phoneNumber"
    entry_id = added.results[1].entry.id
    removed = remove_do_not_call.sync_detailed(entry_id, client=api)
    called["removeDoNotCall"] = removed.status_code
    assert removed.status_code == 204 and removed.content == b"", removed.content
    gone = remove_do_not_call.sync_detailed(entry_id, client=api)
    assert expect_problem("removeDoNotCall", gone, 404).code == ProblemCode.NOT_FOUND


# --- prospects ----------------------------------------------------------------------------


def exercise_prospect(api: AuthenticatedClient, prospect_id: uuid.UUID) -> None:
    """One prospect read, corrected (a field set, one cleared), deleted (then 404, and 204
    again), and an unknown one's problems."""
    fetched = expect("getProspect", get_prospect.sync_detailed(prospect_id, client=api), 200)
    read_prospect(fetched.prospect)
    expect_head("getProspectHead", get_prospect_head.sync_detailed(prospect_id, client=api))
    change = ChangeProspect(job_title="Analyst", company_domain=None)
    response = update_prospect.sync_detailed(prospect_id, client=api, body=change)
    changed = expect("updateProspect", response, 200).prospect
    read_prospect(changed)
    assert changed.job_title == "Analyst" and changed.company_domain is None
    assert changed.updated_at > fetched.prospect.updated_at
    bad = ChangeProspect(phone_number="not a phone")
    refused = update_prospect.sync_detailed(prospect_id, client=api, body=bad)
    problem = expect_problem("updateProspect", refused, 400)
    assert not isinstance(problem.errors, Unset) and problem.errors[0].pointer == "#/phoneNumber"
    for attempt in range(2):  # deleted, then deleted already: 204 both times
        deleted = delete_prospect.sync_detailed(prospect_id, client=api)
        called["deleteProspect"] = deleted.status_code
        assert deleted.status_code == 204 and deleted.content == b"", (attempt, deleted.content)
    gone = expect_problem("getProspect", get_prospect.sync_detailed(prospect_id, client=api), 404)
    assert gone.code == ProblemCode.NOT_FOUND
    missing = delete_prospect.sync_detailed(uuid.uuid4(), client=api)
    assert expect_problem("deleteProspect", missing, 404).code == ProblemCode.NOT_FOUND


# --- the run ------------------------------------------------------------------------------


def dialer_writes(
    base_url: str, ingest_key: str, api: AuthenticatedClient, user: uuid.UUID
) -> None:
    """The dialer's operations, with a key of the `ingest` scope: a call by contact (its SID
    again: the same call; other content: 409), a batch, a recording attached later, a note."""
    dialer = AuthenticatedClient(base_url=base_url, token=ingest_key)
    described = expect("getApiKey", get_api_key.sync_detailed(client=dialer), 200).api_key
    assert read_api_key(described) == ["ingest"]
    started = dt.datetime.now(dt.UTC).replace(microsecond=0) - dt.timedelta(minutes=10)
    call = RecordACall(
        user_id=user,
        direction=CallDirection.OUTBOUND,
        disposition=CallDisposition.CONNECTED,
        from_number="+12125550100",
        to_number="(415) 555-0177",
        started_at=started,
        answered_at=started + dt.timedelta(seconds=10),
        ended_at=started + dt.timedelta(minutes=4),
        prospect=Contact(first_name="Grace", last_name="Hopper", email="grace@example.com"),
        provider_call_sid=f"CA{uuid.uuid4().hex}",
    )
    recorded = expect("recordCall", record_call.sync_detailed(client=dialer, body=call), 201)
    read_call(recorded.call)
    match = recorded.prospect_match
    assert not isinstance(match, Unset) and match.outcome == ProspectMatchOutcome.CREATED
    assert recorded.call.prospect_id == match.prospect_id
    assert recorded.call.to_number == "+14155550177" and not recorded.call.has_recording
    again = expect("recordCall", record_call.sync_detailed(client=dialer, body=call), 200)
    assert again.call == recorded.call
    other = attrs.evolve(call, notes="Other content")
    clash = expect_problem("recordCall", record_call.sync_detailed(client=dialer, body=other), 409)
    assert clash.code == ProblemCode.CALL_EXISTS and clash.call_id == recorded.call.id
    known = attrs.evolve(
        call, prospect=UNSET, prospect_id=match.prospect_id, provider_call_sid=UNSET
    )
    batch = RecordCalls(calls=[known, attrs.evolve(known, notes="Second")])
    results = expect("recordCalls", record_calls.sync_detailed(client=dialer, body=batch), 200)
    assert [(r.index, r.outcome) for r in results.results] == [
        (0, CallOutcomeOutcome.CREATED),
        (1, CallOutcomeOutcome.CREATED),
    ]
    change = ChangeACall(
        notes="Wants a demo", recording_sid=f"RE{uuid.uuid4().hex}", recording_duration_seconds=230
    )
    changed = expect(
        "changeCall", change_call.sync_detailed(recorded.call.id, client=dialer, body=change), 200
    ).call
    read_call(changed)
    assert changed.has_recording and changed.recording_duration_seconds == 230
    assert changed.notes == "Wants a demo" and changed.updated_at >= recorded.call.updated_at
    fetched = expect("getCall", get_call.sync_detailed(recorded.call.id, client=api), 200).call
    assert fetched == changed
    expect_head("getCallHead", get_call_head.sync_detailed(recorded.call.id, client=api))
    gone = expect_problem("getCall", get_call.sync_detailed(uuid.uuid4(), client=api), 404)
    assert gone.code == ProblemCode.NOT_FOUND
    note = LogANote(
        prospect_id=match.prospect_id,
        type_="note",
        occurred_at=started + dt.timedelta(minutes=5),
        details=LogANoteNoteDetails(text="Asked for pricing"),
        user_id=user,
    )
    logged = expect("logActivity", log_activity.sync_detailed(client=dialer, body=note), 201)
    assert read_activity(logged.activity) == "note"
    assert isinstance(logged.activity, NoteActivity)
    assert logged.activity.details.text == "Asked for pricing"


def provider_signature(token: str, url: str, params: dict[str, Any]) -> str:
    """X-Twilio-Signature: base64 HMAC-SHA1 of the URL and the sorted form parameters."""
    text = url + "".join(name + str(params[name]) for name in sorted(params))
    return base64.b64encode(hmac.new(token.encode(), text.encode(), hashlib.sha1).digest()).decode()


def expect_no_content(operation_id: str, response: Response[Any]) -> None:
    called[operation_id] = response.status_code
    assert response.status_code == 204, (operation_id, response.status_code, response.content)
    assert response.content == b""


def provider_callbacks(
    base_url: str,
    ingest_key: str,
    workspace: uuid.UUID,
    account_sid: str,
    auth_token: str,
    user: uuid.UUID,
) -> None:
    """The provider's signed callbacks of a call without a userId (kept aside, its recording
    held), a refused signature, the call listed as pending and resolved for a user."""
    provider = Client(base_url=base_url)
    dialer = AuthenticatedClient(base_url=base_url, token=ingest_key)
    sid = f"CA{uuid.uuid4().hex}"
    callbacks = f"{base_url}/v1/provider/callbacks/{workspace}"
    status = ProviderStatusCallback(
        account_sid=account_sid,
        call_sid=sid,
        call_status="completed",
        from_="+12125550142",
        to="+14155550177",
        direction="outbound-api",
        call_duration="42",
    )
    signature = provider_signature(auth_token, f"{callbacks}/status", status.to_dict())
    expect_no_content(
        "receiveProviderStatusCallback",
        receive_provider_status_callback.sync_detailed(
            workspace, client=provider, body=status, x_twilio_signature=signature
        ),
    )
    forged = expect_problem(
        "receiveProviderStatusCallback",
        receive_provider_status_callback.sync_detailed(
            workspace, client=provider, body=status, x_twilio_signature=signature[::-1]
        ),
        403,
    )
    assert forged.code == ProblemCode.INVALID_SIGNATURE
    recording = ProviderRecordingCallback(
        account_sid=account_sid,
        call_sid=sid,
        recording_sid=f"RE{uuid.uuid4().hex}",
        recording_status="completed",
        recording_duration="40",
    )
    signature = provider_signature(auth_token, f"{callbacks}/recording", recording.to_dict())
    expect_no_content(
        "receiveProviderRecordingCallback",
        receive_provider_recording_callback.sync_detailed(
            workspace, client=provider, body=recording, x_twilio_signature=signature
        ),
    )
    pending: PendingCalls = expect(
        "listPendingCalls", list_pending_calls.sync_detailed(client=dialer), 200
    )
    kept = next(p for p in pending.pending_calls if p.call_sid == sid)
    assert kept.reason == PendingCallReason.MISSING_USER and kept.has_recording
    assert kept.disposition == CallDisposition.CONNECTED and kept.user_id is None
    assert kept.started_at < kept.ended_at < kept.expires_at and kept.received_at
    assert (kept.status, kept.direction, kept.from_number, kept.to_number) == (
        "completed",
        CallDirection.OUTBOUND,
        "+12125550142",
        "+14155550177",
    )
    assert kept.answered_at is not None and kept.prospect_id is None and kept.list_id is None
    expect_head("listPendingCallsHead", list_pending_calls_head.sync_detailed(client=dialer))
    resolved = expect(
        "resolvePendingCall",
        resolve_pending_call.sync_detailed(
            sid, client=dialer, body=ResolveAPendingCall(user_id=user)
        ),
        201,
    )
    assert resolved.call.user_id == user and resolved.call.has_recording
    assert resolved.call.duration_seconds == 42 and resolved.call.recording_duration_seconds == 40


def main(
    base_url: str,
    key: str,
    output: Path,
    ingest_key: str,
    workspace: uuid.UUID,
    account_sid: str,
    auth_token: str,
    admin_key: str,
) -> dict[str, object]:
    api = AuthenticatedClient(base_url=base_url, token=key)
    anonymous = Client(base_url=base_url)

    assert expect("getLiveness", get_liveness.sync_detailed(client=anonymous), 200).status == "ok"
    expect_head("getLivenessHead", get_liveness_head.sync_detailed(client=anonymous))
    ready = expect("getReadiness", get_readiness.sync_detailed(client=anonymous), 200)
    assert ready.status == "ready"
    expect_head("getReadinessHead", get_readiness_head.sync_detailed(client=anonymous))
    document = expect("getOpenApi", get_open_api.sync_detailed(client=anonymous), 200)
    assert document.openapi.startswith("3.1") and document.paths.additional_properties
    expect_head("getOpenApiHead", get_open_api_head.sync_detailed(client=anonymous))

    described = expect("getApiKey", get_api_key.sync_detailed(client=api), 200).api_key
    assert read_api_key(described) == ["read", "write"]  # the demo's full key
    expect_head("getApiKeyHead", get_api_key_head.sync_detailed(client=api))

    users = expect("listUsers", list_users.sync_detailed(client=api), 200).users
    names = [read_user(user) for user in users]
    expect_head("listUsersHead", list_users_head.sync_detailed(client=api))

    hook = new_webhook_endpoint(api)  # before the writes below: their events are delivered
    exercise_users(base_url, admin_key, api)
    exercise_erasures(base_url, admin_key, api)
    exercise_do_not_call(api)

    body = CreateList(name="Generated Python client", owner_user_id=users[0].id)
    created = expect("createList", create_list.sync_detailed(client=api, body=body), 201).list_
    read_list(created)
    assert created.prospects_count == 0 and created.owner_user_id == users[0].id
    contacts = [Contact(first_name="Ada", last_name="Lovelace", email="ada@example.com")]
    result = expect(
        "uploadContacts",
        upload_contacts.sync_detailed(created.id, client=api, body=UploadContacts(contacts)),
        200,
    )
    assert (result.list_id, result.accepted_contacts, result.total_prospects) == (
        created.id,
        1,
        1,
    )
    blank = UploadContacts([Contact(first_name=" ")])
    invalid = expect_problem(
        "uploadContacts", upload_contacts.sync_detailed(created.id, client=api, body=blank), 400
    )
    assert invalid.code == ProblemCode.INVALID_REQUEST
    assert not isinstance(invalid.errors, Unset) and invalid.errors[0].pointer == "#/contacts/0"

    fetched = expect("getList", get_list.sync_detailed(created.id, client=api), 200).list_
    read_list(fetched)
    assert fetched.prospects_count == 1
    second = UploadContacts([Contact(first_name="Grace", email="grace@example.com")])
    uploaded = upload_contacts.sync_detailed(created.id, client=api, body=second)
    second_id = expect("uploadContacts", uploaded, 200).results[0].prospect_id
    assert second_id is not None  # null only for a suppressed contact
    exercise_prospect(api, second_id)
    fetched = expect("getList", get_list.sync_detailed(created.id, client=api), 200).list_
    assert fetched.prospects_count == 1  # the second contact's prospect is deleted
    expect_head("getListHead", get_list_head.sync_detailed(created.id, client=api))
    change = ChangeList(name="Generated Python client, renamed")
    renamed = expect(
        "updateList", update_list.sync_detailed(created.id, client=api, body=change), 200
    )
    read_list(renamed.list_)
    assert renamed.list_.name == change.name
    first_id = result.results[0].prospect_id
    assert first_id is not None
    removal = RemoveContacts(prospect_ids=[first_id, uuid.uuid4()])
    removed = expect(
        "removeContacts", remove_contacts.sync_detailed(created.id, client=api, body=removal), 200
    )
    assert (removed.list_id, removed.removed, removed.prospects_count) == (created.id, 1, 0)
    assert [r.outcome.value for r in removed.results] == ["removed", "not_member"]
    doomed = CreateList(name="Generated Python client, deleted", owner_user_id=users[0].id)
    doomed_id = expect("createList", create_list.sync_detailed(client=api, body=doomed), 201)
    gone = delete_list.sync_detailed(doomed_id.list_.id, client=api)
    called["deleteList"] = gone.status_code
    assert gone.status_code == 204 and gone.content == b"", gone.content
    after = expect_problem("getList", get_list.sync_detailed(doomed_id.list_.id, client=api), 404)
    assert after.code == ProblemCode.NOT_FOUND
    missing = expect_problem("getList", get_list.sync_detailed(uuid.uuid4(), client=api), 404)
    assert missing.code == ProblemCode.NOT_FOUND

    lists = expect(
        "listLists", list_lists.sync_detailed(client=api, page_size=PageSize.VALUE_100), 200
    )
    for item in lists.lists:
        assert isinstance(item, DialerList)  # without includeDeleted: no tombstones
        read_list(item)
    assert created.id in {item.id for item in lists.lists} and lists.page == 1
    assert not isinstance(lists.total, Unset) and lists.total >= len(lists.lists)
    assert lists.page_size == 100
    expect_head("listListsHead", list_lists_head.sync_detailed(client=api))

    page = expect(
        "listCalls", list_calls.sync_detailed(client=api, page_size=PageSize.VALUE_100), 200
    )
    for call in page.calls:
        read_call(call)
    assert not isinstance(page.total, Unset) and page.calls
    assert page.has_more == (page.total > len(page.calls)) and isinstance(page.next_cursor, str)
    following = expect(
        "listCalls", list_calls.sync_detailed(client=api, cursor=page.next_cursor), 200
    )
    for call in following.calls:
        read_call(call)
    assert isinstance(following.total, Unset) and isinstance(following.page, Unset)
    assert not {c.id for c in following.calls} & {c.id for c in page.calls}
    expect_head("listCallsHead", list_calls_head.sync_detailed(client=api))

    recording: Path | None = None
    for call in (c for c in page.calls if c.has_recording):
        response = get_call_recording.sync_detailed(call.id, client=api)
        if response.status_code != 200:  # the demo keeps one recording missing upstream
            expect_problem("getCallRecording", response, response.status_code)
            continue
        audio = expect("getCallRecording", response, 200)
        assert isinstance(audio, File)
        data = audio.payload.read()
        assert isinstance(data, bytes) and len(data) == int(response.headers["content-length"])
        assert data[:3] == b"ID3" or (data[0] == 0xFF and data[1] & 0xE0 == 0xE0)
        recording = output / f"call-{call.id}.mp3"
        recording.write_bytes(data)
        part = get_call_recording.sync_detailed(call.id, client=api, range_="bytes=0-1023")
        assert expect("getCallRecording", part, 206).payload.read() == data[:1024]
        assert part.headers["content-range"] == f"bytes 0-1023/{len(data)}"
        head = get_call_recording_head.sync_detailed(call.id, client=api)
        expect_head("getCallRecordingHead", head)
        assert head.headers["content-length"] == str(len(data))
        break
    assert recording is not None, "no recording could be downloaded"

    prospects = expect("listProspects", list_prospects.sync_detailed(client=api), 200)
    for prospect in prospects.prospects:
        assert isinstance(prospect, Prospect)  # without includeDeleted: no tombstones
        read_prospect(prospect)
    expect_head("listProspectsHead", list_prospects_head.sync_detailed(client=api))

    timeline = expect(
        "getProspectActivities",
        get_prospect_activities.sync_detailed(
            client=api, prospect_id=page.calls[0].prospect_id or UNSET
        ),
        200,
    )
    read_prospect(timeline.prospect)
    types = sorted({read_activity(activity) for activity in timeline.activities})
    assert "call" in types
    expect_head(
        "getProspectActivitiesHead",
        get_prospect_activities_head.sync_detailed(client=api, email=timeline.prospect.email)
        if timeline.prospect.email
        else get_prospect_activities_head.sync_detailed(
            client=api, prospect_id=timeline.prospect.id
        ),
    )

    response = export_calls.sync_detailed(client=api)
    exported = [Call.from_dict(line) for line in export_lines("exportCalls", response)]
    for call in exported:
        read_call(call)
        find_untyped(call, "exportCalls")
    assert {c.id for c in page.calls} <= {c.id for c in exported}  # the demo's calls are settled
    link, feed = response.headers["link"].split(", ")
    assert link.endswith('>; rel="next"') and link.startswith("</v1/calls?")
    assert feed.endswith('>; rel="events"') and feed.startswith("</v1/events?cursor=")
    query = parse_qs(urlsplit(link[1 : link.index(">")]).query)
    continued = expect(
        "listCalls",
        list_calls.sync_detailed(
            client=api, sort=Sort(query["sort"][0]), cursor=query["cursor"][0]
        ),
        200,
    )
    assert isinstance(continued.next_cursor, str)  # the sync order always says where to resume
    expect_head("exportCallsHead", export_calls_head.sync_detailed(client=api))
    for prospect_line in export_lines(
        "exportProspects", export_prospects.sync_detailed(client=api, list_id=lists.lists[0].id)
    ):
        read_prospect(Prospect.from_dict(prospect_line))
    expect_head("exportProspectsHead", export_prospects_head.sync_detailed(client=api))
    for list_line in export_lines("exportLists", export_lists.sync_detailed(client=api)):
        read_list(DialerList.from_dict(list_line))
    expect_head("exportListsHead", export_lists_head.sync_detailed(client=api))
    for activity_line in export_lines(
        "exportActivities", export_activities.sync_detailed(client=api)
    ):
        activity = activity_of(activity_line)
        read_activity(activity)
        assert isinstance(activity.prospect_id, uuid.UUID)
        assert isinstance(activity.stored_at, dt.datetime)
        find_untyped(activity, "exportActivities")
    expect_head("exportActivitiesHead", export_activities_head.sync_detailed(client=api))
    dialer_writes(base_url, ingest_key, api, users[0].id)  # after the exports: not settled yet
    provider_callbacks(base_url, ingest_key, workspace, account_sid, auth_token, users[0].id)

    last = max(call.started_at for call in page.calls).date()
    first = last - dt.timedelta(days=30)
    report = expect(
        "getDialerMetrics",
        get_dialer_metrics.sync_detailed(client=api, from_=first, to=last, timezone="UTC"),
        200,
    )
    assert (report.from_, report.to, report.timezone, report.user_id) == (first, last, "UTC", None)
    assert report.starts_at < report.ends_at
    dials = read_metrics(report.totals)
    assert sum(read_metrics(day) for day in report.by_day) == dials
    assert sum(read_metrics(row) for row in report.by_user) == dials
    assert next(day.date for day in report.by_day) == first and report.by_day[-1].date == last
    assert all(day.starts_at < day.ends_at for day in report.by_day)
    assert all(isinstance(row.user_id, uuid.UUID) for row in report.by_user)
    expect_head(
        "getDialerMetricsHead",
        get_dialer_metrics_head.sync_detailed(client=api, from_=first, to=last),
    )

    # The list created, the contact uploaded and the dialer's calls above, as events.
    wanted = {"list.created", "prospect.created", "activity.created", "call.created"}
    wanted |= {"user.created", "user.updated", "user.deleted"}
    wanted |= {"prospect.updated", "prospect.deleted", "list.updated"}
    events = follow_events(api, wanted | {"call.updated"})
    event_types = sorted({read_event(event) for event in events})
    expired = expect_problem(
        "listEvents", list_events.sync_detailed(client=api, since="2000-01-01"), 410
    )
    assert expired.code == ProblemCode.EVENTS_EXPIRED
    expect_head("listEventsHead", list_events_head.sync_detailed(client=api, type_="list.created"))

    exercise_webhook_endpoint(api, hook)

    return {
        "called": called,
        "eventTypes": event_types,
        "untyped": untyped,
        "users": names,
        "recording": str(recording),
        "activityTypes": types,
    }


if __name__ == "__main__":
    base, api_key, out, ingest, workspace_id, account, token, admin_key = sys.argv[1:9]
    workspace = uuid.UUID(workspace_id)
    print(json.dumps(main(base, api_key, Path(out), ingest, workspace, account, token, admin_key)))
