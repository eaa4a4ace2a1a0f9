"""The JSON Schema files of the API and the validators built from them.

Each file carries an `$id` of the form /schemas/<folder>/<name>.json and refers to the others by
that id. The same files validate requests and are assembled into the OpenAPI document.

One rule JSON Schema can only express with an `anyOf` that client generators turn into a class
per branch is a keyword of its own here, `x-atLeastOneNonBlank: true`: at least one property
holds a string with a non-whitespace character. Generators ignore `x-` keywords; the validators
below enforce it, so the rule still lives in the schema file (and its description).

A `oneOf` with an OpenAPI `discriminator` (a choice of shapes by a `type` property) is checked
as the discriminator says: the value of its property picks the one branch the instance is
validated against, so that an error points into that branch (`#/details/text is required`)
instead of saying that no branch matched. Branches of such a `oneOf` exclude each other by
their `const` property, so the verdict is the same. `x-refusedValues` beside the
discriminator names values that mean shapes the schema refuses, with the reason to give.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, validators
from jsonschema import _keywords as keywords
from jsonschema.exceptions import ValidationError
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

ROOT = Path(__file__).resolve().parent
MAX_ERRORS = 20
# The one definition of "blank": nothing but whitespace as Python's str.isspace() (and so
# str.strip(), which trims contacts in store.identity) knows it. The schema files spell it as
# this class rather than \S, whose meaning differs between ECMA-262 (the document's regex
# dialect: it counts U+FEFF as a space and U+001C-U+001F as not) and Python.
NON_BLANK = (
    "[^\\t\\n\\u000b\\f\\r\\u001c-\\u0020\\u0085\\u00a0\\u1680\\u2000-\\u200a"
    "\\u2028\\u2029\\u202f\\u205f\\u3000]"
)


def load_all() -> dict[str, dict]:
    """Every schema file, keyed by its $id."""
    schemas = {}
    for path in sorted(ROOT.glob("*/*.json")):
        schema = json.loads(path.read_text())
        expected = "/schemas/" + path.relative_to(ROOT).as_posix()
        if schema.get("$id") != expected:
            raise ValueError(f"{path} must have $id {expected}")
        schemas[expected] = schema
    return schemas


AT_LEAST_ONE_NON_BLANK = "x-atLeastOneNonBlank"
NON_BLANK_MESSAGE = "must contain at least one supported field with a non-blank value"


def _at_least_one_non_blank(validator, value, instance, schema):
    if not value or not validator.is_type(instance, "object"):
        return
    if not any(isinstance(v, str) and re.search(NON_BLANK, v) for v in instance.values()):
        yield ValidationError(NON_BLANK_MESSAGE)


INSTANT_MESSAGE = (
    "must be an RFC 3339 date-time with a UTC offset, such as 2026-11-21T09:30:00Z or "
    "2026-11-21T10:30:00.250+01:00"
)
# A pattern's error in words (the keyword beside `pattern`); the pattern itself otherwise.
PATTERN_DETAIL = "x-patternDetail"
# Values of a discriminator that name a shape this schema refuses, with the reason as the error.
REFUSED = "x-refusedValues"


def _one_of(validator, one_of, instance, schema):
    discriminator = schema.get("discriminator")
    if not discriminator or not validator.is_type(instance, "object"):
        yield from keywords.oneOf(validator, one_of, instance, schema)  # type: ignore[func-returns-value,misc]
        return
    name, mapping = discriminator["propertyName"], discriminator["mapping"]
    if name not in instance:
        yield ValidationError(
            f"{name!r} is a required property",
            validator="required",
            validator_value=[name],
            instance=instance,
            schema=schema,
        )
        return
    value = instance[name]
    target = mapping.get(value) if isinstance(value, str) else None
    if target is None and value in schema.get(REFUSED, {}):
        yield ValidationError(
            schema[REFUSED][value], validator=REFUSED, instance=value, schema=schema, path=[name]
        )
        return
    if target is None:
        yield ValidationError(
            f"{value!r} is not one of {sorted(mapping)}",
            validator="enum",
            validator_value=list(mapping),
            instance=value,
            schema=schema,
            path=[name],
        )
        return
    yield from validator.descend(instance, {"$ref": target})


Validator = validators.extend(
    Draft202012Validator, {AT_LEAST_ONE_NON_BLANK: _at_least_one_non_blank, "oneOf": _one_of}
)


def _pointer(path: Iterable[object]) -> str:
    return "#" + "".join(f"/{part}" for part in path)


def _message(error: ValidationError) -> tuple[list, str]:
    """(path, detail) for one validation error, in words a client can act on."""
    path = list(error.absolute_path)
    # JSON values, set on every error iter_errors yields (the stubs allow for `Unset`).
    kind = error.validator
    value: Any = error.validator_value
    instance: Any = error.instance
    schema: Any = error.schema
    if kind == "required":
        missing = next(name for name in value if name not in instance)
        return [*path, missing], "is required"
    if kind == "dependentRequired":
        given, missing = next(
            (name, need)
            for name in value
            if name in instance
            for need in value[name]
            if need not in instance
        )
        return [*path, missing], f"is required with {given}"
    if kind in ("not", "minProperties") and schema.get(AT_LEAST_ONE_NON_BLANK):
        return path, NON_BLANK_MESSAGE
    if kind == "additionalProperties":
        extra = sorted(set(instance) - set(schema.get("properties", {})))
        return [*path, extra[0]], "is not a supported field"
    if kind == AT_LEAST_ONE_NON_BLANK:
        return path, NON_BLANK_MESSAGE
    if kind == REFUSED:
        return path, error.message
    if kind == "type":
        return path, f"must be of type {value}"
    if kind == "enum":
        return path, "must be one of " + ", ".join(json.dumps(v) for v in value)
    if kind == "minimum":
        return path, f"must be at least {value}"
    if kind == "maximum":
        return path, f"must be at most {value}"
    if kind == "minItems":
        return path, f"must contain at least {value} item{'s' if value != 1 else ''}"
    if kind == "maxItems":
        return path, f"must contain at most {value} items"
    if kind == "maxLength":
        return path, f"must be at most {value} characters long"
    if kind in ("minLength", "pattern") and value in (1, NON_BLANK):
        return path, "must not be blank"
    if kind == "pattern" and schema.get("format") == "uuid":
        return path, "must be a UUID"
    if kind == "pattern" and schema.get("format") == "date-time":
        return path, INSTANT_MESSAGE
    if kind == "pattern" and PATTERN_DETAIL in schema:
        return path, schema[PATTERN_DETAIL]
    return path, error.message


FLAT_KEYWORDS = {
    "$id",
    "$schema",
    "$comment",
    "title",
    "description",
    "examples",
    "type",
    "additionalProperties",
    "properties",
}
MAX_REMEMBERED = 10_000  # parameter values remembered as valid (then forgotten all at once)
MAX_REMEMBERED_LENGTH = 200


@functools.cache
def _loaded() -> tuple[dict[str, dict], Registry]:
    """Every schema file and the registry that resolves their references: read once per process
    (the documents are shared, and never changed)."""
    documents = load_all()
    resources = [
        (sid, Resource.from_contents(doc, default_specification=DRAFT202012))
        for sid, doc in documents.items()
    ]
    return documents, Registry().with_resources(resources)


class Schemas:
    """Validators for every schema file. The files are read once per process, and each
    validator is built when it is first used: jsonschema spends about 2 ms building one (most of
    it combining registries), which for every schema file was half a second of each app's start."""

    def __init__(self) -> None:
        documents, self.registry = _loaded()
        self.documents = dict(documents)  # its own mapping (the documents themselves are shared)
        self._validators: dict[str, Any] = {}
        # Query schemas whose parameters are checked each on its own (nothing relates two of
        # them, and none is required): a parameter value valid once is valid in every query.
        self._flat = {
            sid
            for sid, doc in self.documents.items()
            if sid.startswith("/schemas/queries/") and set(doc) <= FLAT_KEYWORDS
        }
        self._valid_parameters: set[tuple[str, str, object]] = set()

    def errors(self, schema_id: str, instance: object) -> list[dict]:
        """Problems with `instance` as [{"pointer", "detail"}], empty when it is valid."""
        validator = self._validators.get(schema_id)
        if validator is None:
            validator = Validator(self.documents[schema_id], registry=self.registry)
            self._validators[schema_id] = validator
        found = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
        result: list[dict] = []
        for error in found:
            path, detail = _message(error)
            entry = {"pointer": _pointer(path), "detail": detail}
            if entry not in result:
                result.append(entry)
            if len(result) == MAX_ERRORS:
                break
        return result

    def query_errors(self, schema_id: str, values: dict) -> list[dict]:
        """`errors` of a query's parameter values, which skips the parameters whose value was
        valid before (a sync loop repeats its pageSize, sort and filters on every request;
        jsonschema's whole-object check was 7% of a request's time on the event loop)."""
        if schema_id not in self._flat:
            return self.errors(schema_id, values)
        known = self._valid_parameters
        fresh = {
            name: value for name, value in values.items() if (schema_id, name, value) not in known
        }
        if not fresh:
            return []
        if self.errors(schema_id, fresh):
            return self.errors(schema_id, values)  # the whole query's errors, as always
        if len(known) > MAX_REMEMBERED:
            known.clear()
        known.update(
            (schema_id, name, value)
            for name, value in fresh.items()
            if not isinstance(value, str) or len(value) <= MAX_REMEMBERED_LENGTH
        )
        return []

    def resolve(self, schema: dict) -> dict:
        """A schema with a top-level $ref replaced by its target."""
        ref = schema.get("$ref")
        return self.documents[ref] if ref else schema
