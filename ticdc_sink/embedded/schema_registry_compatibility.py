"""The Schema Registry double's compatibility levels, and the messages that explain an incompatible schema.

Levels: NONE, BACKWARD (the default), FORWARD, FULL and their _TRANSITIVE forms. BACKWARD means the new schema
reads data written with the old one, FORWARD the other way round, FULL both (``schema_registry_resolution``
decides each). Non-transitive levels check against the latest live version, transitive ones against every live
version. The messages follow the registry's wording, because clients and tests compare them, e.g.::

    {errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'email' at path '/fields/2' in
     the new schema has no default value and is missing in the old schema', additionalInfo:'email'},
    {oldSchemaVersion: 1}, {oldSchema: '...'}, {validateFields: 'false', compatibility: 'BACKWARD'}
"""

from __future__ import annotations

from .schema_registry_errors import INVALID_COMPATIBILITY, RegistryError
from .schema_registry_resolution import Incompatibility, ReaderWriterCheck
from .schema_registry_schema import StoredSchema, SubjectVersion

DEFAULT_COMPATIBILITY = "BACKWARD"
COMPATIBILITY_LEVELS = frozenset(
    {"NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE"}
)

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


def _describe(found: Incompatibility, reader: str, writer: str) -> str:
    path = "/" + "/".join(found.location)
    description = _DESCRIPTIONS[found.kind].format(path=path, reader=reader, writer=writer, info=found.info)
    return f"{{errorType:'{found.kind}', description:'{description}', additionalInfo:'{found.info}'}}"


def _old_schema_notes(old_version: SubjectVersion) -> list:
    return [f"{{oldSchemaVersion: {old_version.version}}}", f"{{oldSchema: '{old_version.schema.text}'}}"]


def incompatibilities(level: str, new: StoredSchema, previous: list) -> list:
    """Messages as the registry's SchemaValidatorBuilder writes them; [] when compatible.

    ``previous`` is the subject's live versions, oldest first.
    """
    if level == "NONE" or not previous:
        return []
    base = level.removesuffix("_TRANSITIVE")
    targets = list(reversed(previous)) if level.endswith("_TRANSITIVE") else [previous[-1]]
    for old_version in targets:
        old = old_version.schema
        messages = []
        if base in ("FORWARD", "FULL"):  # old schema reads data written with the new one
            found = ReaderWriterCheck(old.named, new.named).check(old.parsed, new.parsed, [])
            messages.extend(_describe(f, "old", "new") for f in found)
            if found and base == "FORWARD":
                messages.extend(_old_schema_notes(old_version))
        if base in ("BACKWARD", "FULL"):  # new schema reads data written with the old one
            found = ReaderWriterCheck(new.named, old.named).check(new.parsed, old.parsed, [])
            messages.extend(_describe(f, "new", "old") for f in found)
            if found:
                messages.extend(_old_schema_notes(old_version))
        if messages:
            messages.append(f"{{validateFields: 'false', compatibility: '{level}'}}")
            return messages
    return []


def level_from(body) -> str:
    """The level a ``PUT /config`` body asks for, upper-cased; 422 42203 unless it is one."""
    level = None
    if isinstance(body, dict):
        level = body.get("compatibility") or body.get("compatibilityLevel")
    if not isinstance(level, str) or level.upper() not in COMPATIBILITY_LEVELS:
        raise RegistryError(422, INVALID_COMPATIBILITY,
                            "Invalid compatibility level. Valid values are none, backward, forward, full, "
                            "backward_transitive, forward_transitive, and full_transitive")
    return level.upper()
