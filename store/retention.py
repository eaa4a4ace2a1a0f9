"""Recording retention, backend-neutral: the workspace setting that overrides
`recording_retention_days`, and what the retention sweep (server/recording_retention.py)
claims from a backend.

A call whose recording is due (its `endedAt` older than the workspace's retention) is claimed
for a while (`recordingRetryAt` moves past the claim's lease, `recordingClaim` holds the
claim's token), so that of several processes sweeping one database one deletes it at the
provider. Once the provider confirmed, the backend removes the reference in one write with the
call's `call.updated` event; when the provider failed, the call is due again after a backoff
(`recordingAttempts` counts the failures). Neither field is part of a record.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

# The workspace setting (a whole number of days; 0 keeps recordings) that overrides the
# configured default for one workspace. Absent: the default applies.
RETENTION_SETTING = "recordingRetentionDays"
MAX_RETENTION_DAYS = 36_500

FIRST_RETRY = dt.timedelta(minutes=1)
LAST_RETRY = dt.timedelta(hours=6)


@dataclasses.dataclass(frozen=True)
class DueRecording:
    """A claimed call whose recording is to be deleted at the provider."""

    call_id: str
    ref: str
    token: str  # the claim's: only its holder postpones the call
    attempts: int  # provider failures so far


def retention_days(workspace: dict, default: float) -> float:
    """The workspace's recording retention in days (0: kept forever): its own setting, or the
    configured default."""
    value = (workspace.get("settings") or {}).get(RETENTION_SETTING)
    return default if value is None else float(value)


def retry_delay(attempts: int) -> dt.timedelta:
    """How long a call waits after its `attempts`-th provider failure: doubling from a
    minute, at most six hours."""
    return min(FIRST_RETRY * 2 ** min(max(attempts - 1, 0), 20), LAST_RETRY)
