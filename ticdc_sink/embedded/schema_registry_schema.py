"""Avro schemas as the Schema Registry double stores them: checked, parsed and given a canonical form.

The registry gives one id to "the same schema", so the double needs to know when two schemas are the same.
Here that means the same canonical form. The schema is parsed with fastavro (names fully qualified, a bare
``{"type": "int"}`` equal to ``"int"``) and compared as sorted, compact JSON, together with its references.
Whitespace and key order do not matter; field order, defaults, docs and aliases do. Only AVRO is accepted.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import fastavro

from .schema_registry_errors import invalid_schema

PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})


@dataclass
class StoredSchema:
    """A schema under its global id (0 until it is first registered)."""

    id: int
    text: str  # compact JSON of the first registration's text; what GET returns
    references: list
    parsed: object  # fastavro-parsed, private keys stripped
    named: dict  # full name -> parsed named type, including those from references


@dataclass
class SubjectVersion:
    """Version ``version`` of ``subject``; a soft delete only marks it ``deleted``."""

    subject: str
    version: int
    schema: StoredSchema
    deleted: bool = False


def _strip_private(node):
    """fastavro's parsed form minus its private keys, with a bare {"type": primitive} as the primitive."""
    if isinstance(node, list):
        return [_strip_private(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _strip_private(v) for k, v in node.items() if not k.startswith("__")}
    if set(out) == {"type"} and out["type"] in PRIMITIVES:
        return out["type"]
    return out


def _require_fields(node) -> None:
    """Avro requires "fields" on a record; fastavro would quietly assume none."""
    if isinstance(node, list):
        for item in node:
            _require_fields(item)
    elif isinstance(node, dict):
        if node.get("type") in ("record", "error") and not isinstance(node.get("fields"), list):
            raise fastavro.schema.SchemaParseException(f"record {node.get('name')!r} has no fields")
        for key in ("type", "fields", "items", "values"):
            if key in node and not isinstance(node[key], str):
                _require_fields(node[key])


def parse_schema(body, referenced: Callable[[str, int], StoredSchema | None]) -> tuple[str, StoredSchema]:
    """The canonical form of a request's schema and the schema itself, not yet registered (id 0).

    ``referenced(subject, version)`` is the schema registered there, or None; a reference must resolve.
    """
    if not isinstance(body, dict):
        raise invalid_schema("the request body must be a JSON object")
    schema_type = (body.get("schemaType") or "AVRO").upper()
    if schema_type != "AVRO":
        raise invalid_schema(f"schema type {schema_type} is not supported by SchemaRegistryDouble (AVRO only)")
    text = body.get("schema")
    if not isinstance(text, str) or not text.strip():
        raise invalid_schema("Empty schema")
    references = body.get("references") or []
    named: dict = {}
    for ref in references:
        try:
            subject, version = ref["subject"], int(ref["version"])
        except (KeyError, TypeError, ValueError):
            raise invalid_schema(f"malformed reference {ref!r}") from None
        target = referenced(subject, version)
        if target is None:
            raise invalid_schema(f"reference {ref!r} does not resolve to a registered schema")
        named.update(target.named)
    try:
        raw = json.loads(text)
        _require_fields(raw)
        parsed = _strip_private(fastavro.parse_schema(raw, named_schemas=named))
    except (ValueError, TypeError, KeyError, AttributeError, fastavro.schema.SchemaParseException,
            fastavro.schema.UnknownType) as exc:
        raise invalid_schema(f"{type(exc).__name__}: {exc}") from None
    clean_refs = [{"name": r.get("name"), "subject": r["subject"], "version": int(r["version"])}
                  for r in references]
    canonical = json.dumps({"schema": parsed, "references": clean_refs}, sort_keys=True, separators=(",", ":"))
    return canonical, StoredSchema(0, json.dumps(raw, separators=(",", ":")), clean_refs, parsed, named)
