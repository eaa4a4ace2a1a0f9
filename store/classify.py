"""Which calls of a recording are new, already recorded or refused: the one rule both backends
apply (store/sqlite/ingest.py, store/mongo/ingest.py), as a pure function of what the backend
read. The backends look up the records and the calls recorded before; this module decides.

A call whose id converges (store.ingest.converging: a provider SID, the caller's id, an
Idempotency-Key's) and is found recorded already is:
- `created` when the record was written by an earlier attempt of this same request (its
  `createdWith` is the request's mark for the call: MongoDB writes calls before it stores the
  response, so a retry after a crash finds them; SQLite writes both in one transaction and
  never finds one);
- `existing` when its content (NewCall.content_hash with the prospect it resolved to) is the
  content recorded;
- refused with `call_exists` otherwise (also when its prospect is still to be created: a new
  prospect is never the prospect of a call recorded before).

A call whose id appears earlier in the same batch is compared with that earlier call's content
(a prospect still to be created compared by its dedupe key). Any other call is `created`, and a
prospect it lands on that is still to be created is owned by the first such call's user.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence

from store.ingest import (
    CREATED,
    EXISTING,
    NewCall,
    Recorded,
    References,
    Refusal,
    Refused,
    exists,
    reference_refusals,
)
from store.prospects import Candidate


@dataclasses.dataclass(frozen=True)
class Earlier:
    """A call recorded before under an id a call of the write converges on."""

    content_hash: str | None
    created_with: str | None = None  # the request mark it was written with (MongoDB)


@dataclasses.dataclass(frozen=True)
class ResolvedProspect:
    """The prospect a call given by contact resolved to: an existing one (`prospect_id`), or one
    still to be created (`prospect_id` None) under the dedupe key `key`."""

    prospect_id: str | None
    key: str


@dataclasses.dataclass
class Classified:
    """The decision for each call that was not refused before: CREATED, EXISTING or a
    Refusal; and the owner (user id) of each prospect still to be created, by dedupe key."""

    outcomes: dict[int, str | Refusal]
    owners: dict[str, str | None]

    @property
    def written(self) -> list[int]:
        """The calls the write records (created or existing), in order."""
        return [i for i, o in sorted(self.outcomes.items()) if not isinstance(o, Refusal)]

    @property
    def refusals(self) -> list[tuple[int, Refusal]]:
        return [(i, o) for i, o in sorted(self.outcomes.items()) if isinstance(o, Refusal)]


def classify_calls(
    calls: Sequence[NewCall],
    ids: Sequence[str],
    resolved: Mapping[int, ResolvedProspect],
    earlier: Mapping[str, Earlier],
    *,
    marks: Sequence[str] | None = None,
    refused: Collection[int] = (),
    batch: bool = False,
) -> Classified:
    """Classify `calls` (ids `ids`; `resolved` of those given by contact, by index; `earlier`
    the calls recorded before among their ids; `marks` the request's marks when it has an
    Idempotency-Key), leaving out the indexes in `refused`. A refusal names its index in a
    `batch`."""
    outcomes: dict[int, str | Refusal] = {}
    owners: dict[str, str | None] = {}
    pending: dict[str, str] = {}  # id -> content of a call this write creates
    for index, call in enumerate(calls):
        if index in refused:
            continue
        resolved_to = resolved.get(index)
        prospect_id = call.prospect_id or (resolved_to.prospect_id if resolved_to else None)
        token = prospect_id or f"new:{resolved_to.key if resolved_to else ''}"
        call_id = ids[index]
        found = earlier.get(call_id)
        if found is not None and marks and found.created_with == marks[index]:
            pending.setdefault(call_id, call.content_hash(token))  # an earlier attempt's
            outcomes[index] = CREATED
            continue
        if found is not None:
            same = prospect_id is not None and found.content_hash == call.content_hash(prospect_id)
        elif call_id in pending:  # the same id earlier in this batch
            same = pending[call_id] == call.content_hash(token)
        else:
            pending[call_id] = call.content_hash(token)
            outcomes[index] = CREATED
            if resolved_to is not None and resolved_to.prospect_id is None:
                owners.setdefault(resolved_to.key, call.user_id)
            continue
        outcomes[index] = EXISTING if same else exists(call_id, index if batch else None)
    return Classified(outcomes, owners)


class Recording:
    """The outcomes of one recording write as it decides them: `results` by index (None while
    undecided); a refusal raises Refused unless the write is `partial` (the import), which
    keeps it as the call's result. A refusal names its index in a batch (`batch`)."""

    def __init__(self, calls: Sequence[NewCall], partial: bool) -> None:
        self.calls = calls
        self.partial = partial
        self.batch = len(calls) > 1 or partial
        self.results: list[Recorded | None] = [None] * len(calls)

    def refuse(self, index: int, refusal: Refusal) -> None:
        if not self.partial:
            raise Refused(refusal)
        self.results[index] = Recorded(None, None, refusal=refusal)

    def check_references(self, found: References) -> None:
        """Refuse the calls that name a record that is not usable (`found`: the usable ones)."""
        for index, refusal in reference_refusals(list(self.calls), found, self.batch):
            self.refuse(index, refusal)

    def classify(
        self,
        ids: Sequence[str],
        prospect_of: Mapping[int, Candidate],
        earlier: Mapping[str, Earlier],
        marks: Sequence[str] | None,
    ) -> dict[str, str | None]:
        """classify_calls over the calls not refused yet (`prospect_of`: the prospect each call
        given by contact resolved to); each outcome goes into `results`. The owners of the
        prospects still to be created, by dedupe key."""
        classified = classify_calls(
            self.calls,
            ids,
            {i: ResolvedProspect(t.id, t.key) for i, t in prospect_of.items()},
            earlier,
            marks=marks,
            refused=[i for i, r in enumerate(self.results) if r is not None],
            batch=self.batch,
        )
        for index, outcome in classified.outcomes.items():
            if isinstance(outcome, Refusal):
                self.refuse(index, outcome)
            else:
                self.results[index] = Recorded(None, outcome)
        return classified.owners
