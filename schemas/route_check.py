"""What differs between the OpenAPI document (schemas/openapi.py) and the routes the
application serves: an operation documented but not served, or served but not documented, and
a handler whose query or body schema or scope is not the one its endpoint file documents."""

from __future__ import annotations

import re

from tornado.web import RequestHandler

from schemas.openapi import METHODS, NO_QUERY, operations, required_scope


def sample_url(path: str) -> str:
    """A concrete URL for a templated path (UUIDs for parameters, a file name for {file})."""
    return re.sub(
        r"\{([^}/]+)\}",
        lambda m: "console.css" if m.group(1) == "file" else "00000000-0000-4000-8000-000000000000",
        path,
    )


def handler_methods(handler: type) -> set[str]:
    """The methods a handler class implements itself."""
    if hasattr(handler, "allowed_methods"):
        return set(handler.allowed_methods())
    return {m.upper() for m in METHODS if getattr(handler, m) is not getattr(RequestHandler, m)}


def route_for(url: str, routes: list) -> tuple | None:
    """The first route whose pattern matches `url`, as Tornado picks it."""
    for route in routes:
        if re.fullmatch(route[0], url):
            return route
    return None


def route_mismatches(document: dict, routes: list, endpoints: list[dict]) -> list[str]:
    """What differs between the served routes (catch-all last) and the document."""
    problems = []
    served: dict[str, set[str]] = {}
    by_key = {(e["method"], e["path"]): e for e in endpoints}
    for path, method, _ in operations(document):
        route = route_for(sample_url(path), routes)
        if (
            route is None
            or route is routes[-1]
            or getattr(route[1], "in_api_document", True) is False
        ):
            problems.append(f"{method} {path} is documented but not served")
            continue
        handler = route[1]
        served.setdefault(route[0], set()).add(method)
        if method not in handler_methods(handler):
            problems.append(f"{method} {path}: {handler.__name__} does not implement it")
        endpoint = by_key.get((method, path))
        if endpoint is None or not hasattr(handler, "query_schemas"):
            continue
        query = handler.query_schemas.get(method, NO_QUERY)
        if endpoint.get("query", NO_QUERY) != query:
            problems.append(
                f"{method} {path}: documents query {endpoint.get('query', NO_QUERY)}"
                f" but {handler.__name__} validates {query}"
            )
        body = handler.body_schemas.get(method)
        if endpoint.get("body") != body:
            problems.append(
                f"{method} {path}: documents body {endpoint.get('body')} but "
                f"{handler.__name__} validates {body}"
            )
        if getattr(handler, "auth_required", True):
            needed = getattr(handler, "scopes", {}).get(method)
            if required_scope(endpoint) != needed:
                problems.append(
                    f"{method} {path}: documents scope {required_scope(endpoint)} but "
                    f"{handler.__name__} requires {needed}"
                )
    for route in routes[:-1]:
        if getattr(route[1], "in_api_document", True) is False:
            continue  # the console's pages and assets: not part of the API
        missing = handler_methods(route[1]) - served.get(route[0], set())
        for method in sorted(missing):
            problems.append(
                f"{method} {route[0]} ({route[1].__name__}) is served but not documented"
            )
    return problems
