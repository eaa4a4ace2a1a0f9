"""GET /v1/calls: record shape, paging, ordering, every filter, validation, isolation."""

import datetime as dt
import itertools
import time
import uuid
from urllib.parse import quote

import pytest

from schemas import Schemas
from store.calls import call_document
from tests.helpers import walk_pages

BASE = dt.datetime(2026, 3, 2, 15, 0)
REF = "RE" + "ab" * 16


async def add_call(
    store,
    ws,
    started,
    *,
    user=0,
    prospect=None,
    disposition="connected",
    direction="outbound",
    talk=90,
    list_id=None,
    meeting=False,
    updated=None,
    recording=None,
    notes=None,
):
    answered = (
        started + dt.timedelta(seconds=8)
        if disposition in ("connected", "voicemail", "wrong_number")
        else None
    )
    ended = (answered or started) + dt.timedelta(seconds=talk if answered else 25)
    return await store.calls.create(
        ws.id,
        user_id=ws.users[user]["id"],
        prospect_id=prospect or str(uuid.uuid4()),
        direction=direction,
        disposition=disposition,
        from_number="+12125550100",
        to_number="+14155550101",
        started_at=started,
        answered_at=answered,
        ended_at=ended,
        list_id=list_id,
        meeting_booked=meeting,
        notes=notes,
        recording_ref=recording,
        recording_duration_seconds=talk if recording else None,
        updated_at=updated or ended + dt.timedelta(seconds=5),
    )


async def walk(api, query=""):
    """Every call of a query, walking pages of 50 until hasMore is false."""
    return await walk_pages(api, f"/v1/calls?{query.lstrip('&')}", "calls")


async def test_call_record_has_every_field_and_no_internal_one(api, store, ws_a):
    prospect = str(uuid.uuid4())
    list_id = str(uuid.uuid4())
    started = dt.datetime(2026, 3, 2, 15, 0, 1, 123456)
    created = await add_call(
        store,
        ws_a,
        started,
        prospect=prospect,
        list_id=list_id,
        meeting=True,
        recording=REF,
        talk=125,
        notes="Wants a demo",
    )
    body = (await api.get("/v1/calls")).json()
    assert body["total"] == 1
    [call] = body["calls"]
    assert call == {
        "id": created["id"],
        "direction": "outbound",
        "disposition": "connected",
        "fromNumber": "+12125550100",
        "toNumber": "+14155550101",
        "toNumberSuppressed": False,
        "userId": ws_a.users[0]["id"],
        "prospectId": prospect,
        "listId": list_id,
        "startedAt": "2026-03-02T15:00:01.123Z",
        "answeredAt": "2026-03-02T15:00:09.123Z",
        "endedAt": "2026-03-02T15:02:14.123Z",
        "durationSeconds": 125,
        "hasRecording": True,
        "recordingDurationSeconds": 125,
        "meetingBooked": True,
        "notes": "Wants a demo",
        "createdAt": "2026-03-02T15:00:01.123Z",
        "updatedAt": "2026-03-02T15:02:19.123Z",
    }
    assert Schemas().errors("/schemas/responses/calls-page.json", body) == []
    assert REF not in str(body) and ws_a.id not in str(body)


async def test_unanswered_call_has_no_talk_time_and_nulls(api, store, ws_a):
    await add_call(store, ws_a, BASE, disposition="no_answer")
    [call] = (await api.get("/v1/calls")).json()["calls"]
    assert (
        call["answeredAt"],
        call["durationSeconds"],
        call["hasRecording"],
        call["recordingDurationSeconds"],
        call["listId"],
        call["notes"],
    ) == (None, 0, False, None, None, None)
    assert Schemas().errors("/schemas/records/call.json", call) == []


async def test_pages_newest_first_with_envelope_and_links(api, store, ws_a):
    for i in range(120):
        await add_call(store, ws_a, BASE + dt.timedelta(minutes=i))
    first = await api.get("/v1/calls?direction=outbound")
    body = first.json()
    assert set(body) == {"calls", "total", "page", "pageSize", "hasMore", "nextCursor"}
    assert (body["total"], body["page"], body["pageSize"], body["hasMore"]) == (120, 1, 50, True)
    starts = [c["startedAt"] for c in body["calls"]]
    assert starts == sorted(starts, reverse=True) and starts[0] == "2026-03-02T16:59:00.000Z"
    links = first.headers["Link"]
    assert '</v1/calls?direction=outbound&page=2&pageSize=50>; rel="next"' in links
    assert '</v1/calls?direction=outbound&page=3&pageSize=50>; rel="last"' in links
    last = (await api.get("/v1/calls?page=2&pageSize=100")).json()
    assert (last["hasMore"], len(last["calls"])) == (False, 20)
    assert isinstance(body["nextCursor"], str) and last["nextCursor"] is None
    assert last["calls"][-1]["startedAt"] == "2026-03-02T15:00:00.000Z"
    past = (await api.get("/v1/calls?page=9")).json()
    assert past["calls"] == [] and past["hasMore"] is False and past["total"] == 120


async def test_walking_all_pages_returns_each_call_once_with_equal_timestamps(api, store, ws_a):
    for i in range(130):
        await add_call(store, ws_a, BASE + dt.timedelta(minutes=i % 3))
    seen, total = await walk(api)
    ids = [c["id"] for c in seen]
    assert total == 130 and len(ids) == len(set(ids)) == 130
    keys = [(c["createdAt"], c["id"]) for c in seen]
    assert keys == sorted(keys, reverse=True)  # newest first, ties broken by id


@pytest.fixture
def varied(io_loop, store, ws_a):
    """36 calls: every combination of user, direction, disposition, list and prospect."""
    lists = [None, str(uuid.uuid4())]
    prospects = [str(uuid.uuid4()), str(uuid.uuid4())]
    combos = list(
        itertools.product(
            range(3), ("outbound", "inbound"), ("connected", "voicemail", "no_answer")
        )
    )

    async def seed():
        calls = []
        for i, (user, direction, disposition) in enumerate(combos * 2):
            calls.append(
                await add_call(
                    store,
                    ws_a,
                    BASE + dt.timedelta(hours=i),
                    user=user,
                    direction=direction,
                    disposition=disposition,
                    list_id=lists[i % 2],
                    prospect=prospects[i % 3 % 2],
                    updated=BASE + dt.timedelta(days=1, hours=(i * 7) % 36),
                )
            )
        return calls

    return io_loop.run_sync(seed)


def utc(value: dt.datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


FILTERS = {
    "userId": lambda calls: calls[4]["userId"],
    "prospectId": lambda calls: calls[0]["prospectId"],
    "listId": lambda calls: calls[1]["listId"],
    "direction": lambda calls: "inbound",
    "disposition": lambda calls: "voicemail",
    "createdFrom": lambda calls: calls[10]["createdAt"],
    "createdTo": lambda calls: calls[10]["createdAt"],
    "updatedSince": lambda calls: calls[5]["updatedAt"],
}


def matches(call: dict, name: str, value) -> bool:
    if name == "createdFrom":
        return call["createdAt"] >= value
    if name == "createdTo":
        return call["createdAt"] < value
    if name == "updatedSince":
        return call["updatedAt"] >= value
    return call[name] == value


@pytest.mark.parametrize("name", FILTERS)
async def test_each_filter_selects_exactly_its_calls(api, varied, name):
    value = FILTERS[name](varied)
    if isinstance(value, dt.datetime):
        value = utc(value)
    expected = sorted(
        (
            c
            for c in varied
            if matches(
                {**c, **{k: utc(v) for k, v in c.items() if isinstance(v, dt.datetime)}},
                name,
                value,
            )
        ),
        key=lambda c: (c["createdAt"], c["id"]),
        reverse=True,
    )
    assert 0 < len(expected) < len(varied)
    seen, total = await walk(api, f"&{name}={value}")
    assert [c["id"] for c in seen] == [c["id"] for c in expected]
    assert total == len(expected)


async def test_filters_combine_and_ids_are_case_insensitive(api, varied):
    user = varied[0]["userId"]
    query = f"&userId={user.upper()}&direction=outbound&disposition=connected"
    seen, total = await walk(api, query)
    expected = [
        c
        for c in varied
        if c["userId"] == user and c["direction"] == "outbound" and c["disposition"] == "connected"
    ]
    assert total == len(expected) == 2 and {c["id"] for c in seen} == {c["id"] for c in expected}


async def test_created_range_is_inclusive_start_exclusive_end(api, store, ws_a):
    start, end = dt.datetime(2026, 3, 2), dt.datetime(2026, 3, 3)
    ms = dt.timedelta(milliseconds=1)
    for when in (start - ms, start, end - ms, end):
        await add_call(store, ws_a, when)
    seen, total = await walk(
        api, "&createdFrom=2026-03-02T00:00:00Z&createdTo=2026-03-03T00:00:00.000Z"
    )
    assert total == 2
    assert [c["createdAt"] for c in seen] == [
        "2026-03-02T23:59:59.999Z",
        "2026-03-02T00:00:00.000Z",
    ]


@pytest.mark.parametrize(
    "value,count",
    [
        ("2026-03-02T01:00:00%2B01:00", 2),  # an offset is converted to UTC
        ("2026-03-02T01:00:00+01:00", 2),  # an unencoded + arrives as a space: still read
        ("2026-03-01T19:00:00-05:00", 2),
        ("2026-03-02T00:00:00.0000001Z", None),  # 7 fraction digits: not ISO 8601 as accepted
        ("2026-03-02T00:00:00.000001Z", 1),  # rounds up to the next millisecond
        ("2026-03-01T23:59:59.999Z", 3),
        ("2026-03-02", 2),  # a date alone: 00:00:00.000 UTC of that day
        ("2026-03-01", 3),
        ("2026-03-02T00:00:00", 2),  # no offset: UTC
        ("2026-03-01T23:59:59.999", 3),
        ("2026-03-02T00:00:00.000001", 1),  # no offset: rounds up the same way
        ("2026-03-02T00:00:00.0000001", None),
    ],
)
async def test_instants_with_offsets_and_fractions(api, store, ws_a, value, count):
    for when in (
        dt.datetime(2026, 3, 1, 23, 59, 59, 999000),
        dt.datetime(2026, 3, 2),
        dt.datetime(2026, 3, 2, 0, 0, 0, 1000),
    ):
        await add_call(store, ws_a, when)
    response = await api.get(f"/v1/calls?createdFrom={value}")
    if count is None:
        assert response.code == 400
    else:
        assert response.json()["total"] == count


async def test_date_only_range_is_whole_utc_days(api, store, ws_a):
    """createdFrom=D1&createdTo=D2 as dates: from 00:00:00.000 UTC of D1 (included) to
    00:00:00.000 UTC of D2 (excluded)."""
    ms = dt.timedelta(milliseconds=1)
    start, end = dt.datetime(2026, 11, 1), dt.datetime(2026, 11, 3)
    for when in (start - ms, start, start + dt.timedelta(hours=12), end - ms, end, end + ms):
        await add_call(store, ws_a, when)
    seen, total = await walk(api, "&createdFrom=2026-11-01&createdTo=2026-11-03")
    assert total == 3
    assert [c["createdAt"] for c in seen] == [
        "2026-11-02T23:59:59.999Z",
        "2026-11-01T12:00:00.000Z",
        "2026-11-01T00:00:00.000Z",
    ]
    # the same bounds, written as instants
    assert await walk(
        api, "&createdFrom=2026-11-01T00:00:00.000Z&createdTo=2026-11-03T00:00:00Z"
    ) == (seen, total)
    # one date as both bounds is an empty range, not an error
    empty = (await api.get("/v1/calls?createdFrom=2026-11-01&createdTo=2026-11-01")).json()
    assert (empty["total"], empty["calls"]) == (0, [])
    # a date bound mixes with an instant bound
    seen, total = await walk(api, "&createdFrom=2026-11-01T00:00:00.001Z&createdTo=2026-11-03")
    assert total == 2


@pytest.fixture
def server_far_from_utc(monkeypatch):
    """The process's local time zone at UTC+14, so reading a value without an offset as local
    time would show."""
    monkeypatch.setenv("TZ", "Pacific/Kiritimati")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


async def test_date_time_without_offset_is_utc_not_server_time(
    api, store, ws_a, server_far_from_utc
):
    for hour in (9, 10, 11):
        await add_call(
            store,
            ws_a,
            dt.datetime(2026, 11, 1, hour, 30),
            updated=dt.datetime(2026, 11, 1, hour, 45),
        )
    for query, count in [
        ("createdFrom=2026-11-01T10:30:00", 2),
        ("createdTo=2026-11-01T10:30:00", 1),
        ("createdFrom=2026-11-01T10:30:00.000001", 1),
        ("createdFrom=2026-11-01&createdTo=2026-11-01T11:00:00", 2),
        ("updatedSince=2026-11-01T10:45:00", 2),
        ("updatedSince=2026-11-01", 3),
        ("updatedSince=2026-11-02", 0),
    ]:
        response = await api.get(f"/v1/calls?{query}")
        assert (response.code, response.json()["total"]) == (200, count), query


BAD_QUERIES = {
    "page=0": "page",
    "pageSize=20": "pageSize",
    "foo=bar": "foo",
    "workspaceId=x": "workspaceId",
    "userId=nope": "userId",
    "prospectId=123": "prospectId",
    "listId=": "listId",
    "direction=sideways": "direction",
    "disposition=hung_up": "disposition",
    "disposition=connected&disposition=busy": "disposition",
    "createdFrom=2026-13-02T00:00:00Z": "createdFrom",
    "createdFrom=2026-02-30T00:00:00Z": "createdFrom",
    "createdTo=yesterday": "createdTo",
    "createdFrom=2026-03-02T00:00:00Z&createdTo=2026-03-01T00:00:00Z": "createdTo",
    "createdFrom=2026-03-02&createdTo=2026-03-01": "createdTo",
    "updatedSince=0001-01-01T00:00:00%2B01:00": "updatedSince",
    "updatedSince=1700000000": "updatedSince",
}
# Values that are not one of the accepted forms, or not a real date and time: 400 as well.
BAD_INSTANTS = [
    "2026-02-30",
    "2026-13-01",
    "2026-00-10",
    "0000-01-01",
    "10000-01-01",
    "26-03-02",
    "2026-3-2",
    "20260302",
    "2026-W10-1",
    "2026-061",
    "2026-03",
    "2026-03-02T",
    "2026-03-02T10",
    "2026-03-02T10:00",
    "2026-03-02 10:00:00",
    "2026-03-02t10:00:00",
    "2026-03-02T10:00:00z",
    "2026-03-02T24:00:00",
    "2026-03-02T10:60:00",
    "2026-03-02T10:00:60",
    "2026-03-02T10:00:00.",
    "2026-03-02T10:00:00+01",
    "2026-03-02T10:00:00+0100",
    "2026-03-02T10:00:00+25:00",
    "2026-03-02Z",
    "2026-03-02+01:00",
    "2026-03-02\n",
    "2026-03-02T10:00:00Z\n",
    " 2026-03-02",
    "2026-03-02 ",
    "\u0662\u0660\u0662\u0666-03-02",
    "9999-12-31T23:59:59.9999",
    "0001-01-01T00:30:00+01:00",
    "",
    "null",
    "2026-03-02/2026-03-03",
]


@pytest.mark.parametrize("query,parameter", BAD_QUERIES.items(), ids=BAD_QUERIES)
async def test_bad_parameters_are_400_with_a_pointer(api, query, parameter):
    response = await api.get(f"/v1/calls?{query}")
    assert response.code == 400
    error = response.json()["errors"][0]
    assert error["parameter"] == parameter
    assert error["pointer"] == f"#/query/{parameter}"


@pytest.mark.parametrize("name", ["createdFrom", "createdTo", "updatedSince"])
@pytest.mark.parametrize("value", BAD_INSTANTS)
async def test_values_that_are_not_instants_are_400_with_a_pointer(api, name, value):
    response = await api.get(f"/v1/calls?{name}={quote(value, safe='')}")
    assert response.code == 400, value
    [error] = response.json()["errors"]
    assert error["parameter"] == name
    assert error["pointer"] == f"#/query/{name}"
    assert error["detail"].startswith("must be an ISO 8601 date YYYY-MM-DD")


async def test_calls_are_isolated_between_workspaces(api, api_b, store, ws_a, ws_b):
    mine = await add_call(store, ws_a, BASE, list_id=str(uuid.uuid4()))
    await add_call(store, ws_b, BASE)
    body = (await api_b.get("/v1/calls")).json()
    assert body["total"] == 1 and body["calls"][0]["id"] != mine["id"]
    for name in ("userId", "prospectId", "listId"):
        other = (await api_b.get(f"/v1/calls?{name}={mine[name]}")).json()
        assert other["total"] == 0 and other["calls"] == []
    assert (await api.get("/v1/calls")).json()["total"] == 1


async def test_recording_ref_is_only_given_within_the_workspace(store, ws_a, ws_b):
    recorded = await add_call(store, ws_a, BASE, recording=REF)
    silent = await add_call(store, ws_a, BASE, disposition="no_answer")
    assert await store.calls.recording_ref(ws_a.id, recorded["id"]) == REF
    assert await store.calls.recording_ref(ws_b.id, recorded["id"]) is None
    assert await store.calls.recording_ref(ws_a.id, silent["id"]) is None
    assert await store.calls.recording_ref(ws_a.id, str(uuid.uuid4())) is None


def test_call_documents_refuse_impossible_calls():
    common = dict(user_id="u", prospect_id="p", from_number="+1", to_number="+2")
    with pytest.raises(ValueError):
        call_document(
            "w",
            direction="outbound",
            disposition="hung_up",
            started_at=BASE,
            ended_at=BASE,
            **common,
        )
    with pytest.raises(ValueError):
        call_document(
            "w",
            direction="outbound",
            disposition="connected",
            started_at=BASE,
            answered_at=BASE - dt.timedelta(seconds=1),
            ended_at=BASE,
            **common,
        )
