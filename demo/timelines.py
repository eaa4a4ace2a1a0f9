"""Deterministic demo timelines: the prospects' own entries (list memberships, emails and
notes), the meetings and status changes that calls caused, and the one prospect with a very
long timeline, as activity documents (pure functions of a `random.Random` and `now`)."""

from __future__ import annotations

import datetime as dt
import random

from demo.data import demo_uuid
from demo.vocabulary import CALL_NOTES, NOTES, REPLIES, SUBJECTS
from store.activities import activity_document, list_added_activity


def build_timelines(
    rng: random.Random,
    workspace_id: str,
    users: list[dict],
    prospects: list[dict],
    lists: list[dict],
    now: dt.datetime,
) -> list[dict]:
    """The prospects' own timeline entries: list memberships, emails and notes (the calls'
    entries come from `call_timeline`)."""
    names = {x["id"]: x for x in lists}
    activities = []

    def add(
        prospect: dict,
        kind: str,
        at: dt.datetime,
        summary: str,
        details: dict,
        user: str | None = None,
        call: str | None = None,
    ) -> None:
        activities.append(
            activity_document(
                workspace_id,
                prospect["_id"],
                kind,
                at,
                summary,
                details,
                user_id=user,
                call_id=call,
                activity_id=demo_uuid(rng),
            )
        )

    for prospect in prospects:
        for list_id in prospect["listIds"]:
            joined = names[list_id]["createdAt"] + dt.timedelta(minutes=rng.randint(1, 240))
            activities.append(
                list_added_activity(
                    workspace_id, prospect["_id"], list_id, names[list_id]["name"], joined
                )
            )
    for prospect in prospects:
        if rng.random() < 0.3:
            user = prospect["ownerUserId"] or rng.choice(users)["id"]
            for _ in range(rng.randint(1, 3)):
                sent = now - dt.timedelta(days=rng.uniform(1, 80))
                subject = rng.choice(SUBJECTS)
                add(
                    prospect,
                    "email",
                    sent,
                    f"Email sent: {subject}",
                    {"direction": "outbound", "subject": subject},
                    user,
                )
                if rng.random() < 0.25:
                    reply = rng.choice(REPLIES)
                    add(
                        prospect,
                        "email",
                        sent + dt.timedelta(hours=rng.randint(1, 48)),
                        f"Email received: {reply}",
                        {"direction": "inbound", "subject": reply},
                    )
        if rng.random() < 0.1:
            text = rng.choice(NOTES)
            add(
                prospect,
                "note",
                now - dt.timedelta(days=rng.uniform(1, 80)),
                text,
                {"text": text},
                rng.choice(users)["id"],
            )
    return activities


def call_timeline(
    rng: random.Random, workspace_id: str, calls: list[dict], status: dict[str, str]
) -> list[dict]:
    """Meetings and status changes that calls (oldest first) caused, besides the calls' own
    entries (the store writes those). `status` carries each prospect's status across chunks."""
    activities: list[dict] = []
    for call in calls:
        prospect_id = call["prospectId"]
        if status.get(prospect_id) is None:
            status[prospect_id] = "new"
        if call["disposition"] == "connected" and status[prospect_id] == "new":
            _status(activities, rng, workspace_id, call, "new", "contacted")
            status[prospect_id] = "contacted"
        if call["meetingBooked"]:
            activities.append(meeting_activity(rng, workspace_id, call))
            if status[prospect_id] != "meeting_set":
                _status(activities, rng, workspace_id, call, status[prospect_id], "meeting_set")
                status[prospect_id] = "meeting_set"
    return activities


def meeting_activity(rng: random.Random, workspace_id: str, call: dict) -> dict:
    """The `meeting_booked` entry of a call that booked a meeting (1 to 10 days later)."""
    meeting_at = call["endedAt"] + dt.timedelta(days=rng.randint(1, 10), hours=2)
    return activity_document(
        workspace_id,
        call["prospectId"],
        "meeting_booked",
        call["endedAt"],
        "Meeting booked for " + meeting_at.strftime("%b %d"),
        {"scheduledFor": meeting_at.replace(minute=0, second=0, microsecond=0)},
        user_id=call["userId"],
        call_id=call["_id"],
        activity_id=demo_uuid(rng),
    )


def _status(
    activities: list[dict],
    rng: random.Random,
    workspace_id: str,
    call: dict,
    before: str,
    after: str,
) -> None:
    activities.append(
        activity_document(
            workspace_id,
            call["prospectId"],
            "status_change",
            call["endedAt"],
            f"Status: {before} → {after}",
            {"from": before, "to": after},
            user_id=call["userId"],
            activity_id=demo_uuid(rng),
        )
    )


def long_timeline(
    rng: random.Random,
    workspace_id: str,
    prospect: dict,
    users: list[dict],
    count: int,
    now: dt.datetime,
) -> list[dict]:
    """`count` emails, notes and status changes over the last two years: one prospect with a
    very long timeline (to try GET /prospect-activities streaming)."""
    activities = []
    statuses = ["contacted", "qualified", "meeting_set", "unqualified", "customer"]
    current: str | None = None
    details: dict[str, str | None]
    for i in range(count):
        at = now - dt.timedelta(days=730 * (count - i) / max(count, 1), minutes=rng.randint(0, 600))
        user = rng.choice(users)["id"]
        roll = rng.random()
        if roll < 0.6:
            inbound = rng.random() < 0.3
            subject = rng.choice(REPLIES if inbound else SUBJECTS)
            kind, summary = "email", f"Email {'received' if inbound else 'sent'}: {subject}"
            details = {"direction": "inbound" if inbound else "outbound", "subject": subject}
            user = None if inbound else user
        elif roll < 0.97:
            text = rng.choice(NOTES + CALL_NOTES)
            kind, summary, details = "note", text, {"text": text}
        else:
            after = rng.choice([s for s in statuses if s != current])
            kind, summary = "status_change", f"Status: {current or 'none'} → {after}"
            details, current = {"from": current, "to": after}, after
        activities.append(
            activity_document(
                workspace_id,
                prospect["_id"],
                kind,
                at,
                summary,
                details,
                user_id=user,
                activity_id=demo_uuid(rng),
            )
        )
    return activities
