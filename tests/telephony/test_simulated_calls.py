"""The simulated provider places calls (POST .../Calls.json) and sends their callbacks as Twilio
does: signed so that the twilio package's RequestValidator accepts them, on a realistic
timeline (progress, final status, then the recording), sent again after a failed attempt; and
a call placed through it records itself in the API (both tiers)."""

from __future__ import annotations

import base64
import datetime as dt
import email.utils
import json
import time
from urllib.parse import urlencode

import pytest
import tornado.httpserver
import tornado.netutil
import tornado.web
from tornado.httpclient import AsyncHTTPClient
from twilio.request_validator import RequestValidator

from server.config import load_config
from store.ingest import sid_call_id
from telephony.simulated_calls import CallPlacer, Outcome, random_outcome
from telephony.simulated_provider import start_provider
from tests.helpers import test_environ

ACCOUNT = "AC" + "6b" * 16
TOKEN = "0ddba11c0ddba11c0ddba11c0ddba11c"
PACE = 0.002  # real seconds per simulated second: a 5-minute call in 0.6 s
FAST_RETRIES = (0.05, 0.05, 0.05)


class Receiver:
    """A callback receiver that checks every callback with RequestValidator and fails the
    first `fail_first` attempts of each final status with 500."""

    def __init__(self, fail_first: int = 0):
        self.received: list[tuple[str, dict, bool]] = []  # (path, params, signature valid)
        self.fail_first = fail_first
        self.failed: dict[str, int] = {}
        receiver = self

        class Handler(tornado.web.RequestHandler):
            def post(self, kind: str) -> None:
                params = {k: v[-1].decode() for k, v in self.request.body_arguments.items()}
                url = f"http://127.0.0.1:{receiver.port}{self.request.uri}"
                ok = RequestValidator(TOKEN).validate(
                    url, params, self.request.headers.get("X-Twilio-Signature", "")
                )
                final = params.get("CallStatus") not in (None, "initiated", "ringing")
                key = f"{params.get('CallSid')}:{params.get('CallStatus')}"
                if final and receiver.failed.get(key, 0) < receiver.fail_first:
                    receiver.failed[key] = receiver.failed.get(key, 0) + 1
                    self.set_status(500)
                    return
                receiver.received.append((kind, params, ok))
                self.set_status(204)

        sockets = tornado.netutil.bind_sockets(0, "127.0.0.1")
        self.port = sockets[0].getsockname()[1]
        self.server = tornado.httpserver.HTTPServer(
            tornado.web.Application([(r"/hooks/(\w+)", Handler)])
        )
        self.server.add_sockets(sockets)

    def url(self, kind: str, query: str = "") -> str:
        return f"http://127.0.0.1:{self.port}/hooks/{kind}{query}"


async def place(provider_url: str, form: dict, account: str = ACCOUNT, token: str = TOKEN):
    auth = base64.b64encode(f"{account}:{token}".encode()).decode()
    return await AsyncHTTPClient().fetch(
        f"{provider_url}/2010-04-01/Accounts/{account}/Calls.json",
        method="POST",
        headers={
            "Authorization": f"Basic {auth}",
            "Content-Type": "application/x-www-form-urlencoded",
        },
        body=urlencode(form, doseq=True),
        raise_error=False,
    )


def when(params: dict) -> dt.datetime:
    return email.utils.parsedate_to_datetime(params["Timestamp"]).replace(tzinfo=None)


async def test_a_placed_call_sends_signed_callbacks_in_order_and_retries_a_failed_one():
    receiver = Receiver(fail_first=2)
    placer = CallPlacer(
        ACCOUNT,
        TOKEN,
        pace=PACE,
        outcome=lambda sid: Outcome("completed", 7, 95, "human"),
        retry_delays=FAST_RETRIES,
    )
    provider = await start_provider(account_id=ACCOUNT, auth_token=TOKEN, calls=placer)
    try:
        before = time.time()
        response = await place(
            provider.base_url,
            {
                "To": "+14155550111",
                "From": "+12125550142",
                "StatusCallback": receiver.url("status", "?userId=u-1"),
                "StatusCallbackEvent": ["initiated", "ringing", "answered", "completed"],
                "Record": "true",
                "RecordingStatusCallback": receiver.url("recording"),
            },
        )
        assert response.code == 201, response.body
        resource = json.loads(response.body)
        assert resource["status"] == "queued" and resource["sid"].startswith("CA")
        await placer.idle(timeout=30)
    finally:
        await provider.stop()
        receiver.server.stop()
    kinds = [
        (kind, p.get("CallStatus") or p["RecordingStatus"]) for kind, p, _ in receiver.received
    ]
    assert kinds == [
        ("status", "initiated"),
        ("status", "ringing"),
        ("status", "in-progress"),
        ("status", "completed"),
        ("recording", "completed"),  # after the final status
    ]
    assert all(ok for _, _, ok in receiver.received), "RequestValidator refused a callback"
    statuses = [p for kind, p, _ in receiver.received if kind == "status"]
    assert {p["CallSid"] for p in statuses} == {resource["sid"]}
    assert statuses[-1]["CallDuration"] == "95" and statuses[-1]["AnsweredBy"] == "human"
    # The timeline: answered 7 s after it started, ended 95 s later, all in the past.
    assert (when(statuses[2]) - when(statuses[0])).total_seconds() == 7
    assert (when(statuses[3]) - when(statuses[2])).total_seconds() == 95
    assert when(statuses[3]) <= dt.datetime.fromtimestamp(time.time(), dt.UTC).replace(tzinfo=None)
    assert when(statuses[0]) >= dt.datetime.fromtimestamp(before - 200, dt.UTC).replace(tzinfo=None)
    recording = receiver.received[-1][1]
    assert recording["RecordingDuration"] == "95" and recording["RecordingSid"].startswith("RE")
    final = next(
        c
        for c in placer.calls[resource["sid"]].callbacks
        if c.params.get("CallStatus") == "completed"
    )
    assert final.attempts == [500, 500, 204]  # failed twice, sent again until answered


async def test_only_the_final_status_by_default_and_no_recording_for_an_unanswered_call():
    receiver = Receiver()
    placer = CallPlacer(
        ACCOUNT, TOKEN, pace=PACE, outcome=lambda sid: Outcome("busy", 2), retry_delays=()
    )
    provider = await start_provider(account_id=ACCOUNT, auth_token=TOKEN, calls=placer)
    try:
        form = {
            "To": "+14155550111",
            "From": "+12125550142",
            "StatusCallback": receiver.url("status"),
            "Record": "true",
            "RecordingStatusCallback": receiver.url("recording"),
        }
        assert (await place(provider.base_url, form)).code == 201
        await placer.idle(timeout=30)
        unauthorized = await place(provider.base_url, form, token="wrong")
        assert unauthorized.code == 401
        missing = await place(provider.base_url, {"From": "+12125550142"})
        assert missing.code == 400 and json.loads(missing.body)["code"] == 21201
    finally:
        await provider.stop()
        receiver.server.stop()
    assert [(k, p["CallStatus"]) for k, p, _ in receiver.received] == [("status", "busy")]
    assert receiver.received[0][1]["CallDuration"] == "0"


def test_outcomes_are_plausible_and_the_same_for_a_sid():
    outcomes = [random_outcome(f"CA{n:032x}") for n in range(2000)]
    assert random_outcome("CA" + "0" * 32) == outcomes[0]
    statuses = {o.status for o in outcomes}
    assert statuses == {"completed", "no-answer", "busy", "failed", "canceled"}
    assert any(o.answered_by and o.answered_by.startswith("machine") for o in outcomes)
    assert all((o.talk_seconds > 0) == o.answered for o in outcomes)


# --- through the API ----------------------------------------------------------------------------


@pytest.fixture
def config(http_server_port):
    return load_config(
        environ=test_environ(
            shared=True,
            WSAPI_PROVIDER_ACCOUNT_ID=ACCOUNT,
            WSAPI_PROVIDER_AUTH_TOKEN=TOKEN,
            WSAPI_PUBLIC_BASE_URL=f"http://127.0.0.1:{http_server_port[1]}",
        )
    )


async def test_calls_placed_through_the_provider_record_themselves(origin, dialer, store, ws_a):
    outcomes = iter([Outcome("completed", 5, 60, "human"), Outcome("no-answer", 25)])
    placer = CallPlacer(
        ACCOUNT, TOKEN, pace=PACE, outcome=lambda sid: next(outcomes), retry_delays=FAST_RETRIES
    )
    provider = await start_provider(account_id=ACCOUNT, auth_token=TOKEN, calls=placer)
    user = ws_a.users[0]["id"]
    base = f"{origin}/v1/provider/callbacks/{ws_a.id}"
    try:
        sids = []
        for to in ("+14155550111", "+14155550122"):
            response = await place(
                provider.base_url,
                {
                    "To": to,
                    "From": "+12125550142",
                    "StatusCallback": f"{base}/status?userId={user}",
                    "StatusCallbackEvent": "initiated ringing answered completed",
                    "Record": "true",
                    "RecordingStatusCallback": f"{base}/recording",
                },
            )
            sids.append(json.loads(response.body)["sid"])
        await placer.idle(timeout=30)
    finally:
        await provider.stop()
    answered = (await dialer.get(f"/v1/calls/{sid_call_id(ws_a.id, sids[0])}")).json()["call"]
    assert answered["disposition"] == "connected" and answered["durationSeconds"] == 60
    assert answered["hasRecording"] is True and answered["recordingDurationSeconds"] == 60
    assert answered["userId"] == user and answered["toNumber"] == "+14155550111"
    missed = (await dialer.get(f"/v1/calls/{sid_call_id(ws_a.id, sids[1])}")).json()["call"]
    assert missed["disposition"] == "no_answer" and missed["hasRecording"] is False
    assert (await dialer.get("/v1/calls")).json()["total"] == 2
    for call in placer.calls.values():
        assert all(c.attempts == [204] for c in call.callbacks)
