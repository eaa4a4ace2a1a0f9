"""When a failed delivery is tried again: the retry schedule (delays after the previous
attempt, each stretched by up to 20% jitter so that a receiver that comes back is not hit by
every retry at once), `Retry-After` on a 429 or 503 honoured up to the schedule's next step,
and the config value that sets the schedule."""

from __future__ import annotations

import random
from collections.abc import Sequence

# The Standard Webhooks schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h.
DEFAULT = (5.0, 300.0, 1800.0, 7200.0, 18000.0, 36000.0, 50400.0, 72000.0, 86400.0)
JITTER = 0.2
RETRY_AFTER_STATUSES = (429, 503)


def parse_schedule(text: str) -> tuple[float, ...]:
    """`webhook_retry_schedule`: comma-separated seconds (at least one, each positive)."""
    try:
        delays = tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise ValueError("must be comma-separated numbers of seconds, e.g. 5,300,1800") from None
    if not delays or min(delays) <= 0:
        raise ValueError("must list at least one positive number of seconds")
    return delays


def next_delay(
    schedule: Sequence[float],
    attempts: int,
    retry_after: float | None = None,
    rand: random.Random | None = None,
) -> float | None:
    """Seconds from the end of attempt number `attempts` (1-based) to the next one, or None
    when it was the last. `retry_after` (the receiver's Retry-After on a 429 or 503) moves the
    retry later, but never past the step after the scheduled one."""
    if attempts > len(schedule):
        return None
    step = schedule[attempts - 1]
    delay = step * (1 + (rand or random).uniform(0, JITTER))
    if retry_after is not None and retry_after > delay:
        cap = schedule[attempts] if attempts < len(schedule) else step
        delay = max(delay, min(retry_after, cap))
    return delay
