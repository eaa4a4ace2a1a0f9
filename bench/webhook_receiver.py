"""The fast local webhook receiver of P10 (bench/webhooks.py): answers every POST with 204 at
once and counts them, with when the first and last arrived; under /lag/ it also notes, for each
event, when it arrived (by the id of the record in its `data`). GET /stats reports and resets.
Prints {"port": N} when it listens."""

from __future__ import annotations

import asyncio
import json
import sys
import time

import tornado.web
from tornado.httpserver import HTTPServer
from tornado.netutil import bind_sockets

STATS: dict = {"count": 0, "first": None, "last": None, "arrived": {}}


class Hook(tornado.web.RequestHandler):
    def post(self, kind: str) -> None:
        now = time.time()
        STATS["count"] += 1
        STATS["first"] = STATS["first"] or now
        STATS["last"] = now
        if kind == "lag":
            record = json.loads(self.request.body)["data"]["id"]
            STATS["arrived"].setdefault(record, now)
        self.set_status(204)

    def check_xsrf_cookie(self) -> None:
        return None


class Stats(tornado.web.RequestHandler):
    def get(self) -> None:
        self.write(json.dumps(STATS))
        STATS.update(count=0, first=None, last=None, arrived={})


async def main() -> None:
    sockets = bind_sockets(0, "127.0.0.1")
    app = tornado.web.Application([(r"/(fast|lag)/.*", Hook), (r"/stats", Stats)])
    HTTPServer(app).add_sockets(sockets)
    print(json.dumps({"port": sockets[0].getsockname()[1]}), flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
