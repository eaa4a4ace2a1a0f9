"""The store's clock: naive UTC to the millisecond (BSON's precision), the same instant as the
standard library's clock."""

import datetime as dt

from store.clock import utcnow


def test_utcnow_is_naive_utc_to_the_millisecond():
    for _ in range(1000):
        before = dt.datetime.now(dt.UTC).replace(tzinfo=None)
        now = utcnow()
        after = dt.datetime.now(dt.UTC).replace(tzinfo=None)
        assert now.tzinfo is None
        assert now.microsecond % 1000 == 0
        assert before - dt.timedelta(milliseconds=1) < now <= after
