"""Side by side: closed-loop load on two or more sides in interleaved rounds (A B, B A, ...),
so that noise from the rest of the machine falls on all alike, with the server's CPU per
request; and the row of a throughput ratio measured that way."""

from __future__ import annotations

import dataclasses
import statistics

import psutil

from bench.common import HOST, Row, ms, percentile, verdict
from bench.harness import Settings
from bench.httpload import run_load


@dataclasses.dataclass
class Side:
    rps: list[float] = dataclasses.field(default_factory=list)
    cpu_ms: list[float] = dataclasses.field(default_factory=list)  # server CPU per request
    latencies: list[float] = dataclasses.field(default_factory=list)
    errors: int = 0
    statuses: dict = dataclasses.field(default_factory=dict)

    @property
    def median_rps(self) -> float:
        return statistics.median(self.rps)

    def describe(self) -> str:
        return (
            f"{self.median_rps:,.0f} req/s, p50 {ms(percentile(self.latencies, 0.5))}, "
            f"p99 {ms(percentile(self.latencies, 0.99))}"
        )

    def summary(self) -> dict:
        return {
            "rps_rounds": [round(r, 1) for r in self.rps],
            "rps": round(self.median_rps, 1),
            "cpu_ms_per_request": round(statistics.median(self.cpu_ms), 4),
            "p50_ms": round(percentile(self.latencies, 0.5) * 1000, 3),
            "p99_ms": round(percentile(self.latencies, 0.99) * 1000, 3),
            "errors": self.errors,
            "statuses": self.statuses,
        }


def cpu_seconds(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


async def side_by_side(settings: Settings, pid: int, sides: dict) -> dict[str, Side]:
    """Closed-loop load on each side in interleaved rounds (A B, B A, ...), so that noise from
    the rest of the machine falls on both sides alike; also the server's CPU per request."""
    names = list(sides)
    for name in names:  # warm-up, not counted
        port, make = sides[name]
        await run_load(
            HOST, port, make, connections=settings.connections, duration=settings.warmup_seconds
        )
    results = {name: Side() for name in names}
    for round_index in range(settings.rounds):
        order = names if round_index % 2 == 0 else names[::-1]
        for name in order:
            port, make = sides[name]
            before = cpu_seconds(pid)
            load = await run_load(
                HOST, port, make, connections=settings.connections, duration=settings.round_seconds
            )
            side = results[name]
            side.cpu_ms.append((cpu_seconds(pid) - before) * 1000 / max(1, load.requests))
            side.rps.append(load.rps)
            side.latencies.extend(load.latencies)
            side.errors += load.errors
            for status, count in load.statuses.items():
                side.statuses[str(status)] = side.statuses.get(str(status), 0) + count
    return results


def throughput_row(row_id: str, what: str, api: Side, bare: Side, target: float) -> Row:
    # The median of the per-round ratios: each pair ran back to back, so slow drifts of the
    # machine's load cancel within a pair.
    ratio = statistics.median(a / b for a, b in zip(api.rps, bare.rps, strict=True) if b)
    cpu_ratio = statistics.median(bare.cpu_ms) / statistics.median(api.cpu_ms)
    errors = api.errors + bare.errors
    result = verdict(ratio >= target) if not errors else f"ERRORS ({errors})"
    return Row(
        row_id,
        what,
        "API " + api.describe(),
        f">= {target:g}",
        result,
        baseline="bare " + bare.describe(),
        ratio=f"{ratio:.2f}",
        data={
            "api": api.summary(),
            "bare": bare.summary(),
            "ratio": round(ratio, 3),
            "ratio_of_medians": round(api.median_rps / bare.median_rps, 3),
            "cpu_ratio": round(cpu_ratio, 3),
        },
    )
