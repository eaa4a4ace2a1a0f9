"""Resident memory of another process, sampled every 20 ms on a background thread."""

from __future__ import annotations

import statistics
import threading
import time

import psutil


class RSSSampler:
    """Samples a process's RSS; `peak` is the highest sample since `start`."""

    def __init__(self, pid: int, interval: float = 0.02):
        self.process = psutil.Process(pid)
        self.interval = interval
        self.samples: list[int] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def rss(self) -> int:
        return self.process.memory_info().rss

    def at_rest(self, seconds: float = 1.0) -> int:
        """The median RSS over `seconds` while nothing is asked of the process."""
        values = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            values.append(self.rss())
            time.sleep(self.interval)
        return int(statistics.median(values))

    def start(self) -> RSSSampler:
        self.samples = [self.rss()]
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.samples.append(self.rss())
            except psutil.Error:
                return

    def stop(self) -> int:
        """Stop sampling; returns the peak RSS seen."""
        self._stop.set()
        if self._thread:
            self._thread.join()
        self.samples.append(self.rss())
        return max(self.samples)

    @property
    def peak(self) -> int:
        return max(self.samples)
