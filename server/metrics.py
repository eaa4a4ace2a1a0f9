"""Prometheus metrics, on when `metrics_port` is set: every figure the service exports, defined
once here, what records them, and their exposition (served by handlers/metrics.py on the
metrics listener only, never on the API's port).

Only imported when metrics are on (server.serve). With `serve --processes N` the supervisor sets
PROMETHEUS_MULTIPROC_DIR before this module (and so prometheus_client) is imported: every
worker writes its figures to files there, and a scrape, whichever worker answers it, sums them
(server.metrics_files owns the directory).

Labels never carry a workspace, key, user or record id: `route` is the route's template
(/v1/calls/{id}), found once per handler class when the application is assembled; a request
that matched no route is counted under UNMATCHED, never under its path. The request path costs
one dict lookup, one counter increment and one histogram observation (label children bound once
and kept), in the application's log function; the in-flight gauge reads the gate's count at
scrape time (with --processes N each worker moves its own, which a scrape sums).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.multiprocess import MultiProcessCollector
from tornado.web import RequestHandler

from store.errors import StoreDamaged, StoreUnavailable
from store.events import TYPES

UNMATCHED = "unmatched"  # the route label of a request no route matched (the 404 catch-all)
METHODS = frozenset(("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"))
OTHER_METHOD = "other"
STORE_ERROR_REASONS = ("unavailable", "timeout", "damaged", "not_ready")
WEBHOOK_OUTCOMES = ("delivered", "failed", "timeout", "refused")
IMPORT_KINDS = {
    "calls": ("created", "existing"),
    "contacts": ("created", "reused", "suppressed"),
}
# Seconds: an API request is milliseconds; an export or a recording can stream for minutes.
REQUEST_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
# Seconds from an event's recording to its delivery: a poll, then retries for hours.
LAG_BUCKETS = (0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600, 12 * 3600, 24 * 3600)
GROUP = re.compile(r"\((?:[^()\\]|\\.)*\)")


def multiprocess() -> bool:
    """True in a worker of `serve --processes N` (figures summed across workers)."""
    return bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))


class Metrics:
    """The service's metrics, built once per process and shared through the application's
    settings (`settings["metrics"]`); None there when metrics are off."""

    def __init__(self) -> None:
        self.multiprocess = multiprocess()
        # No `_created` series: a start time per counter child, which nothing here reads.
        prometheus_client.disable_created_metrics()
        self.registry = registry = CollectorRegistry(auto_describe=True)
        # The classic text format (0.0.4), which every Prometheus server reads; the names here
        # need nothing of the newer one's.
        self.content_type = CONTENT_TYPE_PLAIN_0_0_4
        self.requests = Counter(
            "wsapi_http_requests_total",
            "HTTP requests answered, by method, route template and status code.",
            ["method", "route", "status"],
            registry=registry,
        )
        self.duration = Histogram(
            "wsapi_http_request_duration_seconds",
            "Time from a request's arrival to its answer's end, by method and route template.",
            ["method", "route"],
            buckets=REQUEST_BUCKETS,
            registry=registry,
        )
        self.in_flight = Gauge(
            "wsapi_http_requests_in_flight",
            "Requests received and not yet answered.",
            multiprocess_mode="livesum",
            registry=registry,
        )
        self.rate_limited = Counter(
            "wsapi_rate_limited_total",
            "Requests refused with 429 because their workspace's rate limit was used up.",
            registry=registry,
        )
        self.store_errors = Counter(
            "wsapi_store_errors_total",
            "Requests the database failed (answered 503), by reason.",
            ["reason"],
            registry=registry,
        )
        self.store_up = Gauge(
            "wsapi_store_up",
            "1 when the database answers and is ready (the /readyz check), else 0.",
            multiprocess_mode="livemostrecent",
            registry=registry,
        )
        self.recording_bytes = Counter(
            "wsapi_recording_bytes_sent_total",
            "Recording body bytes relayed from the telephony provider to clients.",
            registry=registry,
        )
        self.upstream_errors = Counter(
            "wsapi_upstream_errors_total",
            "Failures of the telephony provider while a recording was asked for or relayed.",
            registry=registry,
        )
        self.streams_open = Gauge(
            "wsapi_streams_open",
            "Streamed responses (recordings, timelines, exports) open now.",
            multiprocess_mode="livesum",
            registry=registry,
        )
        self.events_recorded = Counter(
            "wsapi_events_recorded_total",
            "Change events recorded by writes, by event type.",
            ["type"],
            registry=registry,
        )
        self.webhook_attempts = Counter(
            "wsapi_webhook_attempts_total",
            "Webhook delivery attempts, by outcome (delivered, failed, timeout, refused).",
            ["outcome"],
            registry=registry,
        )
        self.webhook_lag = Histogram(
            "wsapi_webhook_delivery_lag_seconds",
            "Time from an event's recording to its successful delivery.",
            buckets=LAG_BUCKETS,
            registry=registry,
        )
        self.webhook_backlog = Gauge(
            "wsapi_webhook_backlog",
            "Webhook deliveries not yet delivered or failed (every workspace), at the last scrape.",
            multiprocess_mode="livemostrecent",
            registry=registry,
        )
        self.import_records = Counter(
            "wsapi_import_records_total",
            "Calls and list contacts taken in through the API, by kind and outcome.",
            ["kind", "outcome"],
            registry=registry,
        )
        # Every labelled series exists from the start (at 0): rates and alerts need no absent().
        for reason in STORE_ERROR_REASONS:
            self.store_errors.labels(reason)
        for outcome in WEBHOOK_OUTCOMES:
            self.webhook_attempts.labels(outcome)
        for kind in TYPES:
            self.events_recorded.labels(kind)
        for kind, outcomes in IMPORT_KINDS.items():
            for outcome in outcomes:
                self.import_records.labels(kind, outcome)
        self._events = {kind: self.events_recorded.labels(kind) for kind in TYPES}
        self._attempts = {o: self.webhook_attempts.labels(o) for o in WEBHOOK_OUTCOMES}
        self._store_errors = {r: self.store_errors.labels(r) for r in STORE_ERROR_REASONS}
        self.routes: dict[type, str] = {}
        # (handler class, method, status) -> the bound counter child and histogram child.
        self._series: dict[tuple[type, str, int], tuple[Any, Any]] = {}

    def learn_routes(self, rules: Iterable[tuple], templates: Iterable[str] = ()) -> None:
        """Map each handler class of `rules` ((pattern, class[, kwargs])) to its route template,
        once, at assembly: a template of `templates` (the OpenAPI paths, /v1/calls/{id}) whose
        pattern is the rule's, else the pattern with each group written {path}."""
        by_pattern = {re.sub(r"\{[^}/]+\}", "([^/]+)", t): t for t in templates}
        for rule in rules:
            pattern, cls = rule[0], rule[1]
            if pattern == r".*":
                self.routes.setdefault(cls, UNMATCHED)
                continue
            self.routes.setdefault(cls, by_pattern.get(pattern) or GROUP.sub("{path}", pattern))

    def observe(self, handler: RequestHandler) -> None:
        """Count one answered request (the application's log function calls it)."""
        request = handler.request
        cls, method, status = type(handler), request.method or "", handler.get_status()
        series = self._series.get((cls, method, status))
        if series is None:
            series = self._bind(cls, method, status)
        series[0].inc()
        series[1].observe(request.request_time())

    def _bind(self, cls: type, method: str, status: int) -> tuple[Any, Any]:
        route = self.routes.get(cls, UNMATCHED)
        label = method if method in METHODS else OTHER_METHOD
        series = (
            self.requests.labels(label, route, str(status)),
            self.duration.labels(label, route),
        )
        if method in METHODS:  # any other method string is one a client made up: not kept
            self._series[(cls, method, status)] = series
        return series

    def store_error(self, exc: BaseException | None) -> None:
        """Count a request the database failed; `exc` None: the database is not ready yet."""
        if exc is None:
            reason = "not_ready"
        elif isinstance(exc, StoreDamaged):
            reason = "damaged"
        elif isinstance(exc, StoreUnavailable):
            reason = "unavailable"
        else:
            reason = "timeout"
        self._store_errors[reason].inc()
        self.store_up.set(0)

    def event_recorded(self, kind: str, count: int = 1) -> None:
        child = self._events.get(kind)
        if child is not None:
            child.inc(count)

    def webhook_attempt(self, outcome: str, lag_seconds: float | None) -> None:
        self._attempts[outcome].inc()
        if lag_seconds is not None:
            self.webhook_lag.observe(max(lag_seconds, 0.0))

    def imported(self, kind: str, outcomes: Iterable[str]) -> None:
        counts: dict[str, int] = {}
        for outcome in outcomes:
            counts[outcome] = counts.get(outcome, 0) + 1
        for outcome, count in counts.items():
            self.import_records.labels(kind, outcome).inc(count)

    def exposition(self) -> bytes:
        """The text format of every figure: this process's, or with --processes N every
        worker's summed (the files in PROMETHEUS_MULTIPROC_DIR)."""
        if self.multiprocess:
            registry = CollectorRegistry()
            MultiProcessCollector(registry)
            return prometheus_client.generate_latest(registry)
        return prometheus_client.generate_latest(self.registry)
