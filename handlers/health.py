"""GET /healthz (the process answers) and GET /readyz (it can serve: the database answers, its
indexes exist and it has not been found damaged; store.readiness says what is checked). No API
key; neither counts against a rate limit."""

from __future__ import annotations

from handlers.base import RETRY_AFTER_DB, APIError, APIHandler


class LivenessHandler(APIHandler):
    auth_required = False

    async def get(self) -> None:
        self.send_json({"status": "ok"})


class ReadinessHandler(APIHandler):
    auth_required = False

    async def get(self) -> None:
        store = self.store
        if self.settings.get("draining"):
            reason = "the process is shutting down"
        elif not store.indexes_ready:
            reason = "the database is not ready yet"
        elif found := await store.readiness(self.settings["config"].db_timeout_seconds):
            reason = found
        else:
            self.send_json({"status": "ready"})
            return
        raise APIError("service_unavailable", reason, headers={"Retry-After": RETRY_AFTER_DB})


default_handlers = [
    (r"/healthz", LivenessHandler),
    (r"/readyz", ReadinessHandler),
]
