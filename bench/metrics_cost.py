"""What metrics cost the request path: rows M1a and M1b of `python -m bench`.

One bench server (`bench.server --metrics`) serves the API twice on the same store, in the same
process: on one port as `serve` builds it with metrics off (the default), on another with
metrics on (server.metrics: the in-flight gauge in the gate, a counter and a histogram
observation per request, label children bound once). The same request goes to both sides in
interleaved rounds (on off, off on, ...) and the row is the median of the per-round ratios of
requests per second, metrics on over off (target 0.95 or better):

- M1a: GET /v1/users (the bench's 25 users), the cheapest authenticated read;
- M1b: GET /v1/calls?pageSize=100 (300 calls), the page P3 measures.

After the rounds the metrics listener is scraped: the requests of the "on" side must be in
`wsapi_http_requests_total` (else the row reports ERRORS: nothing was measured).
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING

from prometheus_client.parser import text_string_to_metric_families

from bench.common import HOST, Row, verdict
from bench.httpload import download, request_bytes
from bench.sides import side_by_side

if TYPE_CHECKING:
    from bench.harness import Bench, Process
    from bench.sides import Side

TARGET = 0.95
ROWS = (
    ("M1a", "GET /users ({users} users): metrics on / off, req/s", "/v1/users", "/v1/users"),
    (
        "M1b",
        "GET /calls?pageSize=100 ({calls} calls): metrics on / off, req/s",
        "/v1/calls?pageSize=100",
        "/v1/calls",
    ),
)


async def counted(server: Process, route: str) -> float:
    """`wsapi_http_requests_total` of GET `route` with status 200, from the metrics listener."""
    port = server.info["metrics_port"]
    result = await download(HOST, port, request_bytes("GET", "/metrics", HOST, port), keep=True)
    total = 0.0
    for family in text_string_to_metric_families(result.body.decode()):
        for sample in family.samples:
            labels = sample.labels
            if (
                sample.name == "wsapi_http_requests_total"
                and labels.get("route") == route
                and labels.get("method") == "GET"
                and labels.get("status") == "200"
            ):
                total += sample.value
    return total


def cost_row(row_id: str, what: str, on: Side, off: Side, seen: float) -> Row:
    ratio = statistics.median(a / b for a, b in zip(on.rps, off.rps, strict=True) if b)
    errors = on.errors + off.errors
    result = verdict(ratio >= TARGET)
    if errors:
        result = f"ERRORS ({errors})"
    elif seen < sum(on.statuses.values()):
        result = f"ERRORS (metrics counted {seen:.0f} of the on side's requests)"
    return Row(
        row_id,
        what,
        "metrics on " + on.describe(),
        f">= {TARGET:g}",
        result,
        baseline="metrics off " + off.describe(),
        ratio=f"{ratio:.2f}",
        data={
            "on": on.summary(),
            "off": off.summary(),
            "ratio": round(ratio, 3),
            "ratio_of_medians": round(on.median_rps / off.median_rps, 3),
            "cpu_ratio": round(statistics.median(off.cpu_ms) / statistics.median(on.cpu_ms), 3),
            "counted_on": seen,
        },
    )


async def run_rows(bench: Bench) -> list[Row]:
    s = bench.settings
    server = bench.start_server(
        "server-m1", "--users", str(s.users), "--calls", str(s.calls), "--metrics"
    )
    headers = {"Authorization": f"Bearer {server.info['key']}"}
    on_port, off_port = server.info["metrics_api_port"], server.info["api_port"]
    rows = []
    try:
        for row_id, what, path, route in ROWS:
            on = request_bytes("GET", path, HOST, on_port, headers)
            off = request_bytes("GET", path, HOST, off_port, headers)
            results = await side_by_side(
                s,
                server.pid,
                {"on": (on_port, lambda i, r=on: r), "off": (off_port, lambda i, r=off: r)},
            )
            seen = await counted(server, route)
            label = what.format(users=s.users, calls=s.calls)
            rows.append(cost_row(row_id, label, results["on"], results["off"], seen))
    finally:
        server.stop()
    return rows
