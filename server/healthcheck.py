"""The container image's HEALTHCHECK (`python -m server.healthcheck`): asks `GET /readyz` of the
listener that `serve` opens with the same configuration, from the same host or container, and
exits 0 when it answers 200, 1 otherwise (one line on stdout says what it found)."""

from __future__ import annotations

import http.client
import sys

from server.config import Config, ConfigError, load_config

TIMEOUT_SECONDS = 4  # under the image's HEALTHCHECK --timeout of 5 s


def probe_address(config: Config) -> tuple[str, int]:
    """Where to reach `serve`: its listen address, or loopback when it listens on every one."""
    host = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(config.host, config.host)
    return host, config.port


def check(config: Config) -> tuple[bool, str]:
    """(ready, what was found): plain HTTP/1.1 to the listener, no proxy, no redirect followed."""
    host, port = probe_address(config)
    connection = http.client.HTTPConnection(host, port, timeout=TIMEOUT_SECONDS)
    try:
        connection.request("GET", "/readyz", headers={"Accept": "application/json"})
        response = connection.getresponse()
        response.read()
    except (OSError, http.client.HTTPException) as exc:
        return False, f"no answer from {host}:{port}: {exc}"
    finally:
        connection.close()
    return response.status == 200, f"GET /readyz on {host}:{port}: {response.status}"


def main() -> int:
    try:
        config = load_config()
    except ConfigError as exc:
        print(f"unhealthy: {exc}")
        return 1
    ready, found = check(config)
    print(("healthy: " if ready else "unhealthy: ") + found)
    return 0 if ready else 1


if __name__ == "__main__":
    sys.exit(main())
