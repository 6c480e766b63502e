"""Avro schema resolution: can data written with one schema be read with another?

The registry's compatibility levels all come down to this question, asked of a new schema and an old one in
one direction or both. The answer follows Avro's Java ``SchemaCompatibility``, which the real registry uses:
records, enums, fixed, arrays, maps, unions, named-type references and the primitive promotions
int->long/float/double, long->float/double, float->double and string<->bytes. Logical types are ignored, as
there. Each problem found is an ``Incompatibility`` named by Avro's errorType, at a path in the reader schema.
"""

from __future__ import annotations

from dataclasses import dataclass

from .schema_registry_schema import PRIMITIVES

_NAMED = frozenset({"record", "error", "enum", "fixed"})
# reader type -> writer types it can read by promotion (Avro spec, "Schema Resolution")
_PROMOTIONS = {
    "long": {"int"},
    "float": {"int", "long"},
    "double": {"int", "long", "float"},
    "bytes": {"string"},
    "string": {"bytes"},
}


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
class Incompatibility:
    """One reason the reader cannot read the writer's data, at ``location`` (path segments) in the reader."""

    kind: str  # the errorType of Avro's SchemaIncompatibilityType
    location: list
    info: str


class ReaderWriterCheck:
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
                if schema in PRIMITIVES:
                    return schema
                schema = named[schema]
                continue
            if isinstance(schema, dict):
                inner = schema.get("type")
                if inner in PRIMITIVES:
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
            if reader_kind in PRIMITIVES:
                return []
            if reader_kind == "array":
                return self.check(reader["items"], writer["items"], location + ["items"])
            if reader_kind == "map":
                return self.check(reader["values"], writer["values"], location + ["values"])
            if reader_kind == "union":
                found = []
                for index, branch in enumerate(writer):
                    if self.check(reader, branch, location + [str(index)]):
                        found.append(Incompatibility(
                            "MISSING_UNION_BRANCH", location + [str(index)],
                            f"reader union lacking writer type: {_type_name(self._resolve(branch, self._writer_named))}",
                        ))
                return found
            found = self._check_names(reader, writer, location)
            if reader_kind == "fixed" and reader["size"] != writer["size"]:
                found.append(Incompatibility(
                    "FIXED_SIZE_MISMATCH", location + ["size"],
                    f"expected: {writer['size']}, found: {reader['size']}",
                ))
            elif reader_kind == "enum" and "default" not in reader:
                missing = [s for s in writer["symbols"] if s not in reader["symbols"]]
                if missing:
                    found.append(Incompatibility(
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
            return [Incompatibility(
                "MISSING_UNION_BRANCH", location, f"reader union lacking writer type: {_type_name(writer)}"
            )]
        if writer_kind in _PROMOTIONS.get(reader_kind, ()):
            return []
        return [Incompatibility(
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
        return [Incompatibility("NAME_MISMATCH", location + ["name"], f"expected: {writer['name']}")]

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
                    found.append(Incompatibility("READER_FIELD_MISSING_DEFAULT_VALUE", where, reader_field["name"]))
            else:
                found.extend(self.check(reader_field["type"], writer_field["type"], where + ["type"]))
        return found

