"""Performance fixes for the embedded backend (mongomock), applied when it is opened.

They change speed only, never results, so store code stays written for real MongoDB:
- `Cursor.__next__` re-sliced the whole result list for every document, so reading n
  documents cost O(n^2) (100,000 activities took over a minute) and every aggregation, which
  reads its collection through such a cursor, slowed with the collection's size. The
  replacement returns the same documents in the same order in O(1) each.
- Sorting compared every pair of values through the generic BSON comparison in Python. When
  all values of a sort key have one plain type (str, datetime, int, float), that comparison
  comes down to Python's own operator, so such keys are now sorted natively, stably, in the
  same order; any other key is sorted exactly as before.
"""

from __future__ import annotations

import datetime as dt

_applied = False
ORIGINALS: dict[str, object] = {}  # the replaced functions, for the equivalence tests
_PLAIN = (str, dt.datetime, int, float)


def _next(self):
    results = self._compute_results(with_limit_and_skip=False)
    if self._limit and self._emitted >= abs(self._limit):
        raise StopIteration
    index = self._skip + self._emitted
    if index >= len(results):
        raise StopIteration
    self._emitted += 1
    return results[index]


def _sorted_dataset(original):
    from mongomock import filtering

    def get_dataset(self, spec, sort, fields, as_class):
        if not sort or isinstance(sort, dict) or any(key.startswith("$") for key, _ in sort):
            yield from original(self, spec, sort, fields, as_class)
            return
        dataset = list(self._iter_documents(spec))
        for key, direction in reversed(sort):  # stable sorts, least significant key first
            values = [filtering.resolve_key(key, doc) for doc in dataset]
            kinds = {type(value) for value in values}
            if len(kinds) == 1 and kinds.pop() in _PLAIN:
                order = sorted(range(len(dataset)), key=values.__getitem__,
                               reverse=direction < 0)
                dataset = [dataset[i] for i in order]
            else:
                dataset = sorted(dataset, key=lambda doc, key=key:
                                 filtering.resolve_sort_key(key, doc), reverse=direction < 0)
        for document in dataset:
            yield self._copy_only_fields(document, fields, as_class)

    return get_dataset


def apply() -> None:
    """Patch mongomock once per process (idempotent)."""
    global _applied
    if _applied:
        return
    from mongomock.collection import Collection, Cursor

    ORIGINALS.update(next=Cursor.__next__, get_dataset=Collection._get_dataset)
    Cursor.__next__ = _next
    Cursor.next = _next
    Collection._get_dataset = _sorted_dataset(Collection._get_dataset)
    _applied = True
