"""The baseline of `python -m bench.scale`: a bare Tornado handler in its own process that
answers every GET with the same pre-encoded bytes (a body the API served), and nothing else:
no store, no authentication, no rate limit, no logging. The API's throughput over this one's
is the share of the machine's HTTP capacity the API keeps with 1M calls in its store.

`python -m bench.scale_bare PORT BODY_FILE` (binds 127.0.0.1:PORT, 0 for any; prints the port).
"""

from __future__ import annotations

import asyncio
import sys

import tornado.web
from tornado.httpserver import HTTPServer
from tornado.netutil import bind_sockets

JSON = "application/json; charset=utf-8"


class Bytes(tornado.web.RequestHandler):
    def initialize(self, body: bytes) -> None:
        self.body = body

    def compute_etag(self) -> None:
        return None  # the API sends no ETag either

    def get(self) -> None:
        self.set_header("Content-Type", JSON)
        self.finish(self.body)


async def main(port: int, body_file: str) -> None:
    with open(body_file, "rb") as source:
        body = source.read()
    app = tornado.web.Application([(r"/.*", Bytes, {"body": body})], log_function=_quiet)
    sockets = bind_sockets(port, "127.0.0.1")
    HTTPServer(app).add_sockets(sockets)
    print(sockets[0].getsockname()[1], flush=True)
    await asyncio.Event().wait()


def _quiet(handler) -> None:
    pass


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2]))
