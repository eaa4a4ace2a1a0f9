"""GET /v1/reporting/dialer-metrics: dialer KPIs over an inclusive range of local days."""

from handlers.base import APIHandler
from handlers.params import date, problem, timezone, uuid_param
from store.metrics import MAX_DAYS


class DialerMetricsHandler(APIHandler):
    query_schemas = {"GET": "/schemas/queries/dialer-metrics.json"}

    async def get(self) -> None:
        first, last = date(self.query, "from"), date(self.query, "to")
        assert first is not None and last is not None  # the query schema requires both
        zone = timezone(self.query, "timezone")
        if last < first:
            raise problem("to", "must not be before from")
        if (last - first).days + 1 > MAX_DAYS:
            raise problem(
                "to", f"must leave a range of at most {MAX_DAYS} days (from and to both count)"
            )
        report = await self.store.metrics.report(
            self.workspace_id, first, last, zone, uuid_param(self.query, "userId")
        )
        self.send_json(report)


default_handlers = [(r"/v1/reporting/dialer-metrics", DialerMetricsHandler)]
