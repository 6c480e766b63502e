"""A TEST DOUBLE of the Confluent Schema Registry, for the tests and the demo only.

``SchemaRegistryDouble`` is a small in-process HTTP server (``http.server`` on a
thread, bound to 127.0.0.1 on a free port) that speaks the subset of the
Schema Registry REST API that confluent-kafka's ``SchemaRegistryClient``,
``AvroSerializer`` and ``AvroDeserializer`` use. The machine that runs the tests
has no Docker, so the real registry cannot be started next to them; and the
Avro demo of an installed package needs a registry, so the double ships in it,
as the embedded broker does (``embedded/broker.py``).

    with SchemaRegistryDouble() as registry:
        client = SchemaRegistryClient({"url": registry.url})

It is NOT a schema registry: state lives in memory and dies with the server,
only AVRO schemas are accepted (schema references by subject and version
included), and it has no modes, contexts, metadata, rule sets, GUIDs,
associations or exporters; ``metadata``/``ruleSet`` in a request are ignored, as
are ``normalize`` (comparison is always canonical), ``format`` and ``force``.
Ids are 1, 2, 3, ...; a schema keeps its id for the double's lifetime, even
when it comes back after a permanent delete (GET by id is a 404 meanwhile).

Endpoints (paths as the client sends them; unknown query parameters are ignored)::

    GET    /                                     -> {}
    GET    /schemas/types                        -> ["AVRO"]
    GET    /schemas/ids/{id}                     -> {"schema": ...}          (?subject= and ?format= ignored)
    GET    /schemas/ids/{id}/schema              -> the schema itself
    GET    /schemas/ids/{id}/subjects            -> ["subject", ...]
    GET    /schemas/ids/{id}/versions            -> [{"subject": ..., "version": ...}, ...]
    GET    /subjects                             -> ["subject", ...]         (?deleted, ?deletedOnly, ?subjectPrefix)
    POST   /subjects/{subject}                   -> look a schema up: {"subject","id","version","schema"}
    DELETE /subjects/{subject}                   -> [versions]               (?permanent=true after a soft delete)
    GET    /subjects/{subject}/versions          -> [versions]
    POST   /subjects/{subject}/versions          -> register: {"id": N}
    GET    /subjects/{subject}/versions/{v}      -> {"subject","version","id","schema"}  (v: 1.., "latest" or -1)
    GET    /subjects/{subject}/versions/{v}/schema
    GET    /subjects/{subject}/versions/{v}/referencedby
    DELETE /subjects/{subject}/versions/{v}      -> v                        (?permanent=true after a soft delete)
    GET    /config                               -> {"compatibilityLevel": ...}
    PUT    /config                               -> {"compatibility": ...}
    DELETE /config                               -> the old config; back to the default
    GET    /config/{subject}                     -> 404 40408 unless set (or ?defaultToGlobal=true)
    PUT    /config/{subject}, DELETE /config/{subject}
    POST   /compatibility/subjects/{subject}/versions/{v}   -> {"is_compatible": bool} (+ "messages" with ?verbose=true)
    POST   /compatibility/subjects/{subject}/versions       -> checked as registration would be

Anything else is a 404 ``{"error_code": 404, "message": "HTTP 404 Not Found"}``
as the real registry's REST layer answers. This matters: the client's default
subject-name strategy first asks ``GET /associations/...`` and falls back to
``{topic}-key`` / ``{topic}-value`` on a 404, as it does against a registry that
predates associations.

Compatibility levels: NONE, BACKWARD (the default), FORWARD, FULL and their
_TRANSITIVE forms. The check is a real one: Avro schema resolution as Avro's
Java ``SchemaCompatibility`` (which the real registry uses) performs it, for
records, enums, fixed, arrays, maps, unions, named-type references and the
primitive promotions int->long/float/double, long->float/double, float->double
and string<->bytes. Logical types are ignored, as there. Non-transitive levels
check against the latest live version, transitive ones against every live
version. Error messages follow the registry's wording, e.g. HTTP 409::

    {"error_code": 409, "message": "Schema being registered is incompatible with an
     earlier schema for subject \"t-value\", details: [{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE',
     description:'The field 'email' at path '/fields/2' in the new schema has no default
     value and is missing in the old schema', additionalInfo:'email'}, {oldSchemaVersion: 1},
     {oldSchema: '...'}, {validateFields: 'false', compatibility: 'BACKWARD'}]"}

(Registries built after Confluent added associations in December 2025 send
error_code 40901 instead of 409; pass ``incompatible_error_code=40901`` to mimic them.)

"The same schema" means the same canonical form: the schema is parsed with
fastavro (names fully qualified, a bare ``{"type": "int"}`` equal to ``"int"``)
and compared as sorted, compact JSON, so whitespace and key order do not matter
while field order, defaults, docs and aliases do. The same schema under one
subject keeps its version and id; the same schema under another subject gets a
new version there and shares the global id.

Basic auth: ``SchemaRegistryDouble(basic_auth="user:password")`` makes every
request without that ``Authorization: Basic`` header a 401
``{"error_code": 401, "message": "Unauthorized"}``.

TLS: ``SchemaRegistryDouble(certificate="server.pem", key="server.key")`` serves
HTTPS (``url`` is ``https://127.0.0.1:<port>``) with that PEM certificate chain
and key (``key`` left out when the certificate file holds it); the certificate
must name 127.0.0.1 for clients that check the host name. The handshake runs
in the request's thread, so a client that refuses the certificate, or speaks
plain HTTP, sees the connection closed and holds up no other client.

Every request is recorded in ``.requests`` as ``(method, path, status)``; nothing
is logged to stderr unless ``log_requests=True``.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import ssl
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from os import PathLike
from urllib.parse import parse_qs, unquote, urlsplit

import fastavro

__all__ = ["SchemaRegistryDouble", "COMPATIBILITY_LEVELS", "DEFAULT_COMPATIBILITY"]

DEFAULT_COMPATIBILITY = "BACKWARD"
COMPATIBILITY_LEVELS = frozenset(
    {"NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE"}
)
_CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
_MAX_VERSION = 2**31 - 1

# Error codes and messages as in the registry's Errors.java.
_SUBJECT_NOT_FOUND = 40401
_VERSION_NOT_FOUND = 40402
_SCHEMA_NOT_FOUND = 40403
_SUBJECT_SOFT_DELETED = 40404
_SUBJECT_NOT_SOFT_DELETED = 40405
_VERSION_SOFT_DELETED = 40406
_VERSION_NOT_SOFT_DELETED = 40407
_SUBJECT_COMPATIBILITY_NOT_CONFIGURED = 40408
_INVALID_SCHEMA = 42201
_INVALID_VERSION = 42202
_INVALID_COMPATIBILITY = 42203
_REFERENCE_EXISTS = 42206


class _RegistryError(Exception):
    def __init__(self, http_status: int, error_code: int, message: str):
        super().__init__(message)
        self.http_status = http_status
        self.error_code = error_code
        self.message = message


def _subject_not_found(subject):
    return _RegistryError(404, _SUBJECT_NOT_FOUND, f"Subject '{subject}' not found.")


def _version_not_found(version):
    return _RegistryError(404, _VERSION_NOT_FOUND, f"Version {version} not found.")


def _invalid_schema(detail):
    return _RegistryError(422, _INVALID_SCHEMA, f"Invalid schema: {detail}")


# ---------------------------------------------------------------------------------------------
# Avro: canonical form and schema resolution (reader/writer compatibility)
# ---------------------------------------------------------------------------------------------

_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
_NAMED = frozenset({"record", "error", "enum", "fixed"})
# reader type -> writer types it can read by promotion (Avro spec, "Schema Resolution")
_PROMOTIONS = {
    "long": {"int"},
    "float": {"int", "long"},
    "double": {"int", "long", "float"},
    "bytes": {"string"},
    "string": {"bytes"},
}


def _strip_private(node):
    """fastavro's parsed form minus its private keys, with a bare {"type": primitive} as the primitive."""
    if isinstance(node, list):
        return [_strip_private(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _strip_private(v) for k, v in node.items() if not k.startswith("__")}
    if set(out) == {"type"} and out["type"] in _PRIMITIVES:
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


def _kind(schema) -> str:
    if isinstance(schema, list):
        return "union"
    if isinstance(schema, dict):
        return "record" if schema["type"] == "error" else schema["type"]
    return schema


def _type_name(schema) -> str:
    return _kind(schema).upper()


def _short_name(fullname: str) -> str:
    return fullname.rsplit(".", 1)[-1]


def _namespace(fullname: str) -> str:
    return fullname.rsplit(".", 1)[0] if "." in fullname else ""


@dataclass
class _Incompatibility:
    kind: str  # the errorType of Avro's SchemaIncompatibilityType
    location: list
    info: str


class _ReaderWriterCheck:
    """Can data written with ``writer`` be read with ``reader``? Avro's schema resolution rules."""

    def __init__(self, reader_named: dict, writer_named: dict):
        self._reader_named = reader_named
        self._writer_named = writer_named
        self._active: set = set()

    @staticmethod
    def _resolve(schema, named):
        # A named type used by name; a dict whose "type" is a primitive (maybe with a logical type,
        # which schema resolution ignores) or the name of a named type.
        while True:
            if isinstance(schema, str):
                if schema in _PRIMITIVES:
                    return schema
                schema = named[schema]
                continue
            if isinstance(schema, dict):
                inner = schema.get("type")
                if inner in _PRIMITIVES:
                    return inner
                if isinstance(inner, (str, dict, list)) and inner not in _NAMED | {"array", "map"}:
                    schema = inner
                    continue
            return schema

    def check(self, reader, writer, location) -> list:
        reader = self._resolve(reader, self._reader_named)
        writer = self._resolve(writer, self._writer_named)
        reader_kind, writer_kind = _kind(reader), _kind(writer)
        key = None
        if reader_kind in _NAMED and writer_kind in _NAMED:
            key = (reader["name"], writer["name"])
            if key in self._active:  # recursive type: assume compatible, as Avro does
                return []
            self._active.add(key)
        try:
            return self._check(reader, writer, reader_kind, writer_kind, location)
        finally:
            if key is not None:
                self._active.discard(key)

    def _check(self, reader, writer, reader_kind, writer_kind, location) -> list:
        if reader_kind == writer_kind:
            if reader_kind in _PRIMITIVES:
                return []
            if reader_kind == "array":
                return self.check(reader["items"], writer["items"], location + ["items"])
            if reader_kind == "map":
                return self.check(reader["values"], writer["values"], location + ["values"])
            if reader_kind == "union":
                found = []
                for index, branch in enumerate(writer):
                    if self.check(reader, branch, location + [str(index)]):
                        found.append(_Incompatibility(
                            "MISSING_UNION_BRANCH", location + [str(index)],
                            f"reader union lacking writer type: {_type_name(self._resolve(branch, self._writer_named))}",
                        ))
                return found
            found = self._check_names(reader, writer, location)
            if reader_kind == "fixed" and reader["size"] != writer["size"]:
                found.append(_Incompatibility(
                    "FIXED_SIZE_MISMATCH", location + ["size"],
                    f"expected: {writer['size']}, found: {reader['size']}",
                ))
            elif reader_kind == "enum" and "default" not in reader:
                missing = [s for s in writer["symbols"] if s not in reader["symbols"]]
                if missing:
                    found.append(_Incompatibility(
                        "MISSING_ENUM_SYMBOLS", location + ["symbols"], "[" + ", ".join(missing) + "]"
                    ))
            elif reader_kind == "record":
                found.extend(self._check_fields(reader, writer, location))
            return found

        if writer_kind == "union":  # every branch the writer may have used must be readable
            found = []
            for branch in writer:
                found.extend(self.check(reader, branch, location))
            return found
        if reader_kind == "union":  # some branch of the reader must read the writer's type
            for branch in reader:
                if not self.check(branch, writer, location):
                    return []
            return [_Incompatibility(
                "MISSING_UNION_BRANCH", location, f"reader union lacking writer type: {_type_name(writer)}"
            )]
        if writer_kind in _PROMOTIONS.get(reader_kind, ()):
            return []
        return [_Incompatibility(
            "TYPE_MISMATCH", location,
            f"reader type: {_type_name(reader)} not compatible with writer type: {_type_name(writer)}",
        )]

    @staticmethod
    def _check_names(reader, writer, location) -> list:
        if _short_name(reader["name"]) == _short_name(writer["name"]):
            return []
        aliases = {a if "." in a else f"{_namespace(reader['name'])}.{a}".lstrip(".")
                   for a in reader.get("aliases", ())}
        if writer["name"] in aliases:
            return []
        return [_Incompatibility("NAME_MISMATCH", location + ["name"], f"expected: {writer['name']}")]

    def _check_fields(self, reader, writer, location) -> list:
        found = []
        writer_fields = {f["name"]: f for f in writer["fields"]}
        for position, reader_field in enumerate(reader["fields"]):
            where = location + ["fields", str(position)]
            writer_field = writer_fields.get(reader_field["name"])
            if writer_field is None:
                writer_field = next(
                    (writer_fields[a] for a in reader_field.get("aliases", ()) if a in writer_fields), None
                )
            if writer_field is None:
                if "default" not in reader_field:
                    found.append(_Incompatibility("READER_FIELD_MISSING_DEFAULT_VALUE", where, reader_field["name"]))
            else:
                found.extend(self.check(reader_field["type"], writer_field["type"], where + ["type"]))
        return found


_DESCRIPTIONS = {
    "FIXED_SIZE_MISMATCH": "The size of FIXED type field at path '{path}' in the {reader} schema "
                           "does not match with the {writer} schema",
    "TYPE_MISMATCH": "The type (path '{path}') of a field in the {reader} schema does not match with the {writer} schema",
    "NAME_MISMATCH": "The name of the schema has changed (path '{path}')",
    "MISSING_ENUM_SYMBOLS": "The {reader} schema is missing enum symbols '{info}' at path '{path}' in the {writer} schema",
    "MISSING_UNION_BRANCH": "The {reader} schema is missing a type inside a union field at path '{path}' "
                            "in the {writer} schema",
    "READER_FIELD_MISSING_DEFAULT_VALUE": "The field '{info}' at path '{path}' in the {reader} schema "
                                          "has no default value and is missing in the {writer} schema",
}


def _describe(found: _Incompatibility, reader: str, writer: str) -> str:
    path = "/" + "/".join(found.location)
    description = _DESCRIPTIONS[found.kind].format(path=path, reader=reader, writer=writer, info=found.info)
    return f"{{errorType:'{found.kind}', description:'{description}', additionalInfo:'{found.info}'}}"


# ---------------------------------------------------------------------------------------------
# The in-memory registry
# ---------------------------------------------------------------------------------------------

@dataclass
class _Schema:
    id: int
    text: str  # compact JSON of the first registration's text; what GET returns
    references: list
    parsed: object  # fastavro-parsed, private keys stripped
    named: dict  # full name -> parsed named type, including those from references


@dataclass
class _Version:
    subject: str
    version: int
    schema: _Schema
    deleted: bool = False


@dataclass
class _State:
    global_compatibility: str | None = None
    subject_compatibility: dict = field(default_factory=dict)
    schemas_by_id: dict = field(default_factory=dict)
    ids_by_canonical: dict = field(default_factory=dict)
    subjects: dict = field(default_factory=dict)  # subject -> {version: _Version}, soft-deleted included
    next_id: int = 1


def _flag(query: dict, *names: str) -> bool:
    return any(query.get(n, ["false"])[-1].strip().lower() == "true" for n in names)


def _page(items: list, query: dict) -> list:
    try:
        offset = int(query.get("offset", ["0"])[-1])
        limit = int(query.get("limit", ["-1"])[-1])
    except ValueError:
        return items
    items = items[max(offset, 0):]
    return items if limit < 0 else items[:limit]


def _version_id(text: str) -> int | None:
    """None for "latest"; raises 422 42202 like the registry for anything else invalid."""
    if text.strip().lower() == "latest":
        return None
    try:
        version = int(text)
    except ValueError:
        version = 0
    if version == -1:
        return None
    if not 1 <= version <= _MAX_VERSION:
        raise _RegistryError(
            422, _INVALID_VERSION,
            f"The specified version '{text}' is not a valid version id. "
            'Allowed values are between [1, 2^31-1] and the string "latest"',
        )
    return version


class _Registry:
    """The registry's state and rules. Every public method runs under the server's lock."""

    def __init__(self, default_compatibility: str, incompatible_error_code: int):
        self._default_compatibility = default_compatibility
        self._incompatible_error_code = incompatible_error_code
        self.state = _State()

    # -- schemas ----------------------------------------------------------------------------
    def _parse(self, body) -> tuple:
        if not isinstance(body, dict):
            raise _invalid_schema("the request body must be a JSON object")
        schema_type = (body.get("schemaType") or "AVRO").upper()
        if schema_type != "AVRO":
            raise _invalid_schema(f"schema type {schema_type} is not supported by SchemaRegistryDouble (AVRO only)")
        text = body.get("schema")
        if not isinstance(text, str) or not text.strip():
            raise _invalid_schema("Empty schema")
        references = body.get("references") or []
        named: dict = {}
        for ref in references:
            try:
                subject, version = ref["subject"], int(ref["version"])
            except (KeyError, TypeError, ValueError):
                raise _invalid_schema(f"malformed reference {ref!r}") from None
            entry = self.state.subjects.get(subject, {}).get(version)
            if entry is None:
                raise _invalid_schema(f"reference {ref!r} does not resolve to a registered schema")
            named.update(entry.schema.named)
        try:
            raw = json.loads(text)
            _require_fields(raw)
            parsed = _strip_private(fastavro.parse_schema(raw, named_schemas=named))
        except (ValueError, TypeError, KeyError, AttributeError, fastavro.schema.SchemaParseException,
                fastavro.schema.UnknownType) as exc:
            raise _invalid_schema(f"{type(exc).__name__}: {exc}") from None
        clean_refs = [{"name": r.get("name"), "subject": r["subject"], "version": int(r["version"])}
                      for r in references]
        canonical = json.dumps(
            {"schema": parsed, "references": clean_refs}, sort_keys=True, separators=(",", ":")
        )
        return canonical, json.dumps(raw, separators=(",", ":")), clean_refs, parsed, named

    def _schema_for(self, body) -> tuple:
        """The stored schema equal to the body's (same canonical form), else an unsaved candidate."""
        canonical, text, refs, parsed, named = self._parse(body)
        schema_id = self.state.ids_by_canonical.get(canonical)
        if schema_id is not None and schema_id in self.state.schemas_by_id:
            return self.state.schemas_by_id[schema_id], canonical
        candidate = _Schema(schema_id or 0, text, refs, parsed, named)
        return candidate, canonical

    def _commit_schema(self, schema: _Schema, canonical: str) -> _Schema:
        if schema.id == 0:
            schema.id = self.state.next_id
            self.state.next_id += 1
        self.state.ids_by_canonical[canonical] = schema.id
        self.state.schemas_by_id[schema.id] = schema
        return schema

    def _live_versions(self, subject: str) -> list:
        return [v for _, v in sorted(self.state.subjects.get(subject, {}).items()) if not v.deleted]

    def _versions(self, subject: str, deleted: bool) -> list:
        return [v for _, v in sorted(self.state.subjects.get(subject, {}).items()) if deleted or not v.deleted]

    def get_version(self, subject: str, version_text: str, deleted: bool) -> _Version:
        version = _version_id(version_text)
        visible = self._versions(subject, deleted)
        if not visible:
            raise _subject_not_found(subject)
        if version is None:
            return visible[-1]
        for entry in visible:
            if entry.version == version:
                return entry
        raise _version_not_found(version)

    # -- compatibility ----------------------------------------------------------------------
    def compatibility_of(self, subject: str | None) -> str:
        if subject is not None and subject in self.state.subject_compatibility:
            return self.state.subject_compatibility[subject]
        return self.state.global_compatibility or self._default_compatibility

    def _incompatibilities(self, level: str, new: _Schema, previous: list) -> list:
        """Messages as the registry's SchemaValidatorBuilder writes them; [] when compatible."""
        if level == "NONE" or not previous:
            return []
        base = level.removesuffix("_TRANSITIVE")
        targets = list(reversed(previous)) if level.endswith("_TRANSITIVE") else [previous[-1]]
        for old_version in targets:
            old = old_version.schema
            messages = []
            if base in ("FORWARD", "FULL"):  # old schema reads data written with the new one
                found = _ReaderWriterCheck(old.named, new.named).check(old.parsed, new.parsed, [])
                messages.extend(_describe(f, "old", "new") for f in found)
                if found and base == "FORWARD":
                    messages.extend(self._old_schema_notes(old_version))
            if base in ("BACKWARD", "FULL"):  # new schema reads data written with the old one
                found = _ReaderWriterCheck(new.named, old.named).check(new.parsed, old.parsed, [])
                messages.extend(_describe(f, "new", "old") for f in found)
                if found:
                    messages.extend(self._old_schema_notes(old_version))
            if messages:
                messages.append(f"{{validateFields: 'false', compatibility: '{level}'}}")
                return messages
        return []

    @staticmethod
    def _old_schema_notes(old_version: _Version) -> list:
        return [f"{{oldSchemaVersion: {old_version.version}}}", f"{{oldSchema: '{old_version.schema.text}'}}"]

    # -- endpoints ----------------------------------------------------------------------------
    def register(self, subject: str, body) -> dict:
        schema, canonical = self._schema_for(body)
        live = self._live_versions(subject)
        for entry in live:
            if entry.schema is schema:
                return {"id": schema.id}
        messages = self._incompatibilities(self.compatibility_of(subject), schema, live)
        if messages:
            raise _RegistryError(
                409, self._incompatible_error_code,
                f'Schema being registered is incompatible with an earlier schema for subject "{subject}", '
                f"details: [{', '.join(messages)}]",
            )
        schema = self._commit_schema(schema, canonical)
        versions = self.state.subjects.setdefault(subject, {})
        new_version = max(versions, default=0) + 1
        versions[new_version] = _Version(subject, new_version, schema)
        return {"id": schema.id}

    def lookup(self, subject: str, body, deleted: bool) -> dict:
        schema, _ = self._schema_for(body)
        visible = self._versions(subject, deleted)
        if not visible:
            raise _subject_not_found(subject)
        for entry in reversed(visible):
            if entry.schema is schema:
                return self.version_body(entry)
        raise _RegistryError(404, _SCHEMA_NOT_FOUND, "Schema not found")

    @staticmethod
    def schema_body(schema: _Schema) -> dict:
        body = {"schema": schema.text}
        if schema.references:
            body["references"] = schema.references
        return body

    def version_body(self, entry: _Version) -> dict:
        return {"subject": entry.subject, "version": entry.version, "id": entry.schema.id,
                **self.schema_body(entry.schema)}

    def schema_by_id(self, schema_id_text: str) -> _Schema:
        try:
            schema_id = int(schema_id_text)
        except ValueError:
            schema_id = -1
        schema = self.state.schemas_by_id.get(schema_id)
        if schema is None:
            raise _RegistryError(404, _SCHEMA_NOT_FOUND, f"Schema {schema_id_text} not found")
        return schema

    def subject_versions_of(self, schema: _Schema, deleted: bool) -> list:
        return [entry for subject in sorted(self.state.subjects)
                for entry in self._versions(subject, deleted) if entry.schema is schema]

    def list_subjects(self, query: dict) -> list:
        deleted_only = _flag(query, "deletedOnly", "deleted_only")
        deleted = _flag(query, "deleted")
        prefix = query.get("subjectPrefix", [""])[-1]
        prefix = "" if prefix == ":*:" else prefix
        result = []
        for subject, versions in sorted(self.state.subjects.items()):
            if not versions or not subject.startswith(prefix):
                continue
            all_deleted = all(v.deleted for v in versions.values())
            if (deleted_only and all_deleted) or (not deleted_only and (deleted or not all_deleted)):
                result.append(subject)
        return _page(result, query)

    def list_versions(self, subject: str, query: dict) -> list:
        if not self.state.subjects.get(subject):
            raise _subject_not_found(subject)
        if _flag(query, "deletedOnly", "deleted_only"):
            versions = [v.version for v in self._versions(subject, True) if v.deleted]
        elif _flag(query, "deleted"):
            versions = [v.version for v in self._versions(subject, True)]
        else:
            versions = [v.version for v in self._live_versions(subject)]
            if not versions:  # every version soft-deleted: the subject is gone unless asked for
                raise _subject_not_found(subject)
        return _page(versions, query)

    def referenced_by(self, subject: str, version: int) -> list:
        return sorted({s.id for s in self.state.schemas_by_id.values()
                       if any(r["subject"] == subject and r["version"] == version for r in s.references)
                       and self.subject_versions_of(s, deleted=True)})

    def delete_subject(self, subject: str, permanent: bool) -> list:
        versions = self.state.subjects.get(subject)
        if not versions:
            raise _subject_not_found(subject)
        for number in versions:
            if self.referenced_by(subject, number):
                raise _RegistryError(422, _REFERENCE_EXISTS,
                                     f"One or more references exist to the schema {{subject={subject},version={number}}}")
        if permanent:
            if any(not v.deleted for v in versions.values()):
                raise _RegistryError(404, _SUBJECT_NOT_SOFT_DELETED,
                                     f"Subject '{subject}' was not deleted first before being permanently deleted")
            deleted = sorted(versions)
            del self.state.subjects[subject]
            self.state.subject_compatibility.pop(subject, None)
            self._forget_unused_schemas()
            return deleted
        live = [v for _, v in sorted(versions.items()) if not v.deleted]
        if not live:
            raise _RegistryError(404, _SUBJECT_SOFT_DELETED,
                                 f"Subject '{subject}' was soft deleted.Set permanent=true to delete permanently")
        for entry in live:
            entry.deleted = True
        return [v.version for v in live]

    def delete_version(self, subject: str, version_text: str, permanent: bool) -> int:
        entry = self.get_version(subject, version_text, deleted=permanent)
        if self.referenced_by(subject, entry.version):
            raise _RegistryError(422, _REFERENCE_EXISTS,
                                 f"One or more references exist to the schema "
                                 f"{{subject={subject},version={entry.version}}}")
        if permanent:
            if not entry.deleted:
                raise _RegistryError(404, _VERSION_NOT_SOFT_DELETED,
                                     f"Subject '{subject}' Version {entry.version} was not deleted "
                                     "first before being permanently deleted")
            del self.state.subjects[subject][entry.version]
            self._forget_unused_schemas()
        elif entry.deleted:
            raise _RegistryError(404, _VERSION_SOFT_DELETED,
                                 f"Subject '{subject}' Version {entry.version} was soft deleted."
                                 "Set permanent=true to delete permanently")
        else:
            entry.deleted = True
        return entry.version

    def _forget_unused_schemas(self) -> None:
        used = {v.schema.id for versions in self.state.subjects.values() for v in versions.values()}
        for schema_id in list(self.state.schemas_by_id):
            if schema_id not in used:
                del self.state.schemas_by_id[schema_id]

    def test_compatibility(self, subject: str, version_text: str | None, body, verbose: bool) -> dict:
        schema, _ = self._schema_for(body)
        if version_text is None:  # against all versions, as registration would check
            previous = self._live_versions(subject)
        else:
            version = _version_id(version_text)
            live = self._live_versions(subject)
            if version is None:
                previous = live[-1:]
            else:
                previous = [v for v in live if v.version == version]
                if not previous:
                    raise _version_not_found(version)
        messages = self._incompatibilities(self.compatibility_of(subject), schema, previous)
        response = {"is_compatible": not messages}
        if verbose:
            response["messages"] = messages
        return response

    @staticmethod
    def _level_from(body) -> str:
        level = None
        if isinstance(body, dict):
            level = body.get("compatibility") or body.get("compatibilityLevel")
        if not isinstance(level, str) or level.upper() not in COMPATIBILITY_LEVELS:
            raise _RegistryError(422, _INVALID_COMPATIBILITY,
                                 "Invalid compatibility level. Valid values are none, backward, forward, full, "
                                 "backward_transitive, forward_transitive, and full_transitive")
        return level.upper()

    def get_config(self, subject: str | None, default_to_global: bool) -> dict:
        if subject is None or default_to_global:
            return {"compatibilityLevel": self.compatibility_of(subject)}
        if subject not in self.state.subject_compatibility:
            raise _RegistryError(404, _SUBJECT_COMPATIBILITY_NOT_CONFIGURED,
                                 f"Subject '{subject}' does not have subject-level compatibility configured")
        return {"compatibilityLevel": self.state.subject_compatibility[subject]}

    def put_config(self, subject: str | None, body) -> dict:
        level = self._level_from(body)
        if subject is None:
            self.state.global_compatibility = level
        else:
            self.state.subject_compatibility[subject] = level
        return {"compatibility": level}

    def delete_config(self, subject: str | None) -> dict:
        if subject is None:
            old = self.compatibility_of(None)
            self.state.global_compatibility = None
            return {"compatibilityLevel": old}
        if subject not in self.state.subject_compatibility:
            raise _subject_not_found(subject)
        return {"compatibilityLevel": self.state.subject_compatibility.pop(subject)}


# ---------------------------------------------------------------------------------------------
# HTTP
# ---------------------------------------------------------------------------------------------

def _no_such_resource():
    return _RegistryError(404, 404, "HTTP 404 Not Found")


def _method_not_allowed():
    return _RegistryError(405, 405, "HTTP 405 Method Not Allowed")


class _Handler(BaseHTTPRequestHandler):
    server_version = "SchemaRegistryDouble/1.0 (test double)"
    sys_version = ""
    protocol_version = "HTTP/1.0"  # one request per connection: nothing lingers when the double stops

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")

    def do_PUT(self):
        self._handle("PUT")

    def do_DELETE(self):
        self._handle("DELETE")

    def log_message(self, format, *args):  # noqa: A002 - the base class's signature
        if self.server.double.log_requests:
            sys.stderr.write(f"[SchemaRegistryDouble {self.address_string()}] {format % args}\n")

    def _handle(self, method: str) -> None:
        double = self.server.double
        split = urlsplit(self.path)
        query = parse_qs(split.query, keep_blank_values=True)
        # Split before unquoting: the client sends a "/" inside a subject as %2F.
        parts = [unquote(p) for p in split.path.split("/")[1:]]
        if parts and parts[-1] == "":
            parts.pop()
        try:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length > 0 else b""
            if not double._authorized(self.headers.get("Authorization")):
                status, body = 401, {"error_code": 401, "message": "Unauthorized"}
            else:
                try:
                    payload = json.loads(raw) if raw.strip() else None
                except ValueError as exc:
                    raise _RegistryError(400, 400, f"Unparseable JSON request body: {exc}") from None
                with double._lock:
                    status, body = 200, _route(double._registry, method, parts, query, payload)
        except _RegistryError as exc:
            status, body = exc.http_status, {"error_code": exc.error_code, "message": exc.message}
        except Exception as exc:  # a bug in the double: say so rather than hang the client
            status, body = 500, {"error_code": 50001, "message": f"SchemaRegistryDouble internal error: {exc!r}"}
        data = json.dumps(body).encode()
        with double._lock:  # logged before the answer, so a client that has its answer finds its request here
            double._requests.append((method, self.path, status))
        self.send_response(status)
        self.send_header("Content-Type", _CONTENT_TYPE)
        self.send_header("Content-Length", str(len(data)))
        if status == 401:
            self.send_header("WWW-Authenticate", 'Basic realm="SchemaRegistryDouble"')
        self.end_headers()
        self.wfile.write(data)


def _route(registry: _Registry, method: str, parts: list, query: dict, payload):
    def only(*allowed):
        if method not in allowed:
            raise _method_not_allowed()

    n = len(parts)
    head = parts[0] if parts else ""
    if n == 0:
        only("GET")
        return {}
    if head == "schemas" and n >= 2:
        if n == 2 and parts[1] == "types":
            only("GET")
            return ["AVRO"]
        if parts[1] == "ids" and 3 <= n <= 4:
            only("GET")
            schema = registry.schema_by_id(parts[2])
            tail = parts[3] if n == 4 else None
            if tail is None:
                return registry.schema_body(schema)
            if tail == "schema":
                return json.loads(schema.text)
            deleted = _flag(query, "deleted")
            if tail == "subjects":
                return _page(sorted({e.subject for e in registry.subject_versions_of(schema, deleted)}), query)
            if tail == "versions":
                return _page([{"subject": e.subject, "version": e.version}
                              for e in registry.subject_versions_of(schema, deleted)], query)
        raise _no_such_resource()
    if head == "subjects":
        if n == 1:
            only("GET")
            return registry.list_subjects(query)
        subject = parts[1]
        if n == 2:
            only("POST", "DELETE")
            if method == "POST":
                return registry.lookup(subject, payload, _flag(query, "deleted"))
            return registry.delete_subject(subject, _flag(query, "permanent"))
        if parts[2] != "versions":
            raise _no_such_resource()
        if n == 3:
            only("GET", "POST")
            if method == "POST":
                return registry.register(subject, payload)
            return registry.list_versions(subject, query)
        if n == 4:
            only("GET", "DELETE")
            if method == "DELETE":
                return registry.delete_version(subject, parts[3], _flag(query, "permanent"))
            return registry.version_body(registry.get_version(subject, parts[3], _flag(query, "deleted")))
        if n == 5 and parts[4] in ("schema", "referencedby"):
            only("GET")
            entry = registry.get_version(subject, parts[3], _flag(query, "deleted"))
            if parts[4] == "schema":
                return json.loads(entry.schema.text)
            return registry.referenced_by(subject, entry.version)
        raise _no_such_resource()
    if head == "config" and n <= 2:
        only("GET", "PUT", "DELETE")
        subject = parts[1] if n == 2 else None
        if method == "GET":
            return registry.get_config(subject, _flag(query, "defaultToGlobal"))
        if method == "PUT":
            return registry.put_config(subject, payload)
        return registry.delete_config(subject)
    if head == "compatibility" and n in (4, 5) and parts[1] == "subjects" and parts[3] == "versions":
        only("POST")
        return registry.test_compatibility(parts[2], parts[4] if n == 5 else None, payload,
                                           _flag(query, "verbose"))
    raise _no_such_resource()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    double: "SchemaRegistryDouble"
    tls: ssl.SSLContext | None = None

    def finish_request(self, request, client_address):
        """Over TLS, the handshake first, here in the request's thread rather than in the accepting one."""
        if self.tls is None:
            super().finish_request(request, client_address)
            return
        try:
            request = self.tls.wrap_socket(request, server_side=True)
        except OSError:  # the client refused the certificate, or did not speak TLS: the handshake is its answer
            return
        try:
            super().finish_request(request, client_address)
        finally:  # the TLS socket, as the caller shuts down the plain one it was made from
            self.shutdown_request(request)


class SchemaRegistryDouble:
    """A TEST DOUBLE of the Confluent Schema Registry; see the module docstring for what it speaks.

    Use as a context manager (or call ``start()``/``stop()``). ``url`` is ``http://127.0.0.1:<port>``, or
    ``https://`` with a ``certificate``.
    """

    def __init__(self, *, basic_auth: str | None = None, certificate: str | PathLike | None = None,
                 key: str | PathLike | None = None, default_compatibility: str = DEFAULT_COMPATIBILITY,
                 incompatible_error_code: int = 409, log_requests: bool = False):
        if basic_auth is not None and ":" not in basic_auth:
            raise ValueError("basic_auth must be 'username:password'")
        if key is not None and certificate is None:
            raise ValueError("key needs the certificate it belongs to")
        if default_compatibility.upper() not in COMPATIBILITY_LEVELS:
            raise ValueError(f"unknown compatibility level {default_compatibility!r}")
        self._basic_auth = basic_auth
        self._tls = None
        if certificate is not None:  # loaded now, so that a wrong file fails here rather than in each handshake
            self._tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            self._tls.load_cert_chain(certificate, key)
        self.log_requests = log_requests
        self._lock = threading.Lock()
        self._registry = _Registry(default_compatibility.upper(), incompatible_error_code)
        self._requests: list = []
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.url: str | None = None

    # -- lifecycle ----------------------------------------------------------------------------
    def start(self) -> "SchemaRegistryDouble":
        if self._server is not None:
            raise RuntimeError("SchemaRegistryDouble is already running")
        server = _Server(("127.0.0.1", 0), _Handler)
        server.double = self
        server.tls = self._tls
        self._server = server
        self.url = f"{'https' if self._tls else 'http'}://127.0.0.1:{server.server_address[1]}"
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01},
                                        name="SchemaRegistryDouble", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is None:
            return
        self._server = self._thread = None
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join(timeout=5)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def __enter__(self) -> "SchemaRegistryDouble":
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    # -- helpers for tests ----------------------------------------------------------------------
    def client_config(self, **extra) -> dict:
        """A ``SchemaRegistryClient`` configuration for this double, with its credentials if any."""
        conf = {"url": self.url}
        if self._basic_auth is not None:
            conf["basic.auth.user.info"] = self._basic_auth
        conf.update(extra)
        return conf

    @property
    def requests(self) -> list:
        """``(method, path with query, HTTP status)`` of every request so far, oldest first."""
        with self._lock:
            return list(self._requests)

    def _authorized(self, header: str | None) -> bool:
        if self._basic_auth is None:
            return True
        if not header or not header.startswith("Basic "):
            return False
        try:
            given = base64.b64decode(header[len("Basic "):].strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return False
        return hmac.compare_digest(given.encode(), self._basic_auth.encode())
