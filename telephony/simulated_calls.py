"""SIMULATED telephony provider, placing calls: the stand-in's
``POST /2010-04-01/Accounts/{AccountSid}/Calls.json`` (form fields `To`, `From`,
`StatusCallback`, `StatusCallbackEvent`, `Record`, `RecordingStatusCallback`; HTTP Basic auth),
and the signed callbacks it then sends, as Twilio does, on a realistic timeline.

Never used in production. A placed call is given an outcome (`Outcome`: answered by a person
or a machine, no answer, busy, failed, canceled; ring and talk seconds), and its callbacks
follow: `initiated`, `ringing` and `in-progress` (`answered`) when `StatusCallbackEvent` asks
for them, always the final status, and, for an answered call with `Record=true`, the
recording's callback some seconds after the final status. Each callback is form-encoded and
signed (`X-Twilio-Signature`, telephony.signatures); one that is not answered 2xx (or cannot be
sent) is sent again after each of `retry_delays`, then dropped. `pace` is the real seconds one
simulated second takes (1: real time; tests use a small one), and callbacks carry Timestamps
on a timeline that ends by the time they are sent, so none is ever in the future.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import dataclasses
import email.utils
import hashlib
import hmac
import logging
import random
import secrets
import time
from collections.abc import Callable
from urllib.parse import urlencode

import tornado.web
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest

from telephony.signatures import HEADER, sign

log = logging.getLogger("simulated_provider")

API_VERSION = "2010-04-01"
DEFAULT_EVENTS = ("completed",)  # Twilio's default StatusCallbackEvent
RETRY_DELAYS = (1.0, 2.0, 5.0, 10.0, 30.0, 60.0)  # real seconds between attempts of a callback
RECORDING_LAG = (3.0, 12.0)  # simulated seconds from the end of a call to its recording


@dataclasses.dataclass(frozen=True)
class Outcome:
    """How a placed call goes: its final CallStatus, AnsweredBy, and its ring and talk
    seconds (talk 0 when it was not answered)."""

    status: str  # completed, no-answer, busy, failed, canceled
    ring_seconds: int
    talk_seconds: int = 0
    answered_by: str | None = None  # human, machine_end_beep, ... (completed only)

    @property
    def answered(self) -> bool:
        return self.status == "completed"


def random_outcome(call_sid: str) -> Outcome:
    """A plausible outcome, the same for the same CallSid."""
    rng = random.Random(call_sid)
    roll = rng.random()
    if roll < 0.45:
        return Outcome("completed", rng.randint(4, 20), rng.randint(20, 300), "human")
    if roll < 0.60:
        return Outcome("completed", rng.randint(15, 25), rng.randint(8, 30), "machine_end_beep")
    if roll < 0.80:
        return Outcome("no-answer", rng.randint(25, 30))
    if roll < 0.90:
        return Outcome("busy", rng.randint(1, 4))
    if roll < 0.95:
        return Outcome("failed", 1)
    return Outcome("canceled", rng.randint(2, 10))


@dataclasses.dataclass
class Callback:
    """One callback the provider sent (or tried to): where, what, and each attempt's status
    (0: the request failed before an answer)."""

    url: str
    params: dict[str, str]
    attempts: list[int] = dataclasses.field(default_factory=list)

    @property
    def delivered(self) -> bool:
        return bool(self.attempts) and 200 <= self.attempts[-1] < 300


@dataclasses.dataclass
class PlacedCall:
    sid: str
    to: str
    from_: str
    status_callback: str | None
    events: frozenset[str]
    record: bool
    recording_callback: str | None
    outcome: Outcome
    callbacks: list[Callback] = dataclasses.field(default_factory=list)


class CallPlacer:
    """The calls the simulated provider places, and their callbacks."""

    def __init__(
        self,
        account_id: str,
        auth_token: str,
        *,
        pace: float = 1.0,
        outcome: Callable[[str], Outcome] = random_outcome,
        retry_delays: tuple[float, ...] = RETRY_DELAYS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.account_id, self.auth_token = account_id, auth_token
        self.pace, self.outcome, self.retry_delays, self.clock = pace, outcome, retry_delays, clock
        self.calls: dict[str, PlacedCall] = {}
        self.tasks: set[asyncio.Task] = set()
        self.client = AsyncHTTPClient(force_instance=True)

    def place(self, form: dict[str, list[str]]) -> PlacedCall:
        """Place a call (the Calls.json form, values as lists); its callbacks start now."""
        events: set[str] = set()
        for value in form.get("StatusCallbackEvent", []) or list(DEFAULT_EVENTS):
            events.update(value.replace(",", " ").split())
        events.add("completed")  # the final status is always sent
        sid = "CA" + secrets.token_hex(16)

        def last(name: str) -> str | None:
            values = form.get(name)
            return values[-1] if values else None

        call = PlacedCall(
            sid=sid,
            to=form["To"][-1],
            from_=form["From"][-1],
            status_callback=last("StatusCallback"),
            events=frozenset(events),
            record=(last("Record") or "").lower() == "true",
            recording_callback=last("RecordingStatusCallback"),
            outcome=self.outcome(sid),
        )
        self.calls[sid] = call
        task = asyncio.ensure_future(self._run(call))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return call

    def timeline(self, call: PlacedCall) -> list[tuple[float, str, dict[str, str]]]:
        """(simulated seconds after placing, callback URL, params) of every callback due."""
        outcome, steps = call.outcome, []
        base = {
            "AccountSid": self.account_id,
            "ApiVersion": API_VERSION,
            "CallSid": call.sid,
            "Direction": "outbound-api",
            "From": call.from_,
            "To": call.to,
            "Called": call.to,
            "Caller": call.from_,
            "CallbackSource": "call-progress-events",
        }
        end = outcome.ring_seconds + outcome.talk_seconds
        if call.status_callback:
            progress = [(0.0, "initiated", "initiated"), (1.0, "ringing", "ringing")]
            if outcome.answered:
                progress.append((float(outcome.ring_seconds), "answered", "in-progress"))
            for at, event, status in progress:
                if event in call.events:
                    steps.append((at, call.status_callback, {**base, "CallStatus": status}))
            final = {**base, "CallStatus": outcome.status}
            final["CallDuration"] = str(outcome.talk_seconds)
            if outcome.answered_by:
                final["AnsweredBy"] = outcome.answered_by
            steps.append((float(end), call.status_callback, final))
        if call.record and outcome.answered and call.recording_callback:
            lag = random.Random(call.sid + "rec").uniform(*RECORDING_LAG)
            recording = {
                "AccountSid": self.account_id,
                "CallSid": call.sid,
                "RecordingSid": "RE" + hashlib.md5(call.sid.encode()).hexdigest(),
                "RecordingStatus": "completed",
                "RecordingDuration": str(outcome.talk_seconds),
                "RecordingChannels": "1",
                "RecordingSource": "RecordVerb",
            }
            steps.append((end + lag, call.recording_callback, recording))
        for number, (_, _, params) in enumerate(steps):
            params["SequenceNumber"] = str(number)
        return steps

    async def _run(self, call: PlacedCall) -> None:
        steps = self.timeline(call)
        if not steps:
            return
        placed, total = self.clock(), steps[-1][0]
        # Timestamps on a timeline that ends when the last callback is sent: never ahead.
        origin = placed - total * (1 - self.pace) if self.pace < 1 else placed
        for at, url, params in steps:
            await asyncio.sleep(max(0.0, placed + at * self.pace - self.clock()))
            stamp = dt_stamp(origin + at)
            if "RecordingSid" not in params:
                params["Timestamp"] = stamp
            callback = Callback(url, params)
            call.callbacks.append(callback)
            await self.send(callback)

    async def send(self, callback: Callback) -> None:
        """Send a callback, and again after each retry delay until it is answered 2xx."""
        body = urlencode(callback.params)
        signature = sign(self.auth_token, callback.url, callback.params)
        for delay in (0.0, *self.retry_delays):
            await asyncio.sleep(delay)
            request = HTTPRequest(
                callback.url,
                "POST",
                headers={"Content-Type": "application/x-www-form-urlencoded", HEADER: signature},
                body=body,
                follow_redirects=False,
                connect_timeout=5,
                request_timeout=15,
            )
            try:
                response = await self.client.fetch(request, raise_error=False)
                code = response.code if response.code != 599 else 0
            except (HTTPClientError, OSError):
                code = 0
            callback.attempts.append(code)
            if 200 <= code < 300:
                return
        log.debug("callback dropped after %d attempts", len(callback.attempts))

    async def idle(self, timeout: float = 30.0) -> None:
        """Wait until every placed call has sent its last callback."""
        async with asyncio.timeout(timeout):
            while self.tasks:
                await asyncio.gather(*list(self.tasks), return_exceptions=True)

    async def stop(self) -> None:
        """Cancel the callbacks still to come."""
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*list(self.tasks), return_exceptions=True)
        self.client.close()


def dt_stamp(unix_seconds: float) -> str:
    """A Timestamp as the provider writes it (RFC 2822, GMT)."""
    return email.utils.formatdate(int(unix_seconds), usegmt=True)


def basic_auth_ok(header: str, account_id: str, auth_token: str) -> bool:
    scheme, _, encoded = header.partition(" ")
    if scheme.lower() != "basic":
        return False
    try:
        user, sep, password = base64.b64decode(encoded, validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return False
    expected = f"{account_id}:{auth_token}".encode()
    return bool(sep) and hmac.compare_digest(f"{user}:{password}".encode(), expected)


class CallsHandler(tornado.web.RequestHandler):
    """POST Calls.json: place a call, answered 201 with the call resource, as Twilio does."""

    def initialize(self, placer: CallPlacer) -> None:
        self.placer = placer

    def check_xsrf_cookie(self) -> None:
        return None

    def post(self, account: str) -> None:
        placer = self.placer
        if not basic_auth_ok(
            self.request.headers.get("Authorization", ""), placer.account_id, placer.auth_token
        ):
            self._error(401, 20003, "Authenticate")
            return
        if account != placer.account_id:
            self._error(404, 20404, "The requested resource was not found")
            return
        form = {k: [v.decode() for v in vs] for k, vs in self.request.body_arguments.items()}
        for name, code in (("To", 21201), ("From", 21213)):
            if not form.get(name) or not form[name][-1]:
                self._error(400, code, f"No '{name}' number is specified")
                return
        call = placer.place(form)
        self.set_status(201)
        self.finish(
            {
                "sid": call.sid,
                "account_sid": placer.account_id,
                "to": call.to,
                "from": call.from_,
                "status": "queued",
                "direction": "outbound-api",
                "api_version": API_VERSION,
                "date_created": dt_stamp(placer.clock()),
                "uri": f"/{API_VERSION}/Accounts/{placer.account_id}/Calls/{call.sid}.json",
            }
        )

    def _error(self, status: int, code: int, message: str) -> None:
        self.set_status(status)
        self.finish({"code": code, "message": message, "status": status})


def calls_route(placer: CallPlacer) -> tuple:
    return (rf"/{API_VERSION}/Accounts/([^/]+)/Calls\.json", CallsHandler, {"placer": placer})
