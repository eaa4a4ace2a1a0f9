"""The telephony provider side: the client the API fetches recordings with, and the simulated
provider that stands in for the real one in the demo, the tests and the benchmarks.

- upstream.py: `UpstreamClient`, the pooled client (builds the request, judges the answer's
  head, keeps connections alive for the next request)
- connection.py: one connection as an asyncio buffered protocol that lends its buffers and
  stops reading while they are all lent out (back-pressure)
- http1.py: the HTTP/1.1 response parser, without I/O
- response.py: `UpstreamResponse`, the answer whose body the caller borrows piece by piece
- splice.py: the splice(2) relay that moves the rest of a body socket to socket in the kernel
- errors.py: what the client raises
- simulated_provider.py: the stand-in provider (never used in production)
"""
