"""GET /metrics: the Prometheus text format of the process's figures (server/metrics.py), on the
metrics listener only (`metrics_port`; server.app.make_metrics_app), which also serves /healthz and
/readyz and nothing of the API. No API key: the listener is meant for a private address.

Before each exposition the figures read at scrape time are refreshed: `wsapi_store_up` (the
/readyz check) and `wsapi_webhook_backlog` (a count in the store)."""

from __future__ import annotations

from handlers.base import DB_DOWN, APIHandler


class MetricsHandler(APIHandler):
    auth_required = False
    in_api_document = False

    async def get(self) -> None:
        metrics, store = self.settings["metrics"], self.store
        timeout = self.settings["config"].db_timeout_seconds
        up = store.indexes_ready and await store.readiness(timeout) is None
        metrics.store_up.set(1 if up else 0)
        if up:
            try:
                metrics.webhook_backlog.set(await store.webhook_deliveries.backlog())
            except DB_DOWN:
                metrics.store_up.set(0)
        self.set_header("Content-Type", metrics.content_type)
        self.finish(metrics.exposition())


default_handlers = [(r"/metrics", MetricsHandler)]
