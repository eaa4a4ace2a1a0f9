"""A dlt source for the Workspace Data API: calls, prospects, lists, users and activities.

The first run backfills each resource through its export (GET /v1/exports/<resource>, one
NDJSON stream instead of thousands of pages), then follows the export's `Link rel="next"`:
the sync order (`sort=updatedAt`) positioned right after the export. The sync order's
`nextCursor` (never null there) is kept in dlt's resource state, so every later run continues
from it and loads exactly the records created or changed since, merged on `id` (the newest
`updatedAt` of an id wins). The walks of prospects and lists carry tombstones
(`includeDeleted=true`, which the export's link hands on): a tombstone's `deletedAt` is dlt's
`hard_delete` column, so a deleted prospect or list leaves its table on the next run.
Activities have no list endpoint: a later run exports those stored since the last one it loaded
(`updatedSince=<its storedAt>`). Users are one small list without `updatedAt`: a run loads the
users that are new or changed since the last run and deletes those no longer listed.

Nested values (an activity's `details`, a prospect's `listIds`) stay JSON columns, so each
resource is one table named after it. An export that breaks part-way resumes with
`updatedSince=<the last updatedAt received>` (the API's documented resume), and 429 and 503
answers are retried after their `Retry-After`.

Compose it in your own pipeline:

    import dlt
    from workspace_api import workspace_api

    pipeline = dlt.pipeline("workspace_api", destination="duckdb", dataset_name="workspace_api")
    pipeline.run(workspace_api("https://api.example.com/v1", api_key))
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import dlt
import requests
from dlt.sources import DltResource

SYNCED = ("calls", "prospects", "lists")
DELETABLE = ("prospects", "lists")  # their sync walks carry tombstones (includeDeleted=true)
BATCH = 1000  # records handed to dlt at a time
PAGE_SIZE = 100
RETRIES = 8  # 429 and 503 answers, and broken exports, retried this often in a row


class WorkspaceApi:
    """The HTTP side: the key, retries after Retry-After, exports read line by line."""

    def __init__(self, base_url: str, api_key: str, timeout: float = 60) -> None:
        self.base = base_url.rstrip("/") + "/"
        self.timeout = timeout
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {api_key}"

    def request(self, path: str, params: dict | None = None, stream: bool = False) -> Any:
        """GET `path` (relative to the base URL, or absolute as in a Link); the response."""
        url = urljoin(self.base, path)
        for _ in range(RETRIES):
            response = self.session.get(url, params=params, stream=stream, timeout=self.timeout)
            if response.status_code in (429, 503):
                response.close()
                time.sleep(float(response.headers.get("Retry-After", "1")))
                continue
            response.raise_for_status()
            return response
        response.raise_for_status()
        raise RuntimeError(f"GET {url}: still {response.status_code} after {RETRIES} tries")

    def export(
        self, resource: str, field: str, since: str | None = None, links: dict | None = None
    ) -> Iterator[list[dict]]:
        """Every record of GET /exports/<resource> (from `since` on) in batches. A broken
        stream is resumed from the last record's `field` (updatedAt, or storedAt); its records
        of that instant come again, which the merge on id absorbs. The export's next link goes
        into `links["next"]`."""
        for _ in range(RETRIES):
            params = {"updatedSince": since} if since else None
            batch: list[dict] = []
            try:
                with self.request(f"exports/{resource}", params, stream=True) as response:
                    link = response.headers.get("Link")
                    for line in response.iter_lines():
                        if line:
                            batch.append(json.loads(line))
                        if len(batch) == BATCH:
                            yield batch
                            since, batch = batch[-1][field], []
                if batch:
                    yield batch
                if links is not None:
                    links["next"] = next_link(link)
                return
            except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError):
                if batch:
                    yield batch  # whole lines only: a line is parsed once it has ended
                    since = batch[-1][field]
                time.sleep(1)
        raise RuntimeError(f"GET /exports/{resource} kept breaking off")

    def sync(self, resource: str, cursor: str) -> Iterator[tuple[list[dict], str]]:
        """The sync order of `resource` from `cursor`: (records, the next cursor) per page,
        until caught up."""
        while True:
            page = self.request(resource, {"cursor": cursor, "pageSize": PAGE_SIZE}).json()
            cursor = page["nextCursor"]  # never null in the sync order: where to resume
            yield page[resource], cursor
            if not page["hasMore"]:
                return


def next_link(header: str | None) -> str | None:
    """The target of `rel="next"` in a Link header."""
    for part in (header or "").split(","):
        target, _, params = part.partition(";")
        if 'rel="next"' in params.replace(" ", ""):
            return target.strip().strip("<>")
    return None


def cursor_of(link: str) -> str:
    return parse_qs(urlsplit(link).query)["cursor"][0]


def synced(api: WorkspaceApi, name: str) -> DltResource:
    # A record changed twice during a run comes twice: the merge keeps the newest. A tombstone
    # (deletedAt set) deletes its row; its updatedAt is its deletedAt, the newest of its id.
    columns: dict[str, Any] = {"updatedAt": {"dedup_sort": "desc"}}
    if name in DELETABLE:
        columns["deletedAt"] = {"hard_delete": True, "data_type": "timestamp", "nullable": True}

    @dlt.resource(name=name, primary_key="id", write_disposition="merge", columns=columns)
    def records() -> Iterator[list[dict]]:
        state = dlt.current.resource_state()
        cursor = state.get("cursor")
        if cursor is None:  # the first run: the export, then the sync order from its link
            links: dict = {}
            yield from api.export(name, "updatedAt", links=links)
            if not links.get("next"):
                raise RuntimeError(f"GET /exports/{name} sent no Link rel=next")
            if name in DELETABLE and "includeDeleted=true" not in links["next"]:
                raise RuntimeError(f"GET /exports/{name} handed off to a walk without deletions")
            cursor = cursor_of(links["next"])  # its filters (includeDeleted) come with it
        for page, following in api.sync(name, cursor):
            if page:
                yield page
            cursor = following
        state["cursor"] = cursor

    return records


def activities(api: WorkspaceApi) -> DltResource:
    @dlt.resource(name="activities", primary_key="id", write_disposition="merge")
    def records() -> Iterator[list[dict]]:
        state = dlt.current.resource_state()
        since = state.get("storedSince")
        for batch in api.export("activities", "storedAt", since):
            since = max(since or "", *(record["storedAt"] for record in batch))
            yield batch
        state["storedSince"] = since

    return records


def users(api: WorkspaceApi) -> DltResource:
    @dlt.resource(
        name="users",
        primary_key="id",
        write_disposition="merge",
        columns={"_deleted": {"hard_delete": True, "data_type": "bool"}},
    )
    def records() -> Iterator[list[dict]]:
        state = dlt.current.resource_state()
        known: dict[str, str] = state.get("fingerprints", {})
        listed = api.request("users").json()["users"]
        current = {user["id"]: fingerprint(user) for user in listed}
        changed = [user for user in listed if known.get(user["id"]) != current[user["id"]]]
        gone = [{"id": user_id, "_deleted": True} for user_id in known if user_id not in current]
        if changed or gone:
            yield changed + gone
        state["fingerprints"] = current

    return records


def fingerprint(record: dict) -> str:
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()


@dlt.source(name="workspace_api", max_table_nesting=0)
def workspace_api(
    base_url: str = dlt.config.value, api_key: str = dlt.secrets.value
) -> list[DltResource]:
    """The API at `base_url` (ending in /v1) with `api_key`: one resource per table."""
    api = WorkspaceApi(base_url, api_key)
    return [*(synced(api, name) for name in SYNCED), users(api), activities(api)]
