"""What the reference pages show, derived from the OpenAPI document: operations with their
parameters, bodies and responses, schemas as collapsible field trees, the problems table, and a
small safe Markdown subset for descriptions."""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
from typing import Any

from markupsafe import Markup, escape

from schemas.problems import PROBLEMS

COMPONENT_PREFIX = "#/components/schemas/"
MAX_DEPTH = 3
MAX_TREE_DEPTH = 6
PUBLIC_SCHEMAS = ("records.", "requests.", "responses.")  # parameters show on their operations
COMMON_HEADERS = ("X-Request-Id", "RateLimit-Policy", "RateLimit")  # noted once, not per row


@dataclasses.dataclass
class Node:
    """One field of a schema's field tree; a `variant` node is one shape of a oneOf."""

    name: str
    type: list[dict]
    required: bool
    description: str
    constraints: str
    children: list[Node]
    variant: bool = False


@dataclasses.dataclass
class Param:
    name: str
    location: str
    required: bool
    description: str
    type: list[dict]
    constraints: str
    input: str  # number, select or text
    wide: bool  # ids get a whole row of the form
    options: list[str]
    default: str
    placeholder: str
    value: str


@dataclasses.dataclass
class Response:
    status: str
    description: str
    media: list[str]
    schema: list[dict]
    headers: list[str]
    problems: list[dict]
    tree: list[Node]


@dataclasses.dataclass
class Operation:
    anchor: str
    method: str
    path: str
    summary: str
    description: str
    tag: str
    auth: bool
    scope: str | None  # the key scope it needs (x-required-scope); None: none, or any key
    params: list[Param]
    body: list[dict] | None
    body_media: str
    body_tree: list[Node]
    example: str
    responses: list[Response]
    try_it: bool
    head: bool
    paginated: bool
    rate_limited: bool
    search: str


class View:
    """The OpenAPI document seen by the templates."""

    def __init__(self, document: dict):
        self.document = document
        self.components = document["components"]["schemas"]
        self.operations: list[Operation] = []
        heads = set()
        for path, item in document["paths"].items():
            full = path
            if "head" in item and "get" in item:
                heads.add(full)
            for method in ("get", "post", "put", "patch", "delete"):
                if method in item:
                    self.operations.append(self.operation(full, method.upper(), item[method]))
        # The webhooks' payloads (OpenAPI 3.1 `webhooks`): what the service POSTs to endpoints.
        for name, item in document.get("webhooks", {}).items():
            self.operations.append(self.operation(name, "POST", item["post"]))
        for op in self.operations:
            op.head = op.method == "GET" and op.path in heads
        order = {tag["name"]: i for i, tag in enumerate(document.get("tags", []))}
        self.operations.sort(key=lambda op: (order.get(op.tag, 99), op.path, op.method))
        self.tags = [
            (tag, [op for op in self.operations if op.tag == tag["name"]])
            for tag in document.get("tags", [])
        ]
        self._links = {(op.method, op.path): op.anchor for op in self.operations}

    # --- operations ------------------------------------------------------------------------

    def operation(self, path: str, method: str, op: dict) -> Operation:
        # The body's one media type: JSON, or a form (the provider's callbacks).
        content = op.get("requestBody", {}).get("content", {})
        body_media, body = next(iter(content.items()), ("application/json", None))
        responses = []
        for status, spec in op["responses"].items():
            content = spec.get("content", {})
            schema = next(iter(content.values())).get("schema") if content else None
            problems = [
                {"code": code, "title": PROBLEMS[code][1]}
                for code in spec.get("x-problem-codes", [])
            ]
            headers = [h for h in spec.get("headers", {}) if h not in COMMON_HEADERS]
            responses.append(
                Response(
                    status,
                    spec["description"],
                    list(content),
                    self.type_parts(schema) if schema else [],
                    headers,
                    problems,
                    self.tree(schema) if schema and not problems else [],
                )
            )
        example = ""
        if body:
            value = body.get("example", self.example(body["schema"]))
            example = json.dumps(value, indent=2, ensure_ascii=False)
        words = [method, path, op["summary"], op["tags"][0], op["operationId"]]
        return Operation(
            anchor="op-" + op["operationId"],
            method=method,
            path=path,
            summary=op["summary"],
            description=op.get("description", ""),
            tag=op["tags"][0],
            auth=op.get("security") != [],
            scope=op.get("x-required-scope"),
            params=[self.param(p) for p in op.get("parameters", [])],
            body=self.type_parts(body["schema"]) if body else None,
            body_media=body_media,
            body_tree=self.tree(body["schema"]) if body else [],
            example=example,
            responses=responses,
            try_it=op.get("x-try-it", True),
            head=False,
            paginated=any("Link" in r.headers for r in responses if r.status.startswith("2")),
            rate_limited=any(
                "RateLimit" in spec.get("headers", {}) for spec in op["responses"].values()
            ),
            search=" ".join(words).lower(),
        )

    def param(self, spec: dict) -> Param:
        if "$ref" in spec:
            spec = self.document["components"]["parameters"][spec["$ref"].rsplit("/", 1)[1]]
        schema = spec.get("schema", {})
        target = self.resolve(schema)
        enum = target.get("enum")
        kind = "select" if enum else "number" if target.get("type") == "integer" else "text"
        default = target.get("default", "")
        placeholder = (
            "UUID"
            if target.get("format") == "uuid"
            else str(target.get("examples", [""])[0])
            if target.get("examples")
            else ""
        )
        if spec["in"] == "header" and spec["name"] == "Range":
            placeholder = "bytes=0-1023"
        # A required parameter with an example starts filled in, so Send works at once.
        value = placeholder if spec.get("required") and target.get("examples") else ""
        return Param(
            spec["name"],
            spec["in"],
            spec.get("required", False),
            spec.get("description") or target.get("description", ""),
            self.type_parts(schema),
            self.constraints(target),
            kind,
            target.get("format") == "uuid",
            [str(v) for v in enum] if enum else [],
            str(default),
            placeholder,
            value,
        )

    # --- schemas ---------------------------------------------------------------------------

    def resolve(self, schema: dict) -> dict:
        seen = 0
        while isinstance(schema, dict) and "$ref" in schema and seen < 10:
            ref = schema["$ref"]
            if not ref.startswith(COMPONENT_PREFIX):
                break
            schema, seen = self.components[ref[len(COMPONENT_PREFIX) :].split("/")[0]], seen + 1
        return schema

    def type_parts(self, schema: dict | None) -> list[dict]:
        """A schema's type as text pieces, component references as links."""
        if not schema:
            return [{"text": "any"}]
        if "$ref" in schema and schema["$ref"].startswith(COMPONENT_PREFIX):
            name = schema["$ref"][len(COMPONENT_PREFIX) :]
            target = self.components.get(name, {})
            composite = {"properties", "allOf", "oneOf"} & set(target)
            if target.get("type") not in ("object", "array") and not composite:
                return self.type_parts(target)  # small scalar schemas read better inline
            return [{"text": name, "href": "#schema-" + name}]
        if "enum" in schema:
            return [{"text": "one of " + ", ".join(json.dumps(v) for v in schema["enum"])}]
        if "const" in schema:
            return [{"text": json.dumps(schema["const"])}]
        for key in ("oneOf", "anyOf"):
            if key in schema and "type" not in schema:
                parts: list[dict] = []
                for i, option in enumerate(schema[key]):
                    parts += ([{"text": " or "}] if i else []) + self.type_parts(option)
                return parts
        kind = schema.get("type", "object" if "properties" in schema else "any")
        if isinstance(kind, list):
            kind = " or ".join(kind)
        if kind == "array":
            return [{"text": "array of "}, *self.type_parts(schema.get("items"))]
        if schema.get("format"):
            return [{"text": f"{kind} ({schema['format']})"}]
        return [{"text": kind}]

    @staticmethod
    def constraints(schema: dict) -> str:
        notes = []
        pairs = [
            ("minLength", "at least {} character{}"),
            ("maxLength", "at most {} character{}"),
            ("minimum", "≥ {}{}"),
            ("maximum", "≤ {}{}"),
            ("minItems", "at least {} item{}"),
            ("maxItems", "at most {} item{}"),
        ]
        for key, text in pairs:
            if key in schema and not (key == "minLength" and schema[key] == 1):
                value = schema[key]
                notes.append(text.format(value, "" if value == 1 or "{}{}" in text else "s"))
        if schema.get("pattern") == "\\S" or schema.get("minLength") == 1:
            notes.append("not blank")
        if "default" in schema:
            notes.append(f"default {json.dumps(schema['default'])}")
        return ", ".join(notes)

    def object_parts(self, schema: dict) -> tuple[dict, list[str]]:
        """Properties and required names of an object schema, allOf/$ref merged in."""
        schema = self.resolve(schema)
        properties, required = {}, []
        for part in schema.get("allOf", []):
            more, needed = self.object_parts(part)
            properties.update(more)
            required += needed
        properties.update(schema.get("properties", {}))
        return properties, required + schema.get("required", [])

    def tree(self, schema: dict, depth: int = 0, seen: tuple = ()) -> list[Node]:
        """The fields of an object schema (allOf and $refs merged in), each with the fields of
        the objects it holds; the shapes of a oneOf as variant nodes."""
        target = self.resolve(schema)
        if "oneOf" in target:
            return [self._variant(option, depth, seen) for option in target["oneOf"]]
        properties, required = self.object_parts(schema)
        nodes = []
        for name, prop in properties.items():
            resolved = self.resolve(prop)
            inner = resolved.get("items", {}) if resolved.get("type") == "array" else prop
            ref = inner.get("$ref") if isinstance(inner, dict) else None
            children: list[Node] = []
            if depth < MAX_TREE_DEPTH and ref not in seen and self._has_fields(inner):
                children = self.tree(inner, depth + 1, seen + ((ref,) if ref else ()))
            nodes.append(
                Node(
                    name,
                    self.type_parts(prop),
                    name in required,
                    prop.get("description") or resolved.get("description", ""),
                    self.constraints({**resolved, **prop}),
                    children,
                )
            )
        return nodes

    def _variant(self, option: dict, depth: int, seen: tuple) -> Node:
        target = self.resolve(option)
        properties, _ = self.object_parts(option)
        tag = properties.get("type", {}).get("const")
        return Node(
            target.get("title", "variant"),
            [{"text": f"type = {json.dumps(tag)}"}] if tag else self.type_parts(option),
            False,
            target.get("description", ""),
            "",
            self.tree(option, depth + 1, seen),
            variant=True,
        )

    def _has_fields(self, schema: dict) -> bool:
        target = self.resolve(schema)
        return bool(target.get("properties") or target.get("allOf") or target.get("oneOf"))

    def example(self, schema: dict, depth: int = 0) -> Any:
        """A plausible example value for a schema without one."""
        schema = self.resolve(schema)
        if "examples" in schema:
            return schema["examples"][0]
        if "default" in schema:
            return schema["default"]
        if "enum" in schema:
            return schema["enum"][0]
        kind = schema.get("type")
        if kind == "object" or "properties" in schema:
            properties, required = self.object_parts(schema)
            return (
                {
                    name: self.example(prop, depth + 1)
                    for name, prop in properties.items()
                    if name in required or depth == 0
                }
                if depth < MAX_DEPTH
                else {}
            )
        if kind == "array":
            return [self.example(schema.get("items", {}), depth + 1)]
        if kind == "integer":
            return schema.get("minimum", 1)
        if kind == "boolean":
            return True
        return "00000000-0000-4000-8000-000000000000" if schema.get("format") == "uuid" else ""

    def schema_sections(self) -> list[dict]:
        """The public schemas (records, requests, responses), records first."""
        sections = []
        names = sorted(
            (n for n in self.components if n.startswith(PUBLIC_SCHEMAS)),
            key=lambda n: (PUBLIC_SCHEMAS.index(n.split(".")[0] + "."), n),
        )
        for name in names:
            schema = self.components[name]
            tree = self.tree({"$ref": COMPONENT_PREFIX + name}, seen=(COMPONENT_PREFIX + name,))
            words = [name, schema.get("title", "")] + [node.name for node in tree]
            sections.append(
                {
                    "name": name,
                    "title": schema.get("title", name),
                    "description": schema.get("description", ""),
                    "tree": tree,
                    "type": self.type_parts(schema),
                    "constraints": self.constraints(schema),
                    "closed": schema.get("additionalProperties") is False
                    or schema.get("unevaluatedProperties") is False,
                    "search": " ".join(words).lower(),
                }
            )
        return sections

    # --- problems --------------------------------------------------------------------------

    def problems(self) -> list[dict]:
        result = []
        for code, (status, title, meaning) in PROBLEMS.items():
            users = [
                op for op in self.operations if any(r.status == str(status) for r in op.responses)
            ]
            result.append(
                {
                    "code": code,
                    "status": status,
                    "title": title,
                    "meaning": meaning,
                    "operations": users,
                }
            )
        return result

    # --- text ------------------------------------------------------------------------------

    def markdown(self, text: str) -> Markup:
        """Paragraphs, '- ' lists, `code`, **bold**, and links for mentioned operations."""
        html = []
        for block in re.split(r"\n\s*\n", text.strip()):
            lines = [line for line in block.splitlines() if line.strip()]
            for is_item, group in itertools.groupby(lines, lambda line: line.startswith("- ")):
                if is_item:
                    items = "".join(f"<li>{self.inline(line[2:])}</li>" for line in group)
                    html.append(f"<ul>{items}</ul>")
                else:
                    html.append(f"<p>{self.inline(' '.join(group))}</p>")
        return Markup("".join(html))

    def inline(self, text: str) -> str:
        pieces = re.split(r"(`[^`]+`)", text)
        out = []
        for piece in pieces:
            if piece.startswith("`") and piece.endswith("`") and len(piece) > 1:
                out.append(f"<code>{escape(piece[1:-1])}</code>")
                continue
            html = str(escape(piece))
            html = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", html)
            html = re.sub(
                r"\b(GET|POST|PUT|PATCH|DELETE) (/[A-Za-z0-9{}/._-]*[A-Za-z0-9}])",
                self._link_operation,
                html,
            )
            out.append(html)
        return "".join(out)

    def _link_operation(self, match: re.Match) -> str:
        method, path = match.groups()
        anchor = self._links.get((method, path)) or self._links.get((method, "/v1" + path))
        if anchor is None:
            return match.group(0)
        return f'<a href="/reference#{anchor}">{match.group(0)}</a>'
