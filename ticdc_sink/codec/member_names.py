"""ENUM and SET values back from the member names a protocol carries (Avro, Debezium)."""

from __future__ import annotations

import re

_UNESCAPED_COMMA = re.compile(r"(?<!\\),")


def allowed_members(text: str, escaped: bool = True) -> list[str]:
    """The members of an ``allowed`` list: joined by commas, a comma inside a member written ``\\,``
    (``escaped``; Debezium's SET list does not escape)."""
    if not text:
        return []
    if not escaped:
        return text.split(",")
    return [member.replace("\\,", ",") for member in _UNESCAPED_COMMA.split(text)]


def enum_index(members: list[str], name: str) -> int:
    """TiDB's ENUM value: the member's 1-based index, 0 for a name that is no member."""
    return members.index(name) + 1 if name in members else 0


def set_bitmask(members: list[str], names: str) -> int:
    """TiDB's SET value: a bit per member named in the comma-joined ``names``."""
    return sum(1 << members.index(m) for m in names.split(",") if m in members)
