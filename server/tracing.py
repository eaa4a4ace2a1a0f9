"""OpenTelemetry tracing: on when OTEL_EXPORTER_OTLP_ENDPOINT is set and the `otel` extra is
installed (`pip install 'workspace-data-api[otel]'`); off, with nothing of OpenTelemetry
imported, otherwise.

When on, every request is a span (opentelemetry-instrumentation-tornado) and every store call
a request makes is a child span of it, `store.<family>.<method>` (`store.calls.page`). Both
carry the attribute `wsapi.request_id`, the request id of the log lines and of the
X-Request-Id header, so a trace is found from a log line and back. Store calls of the
background loops (sweeps, webhook deliveries) are not traced. Spans go to the OTLP/HTTP
endpoint, configured by the standard OTEL_* variables (OTEL_SERVICE_NAME,
OTEL_EXPORTER_OTLP_HEADERS...).
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import logging
import os
from typing import Any

log = logging.getLogger("workspace_api")

ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"
REQUEST_ID = "wsapi.request_id"
SERVICE = "workspace-api"
# The store's families (store.contract.Store's properties): their async methods become spans.
FAMILIES = frozenset(
    (
        "workspaces",
        "users",
        "keys",
        "lists",
        "prospects",
        "calls",
        "activities",
        "events",
        "webhook_endpoints",
        "webhook_deliveries",
        "metrics",
        "idempotency",
        "ratelimits",
        "settings",
    )
)

# The request id of the request being served in this context (set when its span starts).
_request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "wsapi_request_id", default=None
)


def wanted() -> bool:
    return bool(os.environ.get(ENDPOINT))


def start(exporter: Any = None) -> Tracing | None:
    """Instrument Tornado and return the Tracing that wraps the store, when tracing is asked for
    (OTEL_EXPORTER_OTLP_ENDPOINT, or an `exporter` given: the tests' in-memory one); None when it
    is not, or when the `otel` extra is missing (said once in the log)."""
    if exporter is None and not wanted():
        return None
    try:
        return Tracing(exporter)
    except ImportError as exc:
        log.warning(
            "%s is set but OpenTelemetry is not installed (%s): no tracing. Install the extra: "
            "pip install 'workspace-data-api[otel]'",
            ENDPOINT,
            exc.name,
        )
        return None


class Tracing:
    def __init__(self, exporter: Any = None) -> None:
        from opentelemetry import trace
        from opentelemetry.instrumentation.tornado import TornadoInstrumentor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

        if exporter is None:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            processor: Any = BatchSpanProcessor(OTLPSpanExporter())
        else:
            processor = SimpleSpanProcessor(exporter)
        resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", SERVICE)})
        self.provider = TracerProvider(resource=resource)
        self.provider.add_span_processor(processor)
        self.tracer = self.provider.get_tracer("workspace_api.store")
        self.client_kind = trace.SpanKind.CLIENT
        self.instrumentor = TornadoInstrumentor()
        self.instrumentor.instrument(
            tracer_provider=self.provider, server_request_hook=self._request_started
        )

    @staticmethod
    def _request_started(span: Any, handler: Any) -> None:
        request_id = getattr(handler, "request_id", None)
        _request_id.set(request_id)
        if request_id and span is not None and span.is_recording():
            span.set_attribute(REQUEST_ID, request_id)

    def wrap(self, store: Any) -> Any:
        """`store` with a span around each store call a request makes."""
        return _Traced(store, "store", self)

    def stop(self) -> None:
        """Uninstrument Tornado and send the spans still buffered."""
        self.instrumentor.uninstrument()
        self.provider.shutdown()


class _Traced:
    """A stand-in for the store or one of its families: async methods called while a request is
    served run inside a span; everything else is handed on as it is."""

    def __init__(self, inner: Any, name: str, tracing: Tracing) -> None:
        self._inner, self._name, self._tracing = inner, name, tracing

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self._inner, attr)
        if self._name == "store" and attr in FAMILIES:
            value = _Traced(value, f"store.{attr}", self._tracing)
        elif inspect.iscoroutinefunction(value):
            value = self._spanned(value, f"{self._name}.{attr}")
        else:
            return value  # properties (indexes_ready) are read anew every time
        setattr(self, attr, value)  # made once: __getattr__ is not asked again
        return value

    def _spanned(self, method: Any, span_name: str) -> Any:
        tracer, kind = self._tracing.tracer, self._tracing.client_kind

        @functools.wraps(method)
        async def call(*args: Any, **kwargs: Any) -> Any:
            request_id = _request_id.get()
            if request_id is None:  # a background loop's call: not traced
                return await method(*args, **kwargs)
            with tracer.start_as_current_span(
                span_name, kind=kind, attributes={REQUEST_ID: request_id}
            ):
                return await method(*args, **kwargs)

        return call
