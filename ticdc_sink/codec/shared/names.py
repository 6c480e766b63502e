"""TiCDC's rules for the names that schema-carrying protocols write (Avro, Debezium): common/helper.go."""

from __future__ import annotations

import re

_FIRST_INVALID = re.compile(r"^[^A-Za-z_]")
_INVALID = re.compile(r"[^A-Za-z0-9_]")
_INVALID_IN_TOPIC_NAME = re.compile(r"[^A-Za-z0-9_.]")


def sanitize_name(name: str) -> str:
    """An Avro name from a TiDB one (``SanitizeName``): a first character outside ``[A-Za-z_]`` gets ``_``
    before it (digits are kept, anything else becomes that ``_``), others outside ``[A-Za-z0-9_]`` become ``_``."""
    if _FIRST_INVALID.match(name):
        name = "_" + name if "0" <= name[0] <= "9" else "_" + name[1:]
    return _INVALID.sub("_", name)


def sanitize_topic_name(name: str) -> str:
    """``SanitizeTopicName``: every character outside ``[A-Za-z0-9_.]`` becomes ``_``."""
    return _INVALID_IN_TOPIC_NAME.sub("_", name)


def escape_member(member: str) -> str:
    """An ENUM/SET member in an ``allowed`` list, as ``EscapeEnumAndSetOptions`` writes it: commas escaped,
    doubled and backslash-escaped quotes made single."""
    return member.replace(",", "\\,").replace("\\'", "'").replace("''", "'")
