"""Live demo calls placed through the telephony provider (`demo --live-via provider`): the live
writer's `CallRecorder` that, like a dialer built on the provider, places each call with
`POST .../Calls.json` and leaves the recording of it to the provider's signed callbacks
(POST /v1/provider/callbacks/{workspaceId}/status and .../recording), with the call's
userId, prospectId and listId in the callback URL's query.

The provider decides how each call goes (the simulated one: telephony.simulated_calls); the
call appears in the API once its final status has arrived, and its recording a few seconds
after that. A notes change goes through PATCH /v1/calls/{id} with the ingest key, and is
skipped for a call whose final status has not arrived yet.
"""

from __future__ import annotations

import base64
import json
import logging
from urllib.parse import urlencode

from tornado.httpclient import AsyncHTTPClient

from demo.live import LiveWriteFailed
from store.ingest import sid_call_id

log = logging.getLogger("workspace_api")

EVENTS = "initiated ringing answered completed"


class ProviderRecorder:
    """Places the live writer's calls through the provider at `provider_url` (account
    `account_id`, `auth_token`), with callbacks to the API at `base_url` (`.../v1`)."""

    def __init__(
        self,
        provider_url: str,
        account_id: str,
        auth_token: str,
        base_url: str,
        keys: dict[str, str],
    ) -> None:
        self.provider_url, self.account_id = provider_url.rstrip("/"), account_id
        self.auth = base64.b64encode(f"{account_id}:{auth_token}".encode()).decode()
        self.base_url, self.keys = base_url.rstrip("/"), keys
        self.client = AsyncHTTPClient()

    def form(self, workspace_id: str, call: dict) -> dict[str, str]:
        """The Calls.json form of a live call document: the dialer's user calls the
        prospect; the context the provider cannot know goes into the callback URLs."""
        context = {"userId": call["userId"], "prospectId": call["prospectId"]}
        if call.get("listId"):
            context["listId"] = call["listId"]
        callbacks = f"{self.base_url}/provider/callbacks/{workspace_id}"
        outbound = call["direction"] == "outbound"
        return {
            "To": call["toNumber"] if outbound else call["fromNumber"],
            "From": call["fromNumber"] if outbound else call["toNumber"],
            "StatusCallback": f"{callbacks}/status?{urlencode(context)}",
            "StatusCallbackEvent": EVENTS,
            "Record": "true",
            "RecordingStatusCallback": f"{callbacks}/recording",
        }

    async def record(self, workspace_id: str, calls: list[dict]) -> list[str]:
        ids = []
        for call in calls:
            response = await self.client.fetch(
                f"{self.provider_url}/2010-04-01/Accounts/{self.account_id}/Calls.json",
                method="POST",
                headers={
                    "Authorization": f"Basic {self.auth}",
                    "Content-Type": "application/x-www-form-urlencoded",
                },
                body=urlencode(self.form(workspace_id, call)),
                request_timeout=30,
                raise_error=False,
            )
            if response.code != 201:
                raise LiveWriteFailed(f"POST Calls.json: {response.code}")
            ids.append(sid_call_id(workspace_id, json.loads(response.body)["sid"]))
        return ids

    async def change_notes(self, workspace_id: str, call_id: str, notes: str) -> None:
        response = await self.client.fetch(
            f"{self.base_url}/calls/{call_id}",
            method="PATCH",
            headers={
                "Authorization": f"Bearer {self.keys[workspace_id]}",
                "Content-Type": "application/json",
            },
            body=json.dumps({"notes": notes}),
            request_timeout=60,
            raise_error=False,
        )
        if response.code not in (200, 404):  # 404: its final status has not arrived yet
            raise LiveWriteFailed(f"PATCH calls: {response.code}")

    async def later(self) -> None:
        """Nothing: the provider's callbacks bring the calls' recordings."""
        return None
