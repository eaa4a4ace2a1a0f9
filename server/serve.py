"""`workspace-api serve`: run the API against the configured store."""

from __future__ import annotations

import asyncio
import logging

from server.app import http_server, make_app, open_services
from server.config import Config, ConfigError
from server.logs import setup_logging

log = logging.getLogger("workspace_api")


def serve(config: Config, args) -> int:
    overrides = {
        k: v
        for k, v in (("host", args.host), ("port", args.port), ("processes", args.processes))
        if v is not None
    }
    config = config.replace(**overrides)
    setup_logging(config.log_level)
    if config.processes > 1:
        raise ConfigError("--processes > 1 is not supported yet")
    asyncio.run(_serve(config))
    return 0


async def _serve(config: Config) -> None:
    if config.embedded:
        log.warning(
            "MONGODB_URI=memory: using the embedded in-process store. NOTHING IS "
            "PERSISTED; all data is lost when the process exits. Set MONGODB_URI to a "
            "MongoDB URI for real use."
        )
    store, auth = await open_services(config)
    server = http_server(make_app(config, store, auth), config)
    server.listen(config.port, config.host)
    log.info("serving on http://%s:%s/v1", config.host, config.port)
    await asyncio.Event().wait()
