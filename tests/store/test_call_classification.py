"""Which recorded calls are new, already recorded or refused (store.classify.classify_calls):
the one rule both backends apply, as a table. Each row: the calls of one write (by SID, or by
prospect id and contact), what the backend found recorded before, and the expected outcome of
each call (C created, E existing, X refused with call_exists, - refused before)."""

import datetime as dt

import pytest

from store.classify import Earlier, Recording, ResolvedProspect, classify_calls
from store.ingest import CREATED, EXISTING, NewCall, References, Refusal, Refused, call_ids

WS = "ws-1"
AT = dt.datetime(2026, 1, 5, 9, 0)


def call(sid: str | None = "ca1", notes: str | None = None, prospect: str | None = "p1", **kw):
    return NewCall(
        user_id=kw.pop("user", "u1"),
        direction="outbound",
        disposition="connected",
        from_number="+15550000001",
        to_number="+15550000002",
        started_at=AT,
        ended_at=AT + dt.timedelta(minutes=2),
        prospect_id=prospect,
        notes=notes,
        sid=sid,
        **kw,
    )


def recorded(c: NewCall, prospect: str = "p1", created_with: str | None = None) -> Earlier:
    return Earlier(c.content_hash(prospect), created_with)


def codes(classified, count: int) -> str:
    out = []
    for index in range(count):
        outcome = classified.outcomes.get(index)
        if outcome is None:
            out.append("-")
        elif isinstance(outcome, Refusal):
            assert outcome.code == "call_exists"
            out.append("X")
        else:
            out.append({CREATED: "C", EXISTING: "E"}[outcome])
    return "".join(out)


CASES = {
    # name: (calls, earlier by call index -> Earlier maker, resolved, refused, expected)
    "new SID": ([call()], {}, {}, (), "C"),
    "same SID, same content": ([call()], {0: lambda c: recorded(c)}, {}, (), "E"),
    "same SID, other content": ([call()], {0: lambda c: recorded(call(notes="x"))}, {}, (), "X"),
    "same SID, other prospect": (
        [call()],
        {0: lambda c: recorded(c, prospect="p2")},
        {},
        (),
        "X",
    ),
    "same SID twice in a batch": ([call(), call()], {}, {}, (), "CE"),
    "same SID twice, other content": ([call(), call(notes="x")], {}, {}, (), "CX"),
    "two SIDs": ([call("ca1"), call("ca2")], {}, {}, (), "CC"),
    "refused before": ([call("ca1"), call("ca2")], {}, {}, (0,), "-C"),
    "no SID": ([call(None), call(None)], {}, {}, (), "CC"),
    "by contact, new prospect": (
        [call(prospect=None)],
        {},
        {0: ResolvedProspect(None, "k1")},
        (),
        "C",
    ),
    "by contact, recorded with a prospect, now new": (
        [call(prospect=None)],
        {0: lambda c: recorded(c)},
        {0: ResolvedProspect(None, "k1")},
        (),
        "X",
    ),
    "by contact, recorded with the prospect it lands on": (
        [call(prospect=None)],
        {0: lambda c: recorded(c, prospect="p9")},
        {0: ResolvedProspect("p9", "k1")},
        (),
        "E",
    ),
    "by contact twice, one new prospect": (
        [call(prospect=None), call(prospect=None)],
        {},
        {0: ResolvedProspect(None, "k1"), 1: ResolvedProspect(None, "k1")},
        (),
        "CE",
    ),
    "by contact twice, two new prospects": (
        [call(prospect=None), call(prospect=None)],
        {},
        {0: ResolvedProspect(None, "k1"), 1: ResolvedProspect(None, "k2")},
        (),
        "CX",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_classification(name):
    calls, earlier_of, resolved, refused, expected = CASES[name]
    ids = call_ids(WS, calls, None)
    earlier = {ids[i]: make(calls[i]) for i, make in earlier_of.items()}
    classified = classify_calls(calls, ids, resolved, earlier, refused=refused, batch=True)
    assert codes(classified, len(calls)) == expected
    assert classified.written == [i for i, c in enumerate(expected) if c in "CE"]


def test_a_refusal_names_the_call_and_its_index_only_in_a_batch():
    calls = [call(notes="x")]
    ids = call_ids(WS, calls, None)
    earlier = {ids[0]: recorded(call())}
    single = classify_calls(calls, ids, {}, earlier)
    batch = classify_calls(calls, ids, {}, earlier, batch=True)
    ((_, alone),) = single.refusals
    ((_, in_batch),) = batch.refusals
    assert (alone.index, alone.call_id, alone.pointer()) == (None, ids[0], "#/providerCallSid")
    assert (in_batch.index, in_batch.pointer()) == (0, "#/calls/0/providerCallSid")


def test_a_call_an_earlier_attempt_of_the_request_wrote_is_created():
    """MongoDB writes the calls before the response: the retry of a request cut short finds
    its own calls (createdWith its marks) and answers as the first attempt would have."""
    calls = [call(sid=None), call()]
    marks = ["m0", "m1"]
    ids = call_ids(WS, calls, marks)
    mine = {ids[0]: recorded(calls[0], created_with="m0"), ids[1]: recorded(calls[1], "p1", "m1")}
    assert codes(classify_calls(calls, ids, {}, mine, marks=marks), 2) == "CC"
    # Another request's (other marks) with the same content: existing; other content: refused.
    other = {ids[0]: recorded(calls[0], created_with="n0"), ids[1]: recorded(call(notes="y"))}
    assert codes(classify_calls(calls, ids, {}, other, marks=marks), 2) == "EX"


def test_the_first_call_of_a_new_prospect_owns_it():
    calls = [call(prospect=None, user="u2"), call("ca2", prospect=None, user="u3")]
    ids = call_ids(WS, calls, None)
    resolved = {0: ResolvedProspect(None, "k1"), 1: ResolvedProspect(None, "k1")}
    assert classify_calls(calls, ids, resolved, {}).owners == {"k1": "u2"}
    existing = {0: ResolvedProspect("p5", "k1"), 1: ResolvedProspect(None, "k2")}
    assert classify_calls(calls, ids, existing, {}).owners == {"k2": "u3"}


def test_a_recording_raises_the_first_refusal_unless_partial():
    calls = [call("ca1"), call("ca2", notes="x")]
    ids = call_ids(WS, calls, None)
    earlier = {ids[1]: recorded(call("ca2"))}
    whole = Recording(calls, partial=False)
    with pytest.raises(Refused) as refused:
        whole.classify(ids, {}, earlier, None)
    assert (refused.value.refusal.code, refused.value.refusal.index) == ("call_exists", 1)
    partial = Recording(calls, partial=True)
    partial.check_references(References({"u1"}, {"p1"}, set()))
    assert partial.classify(ids, {}, earlier, None) == {}
    assert [r.outcome for r in partial.results] == [CREATED, None]
    assert partial.results[1].refusal.code == "call_exists"
    unknown = Recording([call(user="u9")], partial=False)
    with pytest.raises(Refused) as refused:
        unknown.check_references(References({"u1"}, {"p1"}, set()))
    assert (refused.value.refusal.field, refused.value.refusal.index) == ("userId", None)
