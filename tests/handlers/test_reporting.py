"""GET /v1/reporting/dialer-metrics: formulas, day boundaries and time zones, validation,
reconciliation with GET /v1/calls, isolation."""

import datetime as dt
import random
import uuid
from urllib.parse import quote

import pytest

from schemas import Schemas
from store.metrics import FIGURES
from tests.helpers import walk_pages

MS = dt.timedelta(milliseconds=1)


async def add_call(
    store,
    ws,
    started,
    *,
    user=0,
    disposition="connected",
    direction="outbound",
    talk=90,
    meeting=False,
    suppressed=False,
):
    answered = (
        started + dt.timedelta(seconds=5)
        if disposition in ("connected", "voicemail", "wrong_number")
        else None
    )
    ended = (answered or started) + dt.timedelta(seconds=talk if answered else 20)
    return await store.calls.create(
        ws.id,
        user_id=ws.users[user]["id"],
        prospect_id=str(uuid.uuid4()),
        direction=direction,
        disposition=disposition,
        from_number="+12125550100",
        to_number="+14155550101",
        started_at=started,
        answered_at=answered,
        ended_at=ended,
        meeting_booked=meeting,
        to_number_suppressed=suppressed,
    )


async def metrics(api, query: str, status: int = 200) -> dict:
    response = await api.get(f"/v1/reporting/dialer-metrics?{query}")
    assert response.code == status, response
    return response.json()


async def test_every_figure_follows_its_published_formula(api, store, ws_a):
    day = dt.datetime(2026, 5, 4, 14, 0)
    for talk, meeting in ((59, False), (60, True), (200, False), (10, True)):
        await add_call(store, ws_a, day, talk=talk, meeting=meeting)
    await add_call(store, ws_a, day, disposition="voicemail", talk=30)
    await add_call(store, ws_a, day, disposition="wrong_number", talk=90)
    await add_call(store, ws_a, day, disposition="no_answer")
    await add_call(store, ws_a, day, disposition="busy", user=1, suppressed=True)
    # not a dial
    await add_call(store, ws_a, day, direction="inbound", talk=300, meeting=True, suppressed=True)
    body = await metrics(api, "from=2026-05-04&to=2026-05-04")
    assert Schemas().errors("/schemas/responses/dialer-metrics.json", body) == []
    assert body["totals"] == {
        "dials": 8,
        "connects": 4,
        "connectRate": 0.5,
        "conversations": 2,
        "conversationRate": 0.25,
        "meetingsBooked": 2,
        "meetingRate": 0.25,
        "voicemails": 1,
        "talkTimeSeconds": 329,
        "averageTalkTimeSeconds": 82.25,
        "callsToSuppressedNumbers": 1,
    }
    users = {row["userId"]: row for row in body["byUser"]}
    assert list(users) == sorted([ws_a.users[0]["id"], ws_a.users[1]["id"]])
    assert users[ws_a.users[1]["id"]] | {"userId": None} == {
        "userId": None,
        "dials": 1,
        "connects": 0,
        "connectRate": 0,
        "conversations": 0,
        "conversationRate": 0,
        "meetingsBooked": 0,
        "meetingRate": 0,
        "voicemails": 0,
        "talkTimeSeconds": 0,
        "averageTalkTimeSeconds": 0,
        "callsToSuppressedNumbers": 1,
    }
    [only] = body["byDay"]
    assert only == {
        "date": "2026-05-04",
        "startsAt": "2026-05-04T00:00:00.000Z",
        "endsAt": "2026-05-05T00:00:00.000Z",
        **body["totals"],
    }
    assert (body["from"], body["to"], body["timezone"], body["userId"]) == (
        "2026-05-04",
        "2026-05-04",
        "UTC",
        None,
    )


async def test_an_empty_range_has_every_day_with_zeros(api):
    body = await metrics(api, "from=2026-02-27&to=2026-03-01")
    assert [d["date"] for d in body["byDay"]] == ["2026-02-27", "2026-02-28", "2026-03-01"]
    assert body["byUser"] == []
    assert all(body["totals"][name] == 0 for name in FIGURES)
    assert all(day[name] == 0 for day in body["byDay"] for name in FIGURES)


async def test_both_ends_are_inclusive_whole_days(api, store, ws_a):
    first, after = dt.datetime(2026, 6, 1), dt.datetime(2026, 6, 4)
    for when in (first - MS, first, after - MS, after):
        await add_call(store, ws_a, when)
    body = await metrics(api, "from=2026-06-01&to=2026-06-03")
    assert body["totals"]["dials"] == 2
    assert [d["dials"] for d in body["byDay"]] == [1, 0, 1]
    assert (body["startsAt"], body["endsAt"]) == (
        "2026-06-01T00:00:00.000Z",
        "2026-06-04T00:00:00.000Z",
    )


async def test_days_start_at_local_midnight_across_dst(api, store, ws_a):
    """New York: 2026-03-08 has 23 hours (EST to EDT), 2026-11-01 has 25 (EDT to EST)."""
    spring = {"startsAt": dt.datetime(2026, 3, 8, 5), "endsAt": dt.datetime(2026, 3, 9, 4)}
    for when in (
        spring["startsAt"] - MS,
        spring["startsAt"],
        spring["endsAt"] - MS,
        spring["endsAt"],
    ):
        await add_call(store, ws_a, when)
    body = await metrics(api, "from=2026-03-08&to=2026-03-09&timezone=America/New_York")
    days = body["byDay"]
    assert [(d["date"], d["startsAt"], d["endsAt"], d["dials"]) for d in days] == [
        ("2026-03-08", "2026-03-08T05:00:00.000Z", "2026-03-09T04:00:00.000Z", 2),
        ("2026-03-09", "2026-03-09T04:00:00.000Z", "2026-03-10T04:00:00.000Z", 1),
    ]
    assert body["timezone"] == "America/New_York" and body["totals"]["dials"] == 3
    autumn = await metrics(api, "from=2026-11-01&to=2026-11-01&timezone=America/New_York")
    assert (autumn["startsAt"], autumn["endsAt"]) == (
        "2026-11-01T04:00:00.000Z",
        "2026-11-02T05:00:00.000Z",
    )
    utc = await metrics(api, "from=2026-03-08&to=2026-03-08")
    assert utc["totals"]["dials"] == 2  # 04:59:59.999Z and 05:00Z, not 03-09T03:59:59.999Z


async def test_a_day_boundary_inside_a_quarter_hour(api, store, ws_a):
    """Monrovia kept -00:44:30 until 1972: its days began at 00:44:30Z, inside a quarter hour
    (every zone in use today starts its days on quarter hours)."""
    boundary = dt.datetime(1971, 3, 2, 0, 44, 30)
    for when, talk in (
        (boundary - dt.timedelta(minutes=10), 60),
        (boundary - MS, 70),
        (boundary, 80),
        (boundary + dt.timedelta(minutes=1), 90),
    ):
        await add_call(store, ws_a, when, talk=talk)
    body = await metrics(api, "from=1971-03-01&to=1971-03-02&timezone=Africa/Monrovia")
    assert [(d["startsAt"], d["dials"], d["talkTimeSeconds"]) for d in body["byDay"]] == [
        ("1971-03-01T00:44:30.000Z", 2, 130),
        ("1971-03-02T00:44:30.000Z", 2, 170),
    ]
    assert body["endsAt"] == "1971-03-03T00:44:30.000Z"


@pytest.mark.parametrize(
    "zone,start",
    [
        ("Asia/Kolkata", "2026-07-14T18:30:00.000Z"),  # +05:30
        ("Pacific/Kiritimati", "2026-07-14T10:00:00.000Z"),  # +14:00
        ("Pacific/Pago_Pago", "2026-07-15T11:00:00.000Z"),  # -11:00
    ],
)
async def test_offsets_of_any_size(api, zone, start):
    body = await metrics(api, f"from=2026-07-15&to=2026-07-15&timezone={zone}")
    assert body["byDay"][0]["startsAt"] == start


BAD = {
    "to=2026-01-01": "from",
    "from=2026-01-01": "to",
    "from=2026-01-02&to=2026-01-01": "to",
    "from=2026-02-30&to=2026-03-01": "from",
    "from=2026-2-1&to=2026-03-01": "from",
    "from=20260201&to=2026-03-01": "from",
    "from=2026-02-01T00:00:00Z&to=2026-03-01": "from",
    "from=2026-01-01&to=yesterday": "to",
    "from=0001-01-01&to=0001-01-02": "from",
    "from=2026-01-01&to=9999-12-31": "to",
    "from=2025-01-01&to=2026-01-02": "to",  # 367 days counting both ends
    "from=2026-01-01&to=2026-01-02&timezone=Mars/Olympus": "timezone",
    "from=2026-01-01&to=2026-01-02&timezone=europe/berlin": "timezone",
    "from=2026-01-01&to=2026-01-02&timezone=../../etc/passwd": "timezone",
    "from=2026-01-01&to=2026-01-02&timezone=localtime": "timezone",
    "from=2026-01-01&to=2026-01-02&timezone=": "timezone",
    "from=2026-01-01&to=2026-01-02&userId=bob": "userId",
    "from=2026-01-01&to=2026-01-02&page=1": "page",
    "from=2026-01-01&to=2026-01-02&from=2026-01-01": "from",
}


@pytest.mark.parametrize("query,parameter", BAD.items(), ids=BAD)
async def test_bad_parameters_are_400_with_a_pointer(api, query, parameter):
    body = await metrics(api, query, 400)
    error = body["errors"][0]
    assert (error["parameter"], error["pointer"]) == (parameter, f"#/query/{parameter}")


@pytest.mark.parametrize(
    "query",
    [
        "from=2024-01-01&to=2024-12-31",  # 366 days (leap year)
        "from=2025-01-01&to=2026-01-01",  # 366 days
        "from=2026-01-01&to=2026-01-01&timezone=UTC",
        "from=2026-01-01&to=2026-01-01&timezone=Etc/GMT%2B5",
    ],
)
async def test_longest_ranges_and_plain_zones_are_accepted(api, query):
    body = await metrics(api, query)
    assert body["byDay"][-1]["endsAt"] == body["endsAt"]


async def test_user_filter(api, store, ws_a):
    when = dt.datetime(2026, 4, 1, 12)
    for user in (0, 0, 1, 2):
        await add_call(store, ws_a, when, user=user)
    mine = ws_a.users[0]["id"]
    body = await metrics(api, f"from=2026-04-01&to=2026-04-01&userId={mine.upper()}")
    assert body["userId"] == mine and body["totals"]["dials"] == 2
    assert [row["userId"] for row in body["byUser"]] == [mine]


async def test_metrics_are_isolated_between_workspaces(api, api_b, store, ws_a, ws_b):
    when = dt.datetime(2026, 4, 1, 12)
    await add_call(store, ws_a, when)
    await add_call(store, ws_b, when, disposition="busy")
    query = "from=2026-04-01&to=2026-04-01"
    assert (await metrics(api, query))["totals"]["connects"] == 1
    theirs = await metrics(api_b, query)
    assert (theirs["totals"]["dials"], theirs["totals"]["connects"]) == (1, 0)
    assert [row["userId"] for row in theirs["byUser"]] == [ws_b.users[0]["id"]]
    foreign = await metrics(api_b, f"{query}&userId={ws_a.users[0]['id']}")
    assert foreign["totals"]["dials"] == 0 and foreign["byUser"] == []


# --- reconciliation with GET /calls --------------------------------------------------------


async def calls_of(api, query: str) -> tuple[list[dict], int]:
    return await walk_pages(api, f"/v1/calls?pageSize=100&{query}", "calls")


async def recount(api, starts: str, ends: str, user: str | None = None) -> dict:
    """The figures of one range, counted only through GET /calls filters and records."""
    query = f"direction=outbound&createdFrom={quote(starts)}&createdTo={quote(ends)}"
    if user:
        query += f"&userId={user}"
    dials, total = await calls_of(api, query)
    connects, connect_total = await calls_of(api, query + "&disposition=connected")
    voicemail_total = (await api.get(f"/v1/calls?{query}&disposition=voicemail")).json()["total"]
    assert total == len(dials) and connect_total == len(connects)
    talk = sum(c["durationSeconds"] for c in connects)
    conversations = sum(c["durationSeconds"] >= 60 for c in connects)
    meetings = sum(c["meetingBooked"] for c in dials)

    def ratio(a, b):
        return a / b if b else 0

    return {
        "dials": total,
        "connects": connect_total,
        "connectRate": ratio(connect_total, total),
        "conversations": conversations,
        "conversationRate": ratio(conversations, total),
        "meetingsBooked": meetings,
        "meetingRate": ratio(meetings, total),
        "voicemails": voicemail_total,
        "talkTimeSeconds": talk,
        "averageTalkTimeSeconds": ratio(talk, connect_total),
        "callsToSuppressedNumbers": sum(c["toNumberSuppressed"] for c in dials),
    }


def close(figures: dict, expected: dict) -> bool:
    return all(abs(figures[name] - expected[name]) < 1e-9 for name in FIGURES)


async def test_figures_reconcile_with_get_calls(api, store, ws_a):
    rng = random.Random(11)
    start = dt.datetime(2026, 10, 29, 0, 0)  # spans the DST change in New York (Nov 1)
    for _ in range(260):
        when = start + dt.timedelta(minutes=rng.randint(0, 7 * 24 * 60), seconds=rng.random())
        disposition = rng.choice(
            ["connected", "connected", "no_answer", "voicemail", "busy", "failed", "wrong_number"]
        )
        await add_call(
            store,
            ws_a,
            when,
            user=rng.randint(0, 2),
            disposition=disposition,
            direction=rng.choice(["outbound"] * 5 + ["inbound"]),
            talk=rng.choice([5, 59, 60, 61, 240]),
            meeting=rng.random() < 0.15,
            suppressed=rng.random() < 0.2,
        )
    body = await metrics(api, "from=2026-10-30&to=2026-11-03&timezone=America/New_York")
    assert body["totals"]["dials"] > 100
    assert close(body["totals"], await recount(api, body["startsAt"], body["endsAt"]))
    for day in body["byDay"]:
        assert close(day, await recount(api, day["startsAt"], day["endsAt"])), day["date"]
    assert sum(day["dials"] for day in body["byDay"]) == body["totals"]["dials"]
    for row in body["byUser"]:
        assert close(row, await recount(api, body["startsAt"], body["endsAt"], row["userId"]))
    assert sum(row["dials"] for row in body["byUser"]) == body["totals"]["dials"]
