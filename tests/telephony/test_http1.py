"""The provider client's HTTP/1.1 response parser (telephony/http1.py), on its own: tables of
status lines, fields, framings and bad inputs, then fuzzing with arbitrary bytes in arbitrary
splits. Every case is parsed whole, a byte at a time and in uneven pieces: the events and the
verdict must not depend on how the bytes arrived."""

from __future__ import annotations

import itertools
import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from telephony.http1 import (
    MAX_HEAD_BYTES,
    MAX_LINE_BYTES,
    ParseError,
    ResponseHead,
    ResponseParser,
    content_length,
)

# `WSAPI_FUZZ_EXAMPLES=100000 python -m pytest tests/telephony/test_http1.py` fuzzes longer.
FUZZ_EXAMPLES = int(os.environ.get("WSAPI_FUZZ_EXAMPLES", "1000"))
FUZZ = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,  # the alarm below is the time limit; hypothesis' deadline only reports
    database=None,  # failures found are kept as table cases, not in a local directory
    suppress_health_check=[HealthCheck.too_slow],
)


@dataclass
class Outcome:
    """What a parser told its sink, with the body pieces joined, and how it stopped."""

    heads: list[tuple[str, int, str, list[tuple[str, str]]]] = field(default_factory=list)
    body: bytes = b""
    ends: list[bool] = field(default_factory=list)  # each end's `reusable`
    error: str | None = None

    @property
    def head(self) -> tuple[str, int, str, list[tuple[str, str]]]:
        [head] = self.heads
        return head


class Recorder:
    """A sink that records everything (and reads every body unless told otherwise)."""

    def __init__(self, outcome: Outcome, read_body: bool = True):
        self.outcome = outcome
        self.read_body = read_body

    def on_head(self, head: ResponseHead) -> bool:
        self.outcome.heads.append(
            (head.version, head.code, head.reason, sorted(head.headers.get_all()))
        )
        return self.read_body

    def on_body(self, piece: bytes) -> None:
        assert piece and isinstance(piece, bytes)
        self.outcome.body += piece

    def on_end(self, reusable: bool) -> None:
        self.outcome.ends.append(reusable)


def run(
    pieces: list[bytes],
    *,
    method: str = "GET",
    eof: bool = False,
    read_body: bool = True,
    **limits: int,
) -> Outcome:
    outcome = Outcome()
    parser = ResponseParser(Recorder(outcome, read_body), **limits)
    parser.start(method)
    try:
        for piece in pieces:
            parser.feed(piece)
        if eof:
            parser.eof()
    except ParseError as exc:
        outcome.error = str(exc)
    return outcome


def splits(data: bytes) -> Iterator[list[bytes]]:
    """The same bytes whole, a byte at a time, and in pieces of a few uneven sizes."""
    yield [data]
    yield [data[i : i + 1] for i in range(len(data))]
    for size in (2, 3, 7, 64):
        yield [data[i : i + size] for i in range(0, len(data), size)]
    yield [b"", data[:5], b"", data[5:]]


def parse(data: bytes, **options) -> Outcome:
    """The outcome of `data`, checked to be the same for every split."""
    outcomes = [run(pieces, **options) for pieces in splits(data)]
    for other in outcomes[1:]:
        assert (other.heads, other.body, other.ends, other.error is None) == (
            outcomes[0].heads,
            outcomes[0].body,
            outcomes[0].ends,
            outcomes[0].error is None,
        )
    return outcomes[0]


def crlf(text: str) -> bytes:
    return text.replace("\n", "\r\n").encode("latin-1")


OK = "HTTP/1.1 200 OK\n"


# --- status lines ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line, version, code, reason",
    [
        ("HTTP/1.1 200 OK", "HTTP/1.1", 200, "OK"),
        ("HTTP/1.0 200 OK", "HTTP/1.0", 200, "OK"),
        ("HTTP/1.1 206 Partial Content", "HTTP/1.1", 206, "Partial Content"),
        ("HTTP/1.1 404 Not Found", "HTTP/1.1", 404, "Not Found"),
        ("HTTP/1.1 200 ", "HTTP/1.1", 200, ""),  # an empty reason phrase is valid
        ("HTTP/1.1 200", "HTTP/1.1", 200, ""),  # and so, leniently, is none at all
        ("HTTP/1.1 200 \tall\tfine ", "HTTP/1.1", 200, "\tall\tfine "),
        ("HTTP/1.1 200 d\xe9j\xe0 vu", "HTTP/1.1", 200, "d\xe9j\xe0 vu"),  # obs-text
        ("HTTP/1.1 599 Whatever", "HTTP/1.1", 599, "Whatever"),
        ("HTTP/1.1 999 Odd", "HTTP/1.1", 999, "Odd"),  # any three digits; the client judges
    ],
)
def test_status_lines(line, version, code, reason) -> None:
    outcome = parse(crlf(f"{line}\nContent-Length: 0\n\n"))
    assert outcome.head[:3] == (version, code, reason)
    assert outcome.error is None and len(outcome.ends) == 1


@pytest.mark.parametrize(
    "line",
    [
        "",
        "HTTP/2 200 OK",
        "HTTP/2.0 200 OK",
        "HTTP/1 200 OK",
        "HTTP/1.1",
        "HTTP/1.1 ",
        "HTTP/1.1 20 OK",
        "HTTP/1.1 2000 OK",
        "HTTP/1.1 2OO OK",
        "HTTP/1.1 -20 OK",
        "HTTP/1.1 \xb2\xb2\xb2 OK",  # superscript digits are not digits
        "HTTP/1.1  200 OK",
        "HTTP/1.1\t200 OK",
        " HTTP/1.1 200 OK",
        "http/1.1 200 OK",
        "HTTPS/1.1 200 OK",
        "ICY 200 OK",
        "HTTP/1.1 200 OK\x00",
        "HTTP/1.1 200 O\x7fK",
        "HTTP/1.1 200 OK\r",  # a CR of its own, besides the line end's
        "GET / HTTP/1.1",
    ],
)
def test_bad_status_lines(line) -> None:
    outcome = parse(line.encode("latin-1") + b"\r\nContent-Length: 0\r\n\r\n")
    assert outcome.error and outcome.heads == [] and outcome.ends == []


def test_interim_answers_are_skipped() -> None:
    outcome = parse(
        crlf(
            "HTTP/1.1 100 Continue\n\n"
            "HTTP/1.1 103 Early Hints\nLink: </a.css>; rel=preload\n\n"
            f"{OK}Content-Length: 3\n\nabc"
        )
    )
    assert [head[1] for head in outcome.heads] == [200]
    assert outcome.body == b"abc" and outcome.ends == [True]


# --- fields --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields, expected",
    [
        ("Content-Type: audio/mpeg\n", [("Content-Type", "audio/mpeg")]),
        ("content-TYPE: audio/mpeg\n", [("Content-Type", "audio/mpeg")]),  # names normalised
        ("X-A:   spaced out \t\n", [("X-A", "spaced out")]),  # surrounding whitespace trimmed
        ("X-A:\n", [("X-A", "")]),  # an empty value
        ("X-A: 1\nX-A: 2\n", [("X-A", "1"), ("X-A", "2")]),  # repeated fields kept
        ("X-A: caf\xe9\n", [("X-A", "caf\xe9")]),  # obs-text in a value
        ("X-A: a:b:c\n", [("X-A", "a:b:c")]),
        ("!#$%&'*+-.^_`|~09aZ: token\n", [("!#$%&'*+-.^_`|~09az", "token")]),
    ],
)
def test_fields(fields, expected) -> None:
    outcome = parse(crlf(f"{OK}{fields}Content-Length: 0\n\n"))
    assert outcome.error is None
    assert outcome.head[3] == sorted([*expected, ("Content-Length", "0")])


def test_line_ends_may_be_bare_lf_or_mixed() -> None:
    for data in (
        b"HTTP/1.1 200 OK\nX-A: 1\nContent-Length: 2\n\nhi",
        b"HTTP/1.1 200 OK\r\nX-A: 1\nContent-Length: 2\r\n\nhi",
        b"HTTP/1.1 200 OK\nX-A: 1\r\nContent-Length: 2\n\r\nhi",
    ):
        outcome = parse(data)
        assert outcome.head[3] == [("Content-Length", "2"), ("X-A", "1")]
        assert outcome.body == b"hi" and outcome.ends == [True]


@pytest.mark.parametrize(
    "fields",
    [
        "X-A: 1\n  continued\n",  # obs-fold
        "X-A: 1\n\tcontinued\n",
        " X-A: 1\n",  # whitespace before the first field
        "X-A 1\n",  # no colon
        ": value\n",  # no name
        "X A: 1\n",  # a space in the name
        "X-A : 1\n",  # a space before the colon
        "X(A): 1\n",  # a separator in the name
        "X\xe9: 1\n",  # a non-token name
        "X-A: a\x00b\n",  # control characters in values
        "X-A: a\x01b\n",
        "X-A: a\x7fb\n",
        "X-A: a\rb\n",  # a lone CR
        "X-A: 1\r\r\n",  # a CR besides the line end's
    ],
)
def test_bad_fields(fields) -> None:
    outcome = parse(crlf(OK) + fields.encode("latin-1") + b"Content-Length: 0\r\n\r\n")
    assert outcome.error and outcome.heads == [] and outcome.ends == []


# --- keep-alive --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "head, reusable",
    [
        ("HTTP/1.1 200 OK\nContent-Length: 1\n", True),
        ("HTTP/1.1 200 OK\nContent-Length: 1\nConnection: keep-alive\n", True),
        ("HTTP/1.1 200 OK\nContent-Length: 1\nConnection: close\n", False),
        ("HTTP/1.1 200 OK\nContent-Length: 1\nConnection: Upgrade, Close\n", False),
        ("HTTP/1.0 200 OK\nContent-Length: 1\n", False),
        ("HTTP/1.0 200 OK\nContent-Length: 1\nConnection: keep-alive\n", False),
    ],
)
def test_keep_alive(head, reusable) -> None:
    outcome = parse(crlf(head + "\n") + b"x")
    assert outcome.body == b"x" and outcome.ends == [reusable]


# --- Content-Length ----------------------------------------------------------------------------


@pytest.mark.parametrize("length", ["0", "1", "5", "00005", " 5 ", "999999999999999999"])
def test_content_length_values(length) -> None:
    assert content_length(length.strip()) == int(length)
    outcome = parse(crlf(f"{OK}Content-Length: {length}\n\n"))
    assert outcome.error is None and len(outcome.heads) == 1
    assert outcome.ends == ([True] if int(length) == 0 else [])


@pytest.mark.parametrize(
    "length",
    [
        "",
        "+5",
        "-1",
        "5 5",
        "5,5",  # a repeated Content-Length (the fields are joined)
        "0x10",
        "1e3",
        "5.0",
        "\xb2",  # superscript two: str.isdigit() says yes, int() says no
        "\u0665",  # an Arabic-Indic five (never in latin-1 heads, but content_length takes str)
        "1" * 19,
        "1" * 5000,  # int() refuses strings over 4300 digits with ValueError
    ],
)
def test_bad_content_lengths(length) -> None:
    with pytest.raises(ParseError):
        content_length(length)
    field = f"Content-Length: {length}\r\n\r\n"
    if max(field) <= "\xff":  # what a head can hold
        outcome = parse(crlf(OK) + field.encode("latin-1"))
        assert outcome.error and outcome.ends == []


def test_repeated_content_length_fields_are_refused() -> None:
    outcome = parse(crlf(f"{OK}Content-Length: 3\nContent-Length: 3\n\nabc"))
    assert outcome.error and outcome.body == b""


def test_content_length_body() -> None:
    outcome = parse(crlf(f"{OK}Content-Length: 10\n\n") + b"0123456789")
    assert outcome.body == b"0123456789" and outcome.ends == [True]


@pytest.mark.parametrize("eof", [False, True])
def test_content_length_body_cut_short(eof) -> None:
    outcome = parse(crlf(f"{OK}Content-Length: 10\n\n") + b"01234", eof=eof)
    assert outcome.body == b"01234" and outcome.ends == []
    assert (outcome.error is not None) == eof


def test_bytes_after_the_response_are_an_error() -> None:
    outcome = parse(crlf(f"{OK}Content-Length: 2\n\n") + b"hiX")
    # The response itself was complete; the error comes right after its end.
    assert outcome.body == b"hi" and outcome.ends == [True]
    assert outcome.error == "bytes after the response"


def test_a_second_response_nobody_asked_for_is_an_error() -> None:
    one = crlf(f"{OK}Content-Length: 2\n\nhi")
    outcome = parse(one + one)
    assert outcome.body == b"hi" and len(outcome.heads) == 1 and outcome.error


@pytest.mark.parametrize(
    "method, head",
    [
        ("HEAD", f"{OK}Content-Length: 100\n"),
        ("HEAD", f"{OK}Transfer-Encoding: chunked\n"),
        ("HEAD", OK),
        ("GET", "HTTP/1.1 204 No Content\n"),
        ("GET", "HTTP/1.1 304 Not Modified\nContent-Length: 100\n"),
    ],
)
def test_answers_without_a_body(method, head) -> None:
    outcome = parse(crlf(head + "\n"), method=method)
    assert outcome.body == b"" and outcome.ends == [True] and outcome.error is None


def test_a_body_the_sink_declines_ends_the_response() -> None:
    outcome = parse(crlf("HTTP/1.1 404 Not Found\nContent-Length: 0\n\n"), read_body=False)
    assert outcome.ends == [False] and outcome.error is None
    outcome = parse(crlf("HTTP/1.1 404 Not Found\nContent-Length: 4\n\nnope"), read_body=False)
    assert outcome.ends == [False] and outcome.body == b"" and outcome.error


def test_body_received_elsewhere() -> None:
    """A Content-Length body may skip the parser (the connection's lent buffers)."""
    outcome = Outcome()
    parser = ResponseParser(Recorder(outcome))
    parser.start("GET")
    parser.feed(crlf(f"{OK}Content-Length: 10\n\n"))
    assert (parser.mode, parser.remaining, bytes(parser.buffer)) == ("length", 10, b"")
    parser.body_received(4)
    assert outcome.ends == [] and parser.remaining == 6
    parser.feed(b"45")  # then some through the parser again
    parser.body_received(4)
    assert outcome.body == b"45" and outcome.ends == [True] and parser.mode == "done"


# --- close-delimited bodies ----------------------------------------------------------------------


def test_close_delimited_body() -> None:
    outcome = parse(crlf(f"{OK}Content-Type: audio/mpeg\n\n") + b"all of it", eof=True)
    assert outcome.body == b"all of it" and outcome.ends == [False] and outcome.error is None
    # Until the connection closes, the body has not ended.
    outcome = parse(crlf(f"{OK}\n") + b"some")
    assert outcome.body == b"some" and outcome.ends == []


@pytest.mark.parametrize("state", ["nothing", "part of a head", "a head", "a chunked body"])
def test_eof_before_the_end_is_an_error(state) -> None:
    data = {
        "nothing": b"",
        "part of a head": b"HTTP/1.1 200 OK\r\nContent-Le",
        "a head": crlf(f"{OK}Content-Length: 5\n\n"),
        "a chunked body": crlf(f"{OK}Transfer-Encoding: chunked\n\n5\nhello\n"),
    }[state]
    outcome = parse(data, eof=True)
    assert outcome.error and outcome.ends == []


def test_bytes_before_any_request_are_an_error() -> None:
    parser = ResponseParser(Recorder(Outcome()))
    parser.feed(b"")
    parser.eof()
    with pytest.raises(ParseError):
        parser.feed(b"HTTP/1.1 200 OK\r\n\r\n")


# --- chunked bodies ------------------------------------------------------------------------------

CHUNKED = f"{OK}Transfer-Encoding: chunked\n\n"


@pytest.mark.parametrize(
    "body, expected",
    [
        (b"5\r\nhello\r\n0\r\n\r\n", b"hello"),
        (b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", b"hello world"),
        (b"0\r\n\r\n", b""),
        (b"a\r\n0123456789\r\nA\r\nabcdefghij\r\n0\r\n\r\n", b"0123456789abcdefghij"),
        (b"000005\r\nhello\r\n000\r\n\r\n", b"hello"),  # leading zeros
        (b"fffffffffffffff\r\nab", None),  # 15 hex digits: the most, and the body goes on
        (b"5\nhello\n0\n\n", b"hello"),  # bare LF line ends
        (b"5\r\nhello\n0\r\n\r\n", b"hello"),
        # chunk extensions are read over and ignored
        (b"5;name=value\r\nhello\r\n0;last\r\n\r\n", b"hello"),
        (b'5 ;a=1;b="x y"\r\nhello\r\n0\r\n\r\n', b"hello"),
        (b"5\t;\r\nhello\r\n0\r\n\r\n", b"hello"),
        (b"5;\xff\x80\r\nhello\r\n0\r\n\r\n", b"hello"),
        # trailers are checked as fields and dropped
        (b"5\r\nhello\r\n0\r\nExpires: never\r\n\r\n", b"hello"),
        (b"5\r\nhello\r\n0\r\nA: 1\r\nB: 2\nC:\r\n\r\n", b"hello"),
    ],
)
def test_chunked_bodies(body, expected) -> None:
    outcome = parse(crlf(CHUNKED) + body)
    assert outcome.error is None
    if expected is None:
        assert outcome.ends == [] and outcome.body == b"ab"
    else:
        assert outcome.body == expected and outcome.ends == [True]


@pytest.mark.parametrize(
    "codings, chunked",
    [
        ("chunked", True),
        ("Chunked", True),
        ("gzip, chunked", True),
        ("gzip,chunked", True),
        ("chunked, gzip", False),  # chunked only as the last coding; else the close ends it
        ("gzip", False),
        ("", False),
    ],
)
def test_transfer_codings(codings, chunked) -> None:
    head = f"{OK}Transfer-Encoding: {codings}\nContent-Length: 100\n\n"  # the length is ignored
    outcome = parse(crlf(head) + b"3\r\nabc\r\n0\r\n\r\n", eof=True)
    assert outcome.error is None
    if chunked:
        assert outcome.body == b"abc" and outcome.ends == [True]
    else:
        assert outcome.body == b"3\r\nabc\r\n0\r\n\r\n" and outcome.ends == [False]


@pytest.mark.parametrize(
    "body",
    [
        b"\r\nhello\r\n0\r\n\r\n",  # no size
        b"g\r\nhello\r\n0\r\n\r\n",
        b" 5\r\nhello\r\n0\r\n\r\n",  # whitespace before the size
        b"-5\r\nhello\r\n0\r\n\r\n",
        b"+5\r\nhello\r\n0\r\n\r\n",
        b"0x5\r\nhello\r\n0\r\n\r\n",
        b"5 5\r\nhello\r\n0\r\n\r\n",
        b"5\r\r\nhello\r\n0\r\n\r\n",
        b"5;a\rb\r\nhello\r\n0\r\n\r\n",  # a lone CR in an extension
        b"1000000000000000\r\n",  # 16 hex digits
        b"\xb2\r\nhello\r\n0\r\n\r\n",
        b"5\r\nhelloX\r\n0\r\n\r\n",  # more data than the size said
        b"5\r\nhello\rX0\r\n\r\n",
        b"5\r\nhello0\r\n\r\n",  # no line end after the data
        b"5\r\nhello\r\n0\r\nno colon\r\n\r\n",  # bad trailers
        b"5\r\nhello\r\n0\r\nA: 1\r\n folded\r\n\r\n",
        b"5\r\nhello\r\n0\r\nA: \x00\r\n\r\n",
        b"5\r\nhello\r\n0\r\n \r\n",
        b"5\r\nhello\r\n0\r\n\r\nX",  # bytes after the last chunk
    ],
)
def test_bad_chunked_bodies(body) -> None:
    outcome = parse(crlf(CHUNKED) + body)
    assert outcome.error


# --- limits --------------------------------------------------------------------------------------


def test_head_limit() -> None:
    def head(size: int) -> bytes:
        base = crlf(f"{OK}Content-Length: 0\nX-Pad: \n\n")
        return base.replace(b"X-Pad: ", b"X-Pad: " + b"p" * (size - len(base)))

    assert len(head(MAX_HEAD_BYTES)) == MAX_HEAD_BYTES
    assert parse(head(MAX_HEAD_BYTES)).ends == [True]
    outcome = parse(head(MAX_HEAD_BYTES + 1))
    assert outcome.error == "response head too large" and outcome.heads == []
    # A head without an end is refused as soon as it is too large, not buffered on.
    assert run([b"HTTP/1.1 200 OK\r\nX: " + b"x" * MAX_HEAD_BYTES]).error
    # Each interim head has the limit to itself.
    interim = crlf("HTTP/1.1 100 Continue\n\n")
    assert parse(interim * 20 + head(MAX_HEAD_BYTES)).ends == [True]


@pytest.mark.parametrize("limit", [10, 64, 300])
def test_small_head_limits(limit) -> None:
    data = crlf("HTTP/1.1 200 OK\nContent-Length: 0\n\n")
    outcome = parse(data, max_head_bytes=limit)
    assert (outcome.error is None) == (len(data) <= limit)


def test_chunk_size_line_limit() -> None:
    def chunk(line_bytes: int) -> bytes:  # a chunk-size line of this length, its CRLF included
        return b"5;" + b"e" * (line_bytes - 4) + b"\r\nhello\r\n0\r\n\r\n"

    assert parse(crlf(CHUNKED) + chunk(MAX_LINE_BYTES)).body == b"hello"
    assert parse(crlf(CHUNKED) + chunk(MAX_LINE_BYTES + 1)).error == "chunk-size line too long"
    assert run([crlf(CHUNKED) + b"5;" + b"e" * MAX_LINE_BYTES]).error
    assert parse(crlf(CHUNKED) + chunk(40), max_line_bytes=40).body == b"hello"
    assert parse(crlf(CHUNKED) + chunk(41), max_line_bytes=40).error


def test_trailer_limit() -> None:
    def trailers(total: int) -> bytes:  # a trailer section of this many bytes, blank line in
        return b"0\r\nX: " + b"t" * (total - 7) + b"\r\n\r\n"

    assert len(trailers(MAX_HEAD_BYTES)) == MAX_HEAD_BYTES + 3
    assert parse(crlf(CHUNKED) + trailers(MAX_HEAD_BYTES)).ends == [True]
    assert parse(crlf(CHUNKED) + trailers(MAX_HEAD_BYTES + 1)).error == "trailer section too large"
    many = b"0\r\n" + b"X: 1\r\n" * (MAX_HEAD_BYTES // 6 + 1) + b"\r\n"
    assert parse(crlf(CHUNKED) + many).error == "trailer section too large"


# --- fuzzing -------------------------------------------------------------------------------------


class Hang(Exception):
    pass


def within_a_second(pieces: list[bytes], **options) -> Outcome:
    """`run`, failing the test when the parser spends more than a second of this process's CPU
    time (a hang: a loop that never ends burns CPU). CPU time, not the wall clock, so a busy
    machine that leaves this process waiting for a core is no hang."""

    def alarm(signum, frame):
        raise Hang(f"the parser hung on {pieces!r}")

    previous = signal.signal(signal.SIGPROF, alarm)
    signal.setitimer(signal.ITIMER_PROF, 1.0)
    try:
        return run(pieces, **options)
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def cut(data: bytes, points: list[int]) -> list[bytes]:
    """`data` split at `points` (any integers: taken modulo its length, in order)."""
    bounds = sorted({point % (len(data) + 1) for point in points} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


def check(data: bytes, points: list[int], method: str, eof: bool, **limits: int) -> Outcome:
    """Parsing `data` in the pieces `points` make raises nothing but ParseError, ends, and
    tells what parsing it whole tells."""
    whole = within_a_second([data], method=method, eof=eof, **limits)
    split = within_a_second(cut(data, points), method=method, eof=eof, **limits)
    assert (split.heads, split.body, split.ends, split.error is None) == (
        whole.heads,
        whole.body,
        whole.ends,
        whole.error is None,
    )
    assert len(whole.heads) <= 1 and len(whole.ends) <= 1
    return whole


# The default limits, or small ones that short inputs reach (where a limit's checks sit).
LIMITS = st.one_of(
    st.just({}),
    st.fixed_dictionaries(
        {"max_head_bytes": st.integers(1, 200), "max_line_bytes": st.integers(1, 24)}
    ),
)


@FUZZ
@given(
    data=st.binary(max_size=2048),
    points=st.lists(st.integers(min_value=0), max_size=20),
    method=st.sampled_from(["GET", "HEAD"]),
    eof=st.booleans(),
    limits=LIMITS,
)
def test_fuzz_arbitrary_bytes(data, points, method, eof, limits) -> None:
    check(data, points, method, eof, **limits)


@pytest.mark.parametrize(
    "data, points, limits",
    [
        # Found by fuzzing the parser as it was before this module (with a small limit): a
        # head over the limit was refused when it came in pieces and accepted when it came
        # whole. A chunk-size line had the same flaw (found reading the code).
        (
            b"HTTP/1.0 206 Partial\r\nContent-Type: gzip, chunked\r\nContent-Type: gzip, "
            b"chunked\r\nContent-Type: \xe0\xda\xfe\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            [35, 114],
            {"max_head_bytes": 100},
        ),
        (crlf(CHUNKED) + b"5;ext=long\r\nhello\r\n0\r\n\r\n", [55], {"max_line_bytes": 11}),
        # Found reading the code, and by test_fuzz_framing_fields once put back: "\xb2".isdigit()
        # is true and int("\xb2") raises ValueError; so does int() of over 4300 digits.
        (b"HTTP/1.1 200 OK\r\nContent-Length: \xb2\r\n\r\n", [], {}),
        (b"HTTP/1.1 200 OK\r\nContent-Length: " + b"1" * 5000 + b"\r\n\r\nx", [], {}),
    ],
)
def test_found_by_fuzzing(data, points, limits) -> None:
    assert check(data, points, "GET", False, **limits).error


def field_lines() -> st.SearchStrategy[bytes]:
    name = st.sampled_from(
        [b"Content-Type", b"Content-Length", b"Transfer-Encoding", b"Connection", b"X-A", b"x"]
    )
    byte = st.integers(0, 255).map(lambda b: bytes([b]))
    value = st.one_of(
        st.sampled_from([b"0", b"5", b"chunked", b"close", b"audio/mpeg", b"gzip, chunked"]),
        st.binary(max_size=12),
        byte,  # e.g. a digit that is not ASCII
        st.lists(st.one_of(st.sampled_from([b"1", b"9", b" ", b","]), byte), max_size=4).map(
            b"".join
        ),
    )
    line = st.builds(lambda n, v: n + b": " + v, name, value)
    return st.lists(st.one_of(line, st.binary(max_size=16)), max_size=5).map(
        lambda lines: b"".join(line + b"\r\n" for line in lines)
    )


def chunked_bodies() -> st.SearchStrategy[bytes]:
    chunk = st.binary(min_size=1, max_size=20).flatmap(
        lambda data: st.sampled_from(
            [b"%x\r\n" % len(data), b"%X;ext=1\r\n" % len(data), b"%x\n" % len(data)]
        ).map(lambda size: size + data + b"\r\n")
    )
    return st.builds(
        lambda chunks, trailers: b"".join(chunks) + b"0\r\n" + trailers + b"\r\n",
        st.lists(chunk, max_size=5),
        st.sampled_from([b"", b"Expires: 0\r\n", b"A: 1\r\nB: 2\r\n"]),
    )


@st.composite
def near_responses(draw) -> bytes:
    """Responses that are valid or nearly so, with bytes flipped, inserted or cut out: they
    reach far deeper into the parser than random bytes do."""
    status = draw(
        st.sampled_from(
            [
                b"HTTP/1.1 200 OK",
                b"HTTP/1.0 206 Partial",
                b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK",
                b"HTTP/1.1 404 ",
                b"HTTP/1.1 204",
            ]
        )
    )
    framing = draw(
        st.sampled_from([b"Content-Length: 10\r\n", b"Transfer-Encoding: chunked\r\n", b""])
    )
    body = draw(chunked_bodies() if b"chunked" in framing else st.binary(max_size=30))
    data = bytearray(status + b"\r\n" + draw(field_lines()) + framing + b"\r\n" + body)
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, len(data)))
        how = draw(st.sampled_from(["flip", "insert", "delete"]))
        if how == "insert":
            data[at:at] = draw(st.sampled_from([b"\r", b"\n", b"\r\n", b" ", b":", b";", b"0"]))
        elif at < len(data):
            if how == "flip":
                data[at] = draw(st.integers(0, 255))
            else:
                del data[at]
    return bytes(data)


@FUZZ
@given(
    data=near_responses(),
    points=st.lists(st.integers(min_value=0), max_size=20),
    method=st.sampled_from(["GET", "HEAD"]),
    eof=st.booleans(),
    limits=LIMITS,
)
def test_fuzz_nearly_valid_responses(data, points, method, eof, limits) -> None:
    check(data, points, method, eof, **limits)


# Values near the grammar of numbers and lists: strings of what Python calls a digit
# (str.isdigit() accepts "\xb2", int() does not), long numbers, and latin-1 that Python calls
# numeric or space mixed with hex digits, signs and separators.
LATIN1 = [chr(c) for c in range(256)]
DIGITS = [c for c in LATIN1 if c.isdigit()]
NUMERIC = [c for c in LATIN1 if c.isnumeric() or c.isspace()] + list("0123456789abcdefABCDEF+-.,;x")
FIELD_VALUES = st.one_of(
    st.text(st.sampled_from(DIGITS), min_size=1, max_size=6),
    st.integers(0, 10**25).map(str),
    st.text(st.sampled_from(NUMERIC), max_size=8),
    st.text(st.characters(max_codepoint=255, exclude_characters="\r\n"), max_size=8),
    st.sampled_from(["chunked", "gzip, chunked", "chunked, gzip", "close", "keep-alive"]),
)


@FUZZ
@given(
    name=st.sampled_from(["Content-Length", "Transfer-Encoding", "Connection"]),
    value=FIELD_VALUES,
    body=st.binary(max_size=40),
    points=st.lists(st.integers(min_value=0), max_size=10),
    eof=st.booleans(),
)
def test_fuzz_framing_fields(name, value, body, points, eof) -> None:
    """The fields that decide how a body is framed, with any value a head can carry."""
    head = f"{OK}{name}: {value}\r\n\r\n".encode("latin-1")
    check(head + body, points, "GET", eof)


@FUZZ
@given(body=chunked_bodies(), points=st.lists(st.integers(min_value=0), max_size=20))
def test_fuzz_valid_chunked_bodies_decode_in_any_split(body, points) -> None:
    expected, rest = b"", body
    while True:  # the reference decoding: sizes in hex, extensions after ';'
        line, _, rest = rest.partition(b"\n")
        size = int(line.split(b";")[0].strip(), 16)
        if size == 0:
            break
        expected += rest[:size]
        rest = rest[size + 2 :]
    outcome = check(crlf(CHUNKED) + body, points, "GET", False)
    assert outcome.error is None and outcome.body == expected and outcome.ends == [True]
