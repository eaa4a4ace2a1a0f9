"""Logging: plain operator logs, and one structured JSON access-log line per request."""

from __future__ import annotations

import json
import logging
import sys
import time

access = logging.getLogger("workspace_api.access")


def setup_logging(level: str = "info") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # The access log is already structured; tornado's own access log would duplicate it.
    logging.getLogger("tornado.access").disabled = True


def access_log(handler) -> None:
    """The Application's log_function. Never logs headers, bodies or the query string."""
    request = handler.request
    line = {
        "ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "requestId": getattr(handler, "request_id", None),
        "workspaceId": getattr(handler, "workspace_id", None),
        "method": request.method,
        "path": request.path,
        "status": handler.get_status(),
        "durationMs": round(request.request_time() * 1000, 2),
    }
    access.info(json.dumps(line, separators=(",", ":")))
