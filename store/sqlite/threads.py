"""The scheduling of the store's own threads (the writer, the readers, the checkpoints).

Each asks Linux for SCHED_BATCH when it starts: the same share of the CPU as any thread, but a
thread that wakes up does not preempt the one running. The event loop hands a unit to a store
thread and goes on with its turn; with every core busy (the loop, the store's threads and the
receiver of a webhook on a 2-core machine), the woken store thread would otherwise take the
core from the loop (or from the process the loop talks to) at once, only to wait for the GIL
the loop still holds. It now runs at the next turn the scheduler gives, and on an idle core at
once, as before (docs/performance.md, P10a). Elsewhere, or where the policy is refused, the
thread keeps the default one.
"""

from __future__ import annotations

import contextlib
import os


def yield_on_wakeup() -> bool:
    """Put the calling thread under SCHED_BATCH; whether it is now."""
    policy = getattr(os, "SCHED_BATCH", None)
    if policy is None:
        return False
    with contextlib.suppress(OSError):
        os.sched_setscheduler(0, policy, os.sched_param(0))
        return True
    return False
