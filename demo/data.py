"""Deterministic demo data: the demo workspaces, their users, prospects and calls as store
documents, made from the words of demo/vocabulary.py (their timelines: demo/timelines.py).

Pure functions of a `random.Random` and a fixed `now`: the same seed gives the same documents,
ids included; demo.seeding and demo.live write them through the store. The shapes are
plausible for an outbound team: calls on weekdays in New York business hours over the last 90
days, most of them unanswered, a few long conversations that book meetings, recordings of
answered calls, and timelines of calls, emails, notes, list memberships, meetings and status
changes.
"""

from __future__ import annotations

import array
import dataclasses
import datetime as dt
import itertools
import math
import random
import uuid
from collections.abc import Iterator
from typing import Any
from zoneinfo import ZoneInfo

from demo.vocabulary import (
    AREA_CODES,
    CALL_NOTES,
    COMPANIES,
    FIRST,
    INBOUND,
    LAST,
    OUTBOUND,
    TITLES,
)
from store.calls import call_document
from store.prospects import Contact, dedupe_key, prospect_document

# The one recording reference whose audio the simulated provider reports missing: exactly one
# call of the first demo workspace carries it (its third-newest call with a recording).
MISSING_RECORDING_REF = "RE" + "0badc0de" * 4
CALL_DAYS = 90
TEAM_ZONE = ZoneInfo("America/New_York")
LONG_TIMELINE_CONTACT = {
    "firstName": "Dana",
    "lastName": "Whitfield",
    "email": "dana.whitfield@northwind.example",
    "phoneNumber": "+14155550100",
    "companyName": "Northwind",
    "companyDomain": "northwind.example",
    "jobTitle": "VP Sales",
    "linkedinUrl": "https://www.linkedin.com/in/dana-whitfield",
}


# The demo workspaces: each one's users (plus one deleted user), its lists, and its share of
# the scale asked for (the first gets all of it, the second about a tenth).
WORKSPACES: list[dict[str, Any]] = [
    {
        "name": "Acme Outbound",
        "users": 5,
        "lists": ["Q4 Enterprise", "SMB Re-engage", "Webinar Leads"],
        "share": 1.0,
    },
    {"name": "Globex Sales", "users": 3, "lists": ["Inbound Trials"], "share": 0.1},
]
# Users are named from the first 20 first names and 16 last names only: the lists grew later
# for prospects, and the same seed keeps naming the same users.
USER_FIRST, USER_LAST = FIRST[:20], LAST[:16]


def user_name(workspace_index: int, number: int) -> tuple[str, str]:
    """The first and last name of a demo workspace's `number`th user."""
    return USER_FIRST[(number * 7 + workspace_index) % len(USER_FIRST)], USER_LAST[
        number % len(USER_LAST)
    ]


def user_email(workspace_name: str, first: str, last: str) -> str:
    """A demo user's email: first.last@<the workspace's first word>.example, lowercase."""
    return f"{first}.{last}@{workspace_name.split()[0].lower()}.example".lower()


@dataclasses.dataclass
class Scale:
    """How much demo data the first workspace gets (the second gets about a tenth)."""

    calls: int = 5000
    prospects: int = 500
    timeline: int = 5000  # extra activities of the one prospect with a very long timeline


def demo_uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def recording_ref(rng: random.Random) -> str:
    """A provider recording reference: RE + 32 lowercase hex digits."""
    return f"RE{rng.getrandbits(128):032x}"


def caller_id(index: int) -> str:
    return f"+1212555{100 + index:04d}"


def demo_contacts(rng: random.Random, count: int) -> list[dict]:
    """`count` contacts with distinct emails and phone numbers."""
    emails, phones = {LONG_TIMELINE_CONTACT["email"]}, {"+14155550100"}
    contacts: list[dict] = []
    while len(contacts) < count:
        first, last = rng.choice(FIRST), rng.choice(LAST)
        company, domain = rng.choice(COMPANIES)
        handle = f"{first}.{last}{rng.randint(1, 99) if rng.random() < 0.4 else ''}".lower()
        email = f"{handle}@{domain}"
        phone = f"+1{rng.choice(AREA_CODES)}555{rng.randint(0, 9999):04d}"
        if email in emails or phone in phones:
            continue
        emails.add(email)
        phones.add(phone)
        contacts.append(
            {
                "firstName": first,
                "lastName": last,
                "email": email,
                "phoneNumber": phone,
                "companyName": company,
                "companyDomain": domain,
                "jobTitle": rng.choice(TITLES),
                "linkedinUrl": f"https://www.linkedin.com/in/{handle.replace('.', '-')}",
            }
        )
    return contacts


def build_prospects(
    rng: random.Random,
    workspace_id: str,
    count: int,
    lists: list[dict],
    now: dt.datetime,
    long_timeline: bool,
) -> list[dict]:
    """Prospect documents, created over the last 150 days, each in zero to two lists."""
    contacts = demo_contacts(rng, count - 1 if long_timeline else count)
    if long_timeline:
        contacts.insert(0, dict(LONG_TIMELINE_CONTACT))
    documents = []
    for index, raw in enumerate(contacts):
        contact = Contact.parse(raw, "US")
        joined = [x for x in lists if rng.random() < 0.45] or (
            [] if rng.random() < 0.2 else [rng.choice(lists)]
        )
        if index == 0 and long_timeline:
            joined = list(lists)
        created = min(
            [now - dt.timedelta(days=rng.uniform(95, 150))]
            + [x["createdAt"] - dt.timedelta(hours=1) for x in joined]
        )
        owner = joined[0]["ownerUserId"] if joined else None
        doc = prospect_document(
            workspace_id,
            contact,
            dedupe_key(contact),
            owner,
            created.replace(microsecond=0),
            [x["id"] for x in joined],
            demo_uuid(rng),
        )
        documents.append(doc)
    return documents


def _weighted(rng: random.Random, table: list[tuple[str, int]]) -> str:
    return rng.choices([name for name, _ in table], [weight for _, weight in table])[0]


def _call_start(rng: random.Random, now: dt.datetime) -> dt.datetime:
    """A weekday moment in New York business hours within the last CALL_DAYS days."""
    while True:
        day = (now - dt.timedelta(days=rng.randint(0, CALL_DAYS - 1))).date()
        if day.weekday() >= 5 and rng.random() < 0.95:
            continue
        local = dt.datetime(day.year, day.month, day.day, 9, tzinfo=TEAM_ZONE) + dt.timedelta(
            seconds=rng.randint(0, int(8.5 * 3600)), milliseconds=rng.randint(0, 999)
        )
        start = local.astimezone(dt.UTC).replace(tzinfo=None)
        if start < now - dt.timedelta(hours=1):
            return start


def _talk_seconds(rng: random.Random, disposition: str) -> int:
    if disposition == "connected":
        if rng.random() < 0.35:
            return rng.randint(8, 59)
        return min(2400, int(rng.lognormvariate(math.log(180), 0.7)) + 60)
    if disposition == "voicemail":
        return rng.randint(15, 50)
    return rng.randint(4, 25)  # wrong_number


CALL_CHUNK = 10_000


def call_starts(rng: random.Random, count: int, now: dt.datetime) -> array.array:
    """The start instants of `count` calls (integer milliseconds since the epoch), oldest
    first: 8 bytes a call, so a million calls are planned in 8 MB."""
    epoch = dt.datetime(1970, 1, 1)
    starts = array.array(
        "q",
        (int((_call_start(rng, now) - epoch) / dt.timedelta(milliseconds=1)) for _ in range(count)),
    )
    return array.array("q", sorted(starts))


def build_calls(
    rng: random.Random,
    workspace_id: str,
    users: list[dict],
    deleted_user: dict,
    prospects: list[dict],
    count: int,
    now: dt.datetime,
) -> Iterator[list[dict]]:
    """Call documents, oldest first, in chunks (the last one holds the newest CALL_CHUNK calls,
    or all of them). Busier reps dial more; the deleted user dialed
    early on; the long-timeline prospect (prospects[0]) is called more than anyone."""
    weights = [4, 3, 3, 2, 1, 1][: len(users)] + [1] * max(0, len(users) - 6)
    members = [p for p in prospects if p["listIds"]]
    starts = call_starts(rng, count, now)
    epoch = dt.datetime(1970, 1, 1)
    chunks = max(1, count // CALL_CHUNK)
    edges = [0, *(count - k * CALL_CHUNK for k in range(chunks - 1, 0, -1)), count]
    for first, last in itertools.pairwise(edges):
        if first == last:
            continue
        documents = []
        for index in range(first, last):
            started = epoch + dt.timedelta(milliseconds=starts[index])
            documents.append(
                _call(
                    rng,
                    workspace_id,
                    users,
                    deleted_user,
                    prospects,
                    members,
                    weights,
                    started,
                    now,
                )
            )
        yield documents


def _call(
    rng: random.Random,
    workspace_id: str,
    users: list[dict],
    deleted_user: dict,
    prospects: list[dict],
    members: list[dict],
    weights: list[int],
    started: dt.datetime,
    now: dt.datetime,
) -> dict:
    user_index = rng.choices(range(len(users)), weights)[0]
    user = users[user_index]
    if started < now - dt.timedelta(days=CALL_DAYS - 25) and rng.random() < 0.15:
        user, user_index = deleted_user, len(users)
    direction = "inbound" if rng.random() < 0.08 else "outbound"
    if rng.random() < 0.01:
        prospect = prospects[0]
    elif direction == "outbound" and members and rng.random() < 0.8:
        prospect = rng.choice(members)
    else:
        prospect = rng.choice(prospects)
    list_id = (
        rng.choice(prospect["listIds"])
        if direction == "outbound" and prospect["listIds"] and rng.random() < 0.85
        else None
    )
    disposition = _weighted(rng, OUTBOUND if direction == "outbound" else INBOUND)
    answered = ended = None
    if disposition in ("connected", "voicemail", "wrong_number"):
        answered = started + dt.timedelta(seconds=rng.randint(4, 25))
        ended = answered + dt.timedelta(seconds=_talk_seconds(rng, disposition))
    else:
        ring = {"no_answer": (25, 40), "busy": (2, 6), "failed": (0, 3)}[disposition]
        ended = started + dt.timedelta(seconds=rng.randint(*ring))
    talk = int((ended - answered).total_seconds()) if answered else 0
    meeting = disposition == "connected" and rng.random() < (0.22 if talk >= 120 else 0.02)
    ref = recording_ref(rng) if answered and rng.random() < 0.92 else None
    ours, theirs = caller_id(user_index), prospect["phoneE164"]
    return call_document(
        workspace_id,
        user_id=user["id"],
        prospect_id=prospect["_id"],
        direction=direction,
        disposition=disposition,
        from_number=ours if direction == "outbound" else theirs,
        to_number=theirs if direction == "outbound" else ours,
        started_at=started,
        answered_at=answered,
        ended_at=ended,
        list_id=list_id,
        meeting_booked=meeting,
        notes=rng.choice(CALL_NOTES)
        if disposition == "connected" and rng.random() < 0.45
        else None,
        recording_ref=ref,
        recording_duration_seconds=talk if ref else None,
        updated_at=ended + dt.timedelta(seconds=rng.randint(2, 90)),
        call_id=demo_uuid(rng),
    )


# Live demo writes (`demo --live-calls-per-minute N`): calls that have just ended.
LIVE_CALL_WINDOW = dt.timedelta(minutes=10)  # a live call started at most this long ago
LIVE_NOTES_SHARE = 0.1  # after this share of live calls, an existing call's notes change
LIVE_NOTES = ["Called back: " + note for note in CALL_NOTES]


def live_call(
    rng: random.Random,
    workspace_id: str,
    users: list[dict],
    prospects: list[dict],
    now: dt.datetime,
) -> dict:
    """A call that ended a moment ago (`now`, the instant it is written), having started up to
    LIVE_CALL_WINDOW before: `createdAt` (= its start) lands behind the newest calls, while
    `updatedAt` is `now`. `users` are user records (`id`), `prospects` prospect records (`id`,
    `phoneNumber` in E.164, `listIds`). Answered calls mostly have a recording (a reference the
    simulated provider serves); long conversations sometimes book a meeting."""
    now = now.replace(microsecond=now.microsecond // 1000 * 1000)
    user_index = rng.randrange(len(users))
    prospect = rng.choice(prospects)
    direction = "inbound" if rng.random() < 0.08 else "outbound"
    disposition = _weighted(rng, OUTBOUND if direction == "outbound" else INBOUND)
    window = int(LIVE_CALL_WINDOW.total_seconds())
    if disposition in ("connected", "voicemail", "wrong_number"):
        ring = rng.randint(4, 25)
        talk = min(_talk_seconds(rng, disposition), window - ring - 1)
    else:
        ring = rng.randint(*{"no_answer": (25, 40), "busy": (2, 6), "failed": (0, 3)}[disposition])
        talk = 0
    ended = now - dt.timedelta(milliseconds=rng.randint(0, 999))
    started = ended - dt.timedelta(seconds=ring + talk + rng.uniform(0, window - ring - talk - 1))
    started = started.replace(microsecond=started.microsecond // 1000 * 1000)
    answered = started + dt.timedelta(seconds=ring) if talk else None
    if answered:
        ended = answered + dt.timedelta(seconds=talk)
    else:
        ended = started + dt.timedelta(seconds=ring)
    meeting = disposition == "connected" and rng.random() < (0.25 if talk >= 120 else 0.03)
    ref = recording_ref(rng) if answered and rng.random() < 0.92 else None
    if ref == MISSING_RECORDING_REF:  # never, but a live recording must always play
        ref = recording_ref(rng)
    ours, theirs = caller_id(user_index), prospect["phoneNumber"]
    list_id = (
        rng.choice(prospect["listIds"])
        if direction == "outbound" and prospect["listIds"] and rng.random() < 0.85
        else None
    )
    return call_document(
        workspace_id,
        user_id=users[user_index]["id"],
        prospect_id=prospect["id"],
        direction=direction,
        disposition=disposition,
        from_number=ours if direction == "outbound" else theirs,
        to_number=theirs if direction == "outbound" else ours,
        started_at=started,
        answered_at=answered,
        ended_at=ended,
        list_id=list_id,
        meeting_booked=meeting,
        notes=rng.choice(CALL_NOTES)
        if disposition == "connected" and rng.random() < 0.45
        else None,
        recording_ref=ref,
        recording_duration_seconds=talk if ref else None,
        updated_at=now,
        call_id=demo_uuid(rng),
    )
