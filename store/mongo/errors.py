"""Driver errors become store.errors at the edge of the MongoDB backend, so nothing outside
store/mongo/ knows PyMongo: an unreachable server, a server selection timeout or an operation
that outlived its time (timeoutMS) is `StoreUnavailable`; anything else the driver or the
server refuses is `StoreError`. The driver's exception stays chained as `__cause__`.

The collection families apply `translate_errors` to their class: every public coroutine and
async generator method translates what escapes it. Private helpers are left alone, so that a
method can still catch a driver error of its own helper (a duplicate key it retries)."""

from __future__ import annotations

import contextlib
import functools
import inspect
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, TypeVar

from pymongo.errors import ConnectionFailure, ExecutionTimeout, PyMongoError

from store.errors import StoreError, StoreUnavailable

T = TypeVar("T", bound=type)


URI = re.compile(r"mongodb(?:\+srv)?://\S*", re.IGNORECASE)
CREDENTIALS = re.compile(r"[^\s/@:]+:[^\s/@]+@")
DUPLICATE = re.compile(r"dup key: \{.*?\}")  # the values of a duplicate key: data
MESSAGE_LENGTH = 300


def reason(exc: PyMongoError) -> str:
    """The driver's error class and message for a log line: one line, without a URI or a
    credential, without the topology dump a selection time-out appends, and bounded."""
    message = str(exc).split(", Topology Description:")[0]
    message = CREDENTIALS.sub("", URI.sub("[uri]", message))
    message = DUPLICATE.sub("dup key: {...}", message)
    message = " ".join(message.split())
    if len(message) > MESSAGE_LENGTH:
        message = message[:MESSAGE_LENGTH] + "..."
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def translated(exc: PyMongoError) -> StoreError:
    """The store error that stands for a driver error."""
    if isinstance(exc, ConnectionFailure | ExecutionTimeout) or exc.timeout:
        return StoreUnavailable(f"MongoDB did not answer in time ({reason(exc)})")
    return StoreError(f"MongoDB refused the operation ({reason(exc)})")


@contextlib.contextmanager
def driver_errors() -> Iterator[None]:
    """Raise the store error of any driver error that escapes the block."""
    try:
        yield
    except PyMongoError as exc:
        raise translated(exc) from exc


def _coroutine(method: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(method)
    async def translating(*args: Any, **kwargs: Any) -> Any:
        with driver_errors():
            return await method(*args, **kwargs)

    return translating


def _generator(method: Callable[..., AsyncIterator[Any]]) -> Callable[..., AsyncIterator[Any]]:
    @functools.wraps(method)
    async def translating(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        # aclosing: a consumer that stops early closes the inner generator (and its cursor) now.
        with driver_errors():
            async with contextlib.aclosing(method(*args, **kwargs)) as inner:  # type: ignore[type-var]
                async for item in inner:
                    yield item

    return translating


def translate_errors(cls: T) -> T:
    """Class decorator: every public coroutine and async generator method of `cls` raises
    store errors instead of driver errors."""
    for name, attr in list(vars(cls).items()):
        if name.startswith("_"):
            continue
        if inspect.iscoroutinefunction(attr):
            setattr(cls, name, _coroutine(attr))
        elif inspect.isasyncgenfunction(attr):
            setattr(cls, name, _generator(attr))
    return cls
