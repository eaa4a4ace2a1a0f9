"""The README's endpoint table lists every operation of the OpenAPI document the app serves, and
nothing else: each row's methods times its paths (in backticks) is compared with the document's
operations. `HEAD`, which the README states works wherever `GET` does, is checked to be exactly
that in the document."""

from __future__ import annotations

import re

from tests.docs.markdown import read, section, tables

METHODS = {"get", "head", "post", "put", "patch", "delete", "options"}


def readme_operations() -> list[tuple[str, str]]:
    [table] = [
        t for t in tables(section(read("README.md"), "## What the API offers")) if "Method" in t[0]
    ]
    found = []
    for row in table:
        paths = re.findall(r"`([^`]+)`", row["Path"])
        assert paths and ", ".join(f"`{p}`" for p in paths) == row["Path"], row
        for method in row["Method"].split(", "):
            assert method.isupper() and method.lower() in METHODS, row
            found.extend((method, path) for path in paths)
    return found


async def test_the_readme_table_lists_every_operation_of_the_served_document(anon):
    response = await anon.get("/v1/openapi.json")
    assert response.code == 200
    served = {
        (method.upper(), path)
        for path, item in response.json()["paths"].items()
        for method in item
        if method in METHODS
    }
    listed = readme_operations()
    assert len(listed) == len(set(listed)), "an operation listed twice"
    assert "HEAD" not in {method for method, _ in listed}  # one sentence covers it:
    assert "`HEAD` works wherever `GET` does" in section(
        read("README.md"), "## What the API offers"
    )
    gets = {path for method, path in served if method == "GET"}
    assert {path for method, path in served if method == "HEAD"} == gets
    assert set(listed) == {(method, path) for method, path in served if method != "HEAD"}
    assert len(served) > 50  # the document as served, not an empty one
