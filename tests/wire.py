"""The wire tier's database: mongo-java-server (tests/mongo-server/) as a real process on a free
loopback port, which the suite starts, stops and restarts itself.

The classpath comes from Maven once (`mvn -q compile dependency:build-classpath`) and is cached
in tests/mongo-server/target/ until the pom or the Java source changes, so starting a server
costs one JVM start (about a second).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent / "mongo-server"
TARGET = PROJECT / "target"
CLASSPATH_FILE = TARGET / "classpath.txt"
SOURCES = [PROJECT / "pom.xml", PROJECT / "src" / "main" / "java" / "WireServer.java"]


def classpath() -> str:
    """The server's Java classpath, built with Maven when missing or out of date."""
    compiled = TARGET / "classes" / "WireServer.class"
    newest = max(source.stat().st_mtime for source in SOURCES)
    if not (
        CLASSPATH_FILE.exists()
        and compiled.exists()
        and min(CLASSPATH_FILE.stat().st_mtime, compiled.stat().st_mtime) >= newest
    ):
        mvn = shutil.which("mvn")
        if mvn is None or shutil.which("java") is None:
            raise RuntimeError(
                "the wire tier needs Java 17 and Maven "
                "(apt-get install openjdk-17-jdk-headless maven)"
            )
        result = subprocess.run(
            [
                mvn,
                "-q",
                "-B",
                "-f",
                str(PROJECT / "pom.xml"),
                "compile",
                "dependency:build-classpath",
                f"-Dmdep.outputFile={CLASSPATH_FILE}",
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if result.returncode != 0:
            raise RuntimeError(
                "building the wire tier's server failed:\n"
                + result.stdout[-4000:]
                + result.stderr[-4000:]
            )
        CLASSPATH_FILE.touch()
    return f"{TARGET / 'classes'}{os.pathsep}{CLASSPATH_FILE.read_text().strip()}"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class WireServer:
    """One mongo-java-server process: the memory backend, or the H2 backend on `h2_file`.
    `stop()` and `start()` again keep the port (and, with H2, the data)."""

    def __init__(self, log_path: Path, h2_file: Path | None = None, port: int | None = None):
        self.port = port or free_port()
        self.h2_file = h2_file
        self.log_path = log_path
        self.process: subprocess.Popen | None = None

    @property
    def uri(self) -> str:
        return f"mongodb://127.0.0.1:{self.port}/?directConnection=true"

    def start(self, timeout: float = 60) -> WireServer:
        java = shutil.which("java")
        if java is None:
            raise RuntimeError(
                "the wire tier needs Java 17 (apt-get install openjdk-17-jdk-headless)"
            )
        command = [
            java,
            "-Xss4m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-cp",
            classpath(),
            "WireServer",
            str(self.port),
        ]
        if self.h2_file is not None:
            command.append(str(self.h2_file))
        with open(self.log_path, "a") as log:
            # stdin is a pipe that only this process holds: if the test run dies, the pipe ends
            # and the server exits (WireServer.java), so no server outlives its run.
            self.process = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"mongo-java-server exited:\n{self.log_path.read_text()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(
                        "mongo-java-server did not accept connections in "
                        f"{timeout} s:\n{self.log_path.read_text()}"
                    ) from None
                time.sleep(0.05)

    def stop(self, timeout: float = 20) -> None:
        """SIGTERM: the server drops its connections and closes its backend (H2 writes
        everything it acknowledged to its file), as a database's own clean shutdown does."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        finally:
            self.process.stdin.close()

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None
