"""nginx as the peer relay for P1: the same recording, proxied by a tuned reverse proxy.

`make bench` installs nginx from Debian (``apt-get install nginx``) when it is missing and the
bench runs as root on Debian; elsewhere P1's nginx rows say NOT RUN and why. Each
configuration runs as its own nginx (one worker, no daemon, files in a temporary prefix),
proxying the simulated provider over keep-alive upstream connections, with buffering off so
that nginx streams like the API does:

- ``default``: nginx's default proxy buffers (one page-sized buffer per read and write);
- ``256k``: ``proxy_buffer_size 256k``, the buffer an unbuffered proxy reads into and
  writes from, so each system call moves up to 256 KiB.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import psutil

from bench.processes import stop_process

CONFIGS = {
    "default": "",
    "256k": (
        "proxy_buffer_size 256k;\n            proxy_buffers 4 256k;\n"
        "            proxy_busy_buffers_size 256k;"
    ),
}

TEMPLATE = """\
worker_processes 1;
daemon off;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    upstream provider {{
        server {upstream};
        keepalive 8;
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://provider;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
            {buffers}
        }}
    }}
}}
"""


def find_nginx() -> str | None:
    return shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.access(p, os.X_OK)), None
    )


def ensure_nginx(install: bool) -> tuple[str | None, str]:
    """The nginx binary, installing Debian's package when allowed; else (None, why not)."""
    found = find_nginx()
    if found or not install:
        return found, "" if found else "nginx is not installed"
    if not Path("/etc/debian_version").exists() or os.geteuid() != 0 or not shutil.which("apt-get"):
        return None, "nginx is not installed (the bench installs it only as root on Debian)"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    command = [
        "apt-get",
        "install",
        "-y",
        "--no-install-recommends",
        "-o",
        "DPkg::Lock::Timeout=300",
        "nginx",
    ]
    print("bench: installing nginx from Debian (apt-get install nginx)", flush=True)
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    if result.returncode != 0:
        # The package lists may be missing in a fresh image: refresh them once.
        subprocess.run(["apt-get", "update"], env=env, capture_output=True, timeout=600)
        result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    found = find_nginx()
    if found is None:
        return None, "installing nginx failed: " + result.stderr.strip()[-200:]
    return found, ""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Nginx:
    """One nginx proxying 127.0.0.1:`upstream_port`; stop() ends it."""

    def __init__(self, binary: str, upstream_port: int, config: str, workdir: Path):
        self.prefix = workdir / f"nginx-{config}"
        self.prefix.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        conf = self.prefix / "nginx.conf"
        conf.write_text(
            TEMPLATE.format(
                prefix=self.prefix,
                upstream=f"127.0.0.1:{upstream_port}",
                port=self.port,
                buffers=CONFIGS[config],
            )
        )
        self.log = open(self.prefix / "stderr.log", "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [binary, "-p", str(self.prefix), "-c", str(conf)],
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=self.log,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        tail = (
            (self.prefix / "error.log").read_text(errors="replace")[-1000:]
            if (self.prefix / "error.log").exists()
            else ""
        )
        raise RuntimeError(f"nginx ({config}) did not start: {tail}")

    def cpu_seconds(self) -> float:
        """CPU time of the master and its workers (the worker does the relaying)."""
        total = 0.0
        try:
            master = psutil.Process(self.proc.pid)
            for process in [master, *master.children()]:
                times = process.cpu_times()
                total += times.user + times.system
        except psutil.NoSuchProcess:
            pass
        return total

    def stop(self) -> None:
        stop_process(self.proc)  # nginx: SIGTERM is a fast shutdown
        self.log.close()
