"""A column's DEFAULT as TiDB stores it: the text ``ColumnInfo.GetDefaultValue()`` hands TiCDC.

TiDB (``pkg/ddl/add_column.go``, ``getDefaultValue``) converts a literal to
the column's type and keeps its text: integers and floats as the column's
value (``1.6`` in an INT is ``2``), dates and times at the column's fsp, ENUM
and SET by their members' names, a BIT as its bytes, a DECIMAL as the literal's
own digits (``1.5`` stays ``1.5`` in a DECIMAL(5,2)), CURRENT_TIMESTAMP as that
word.  The sink checks the value as it checks a row's (``changes/canonical.py``)
and renders it with ``value_text.py``, so a default reads as the column's
values do.  A default the type cannot hold is refused, as MySQL refuses
``Invalid default value``.  A BIT's bytes are kept as a ``str`` of code points
0-255 (Go's string of bytes), which ``bit_default_number`` reads back.
"""

from __future__ import annotations

import datetime as dt
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

import pyarrow as pa

from .mysql_types import INTEGER_KINDS, MySQLType
from .type_grammar import DefaultLiteral
from .value_text import enum_names, go_float_text, set_names, value_text

CURRENT_TIMESTAMP = "CURRENT_TIMESTAMP"
# TiDB refuses a literal DEFAULT for these (MySQL error 1101).
_NO_LITERAL_DEFAULT = {"tinytext", "text", "mediumtext", "longtext", "json"}


class InvalidDefault(ValueError):
    """A DEFAULT the column's type cannot hold; the message says why."""


def stored_default(literal: DefaultLiteral | None, t: MySQLType, nullable: bool) -> str | None:
    """TiDB's stored text of ``literal`` for a column of type ``t`` (None: no default, or DEFAULT NULL)."""
    if literal is None:
        return None
    if literal.kind == "null":
        if not nullable:
            raise InvalidDefault("a NOT NULL column cannot default to NULL")
        return None
    if t.kind in _NO_LITERAL_DEFAULT:
        raise InvalidDefault(f"a {t.short_name.upper()} column cannot have a literal default")
    if literal.kind == "now":
        if t.kind not in ("datetime", "timestamp"):
            raise InvalidDefault("CURRENT_TIMESTAMP is a default of DATETIME and TIMESTAMP only")
        if literal.value != t.fsp:
            raise InvalidDefault(f"CURRENT_TIMESTAMP's precision must be the column's ({t.fsp})")
        return CURRENT_TIMESTAMP if not t.fsp else f"{CURRENT_TIMESTAMP}({t.fsp})"
    if t.kind == "bit":
        return _bit(literal, t)
    if literal.kind == "bits":
        if t.kind in INTEGER_KINDS or t.kind in ("float", "double", "decimal", "year"):
            literal = DefaultLiteral("number", str(int.from_bytes(literal.value, "big")), literal.text)
        else:
            try:
                literal = DefaultLiteral("string", literal.value.decode(), literal.text)
            except UnicodeDecodeError:
                raise InvalidDefault("its bytes are not UTF-8 text") from None
    if t.kind == "decimal" and literal.kind == "number":
        try:
            number = Decimal(literal.value)
        except InvalidOperation:
            raise InvalidDefault("it is not a number") from None
        _canonical(pa.array([number]), t)
        return literal.value.lstrip("+") if "e" not in literal.value.lower() else format(number, "f")
    return _as_column_value(literal, t)


def _bit(literal: DefaultLiteral, t: MySQLType) -> str:
    """A BIT default: the literal's bytes (``b'101'`` is 0x05), a number's fewest bytes."""
    if literal.kind == "bits":
        data = literal.value
    elif literal.kind == "number" and literal.value.isdigit():
        number = int(literal.value)
        data = number.to_bytes(max(1, (number.bit_length() + 7) // 8), "big")
    else:
        raise InvalidDefault("a BIT default is b'..', x'..' or a non-negative integer")
    if int.from_bytes(data, "big") >= 2 ** t.length:
        raise InvalidDefault(f"it has more than {t.length} bits")
    return data.decode("latin-1")


def bit_default_number(text: str) -> int:
    """The number of a BIT column's stored default (its bytes, big-endian)."""
    return int.from_bytes(text.encode("latin-1"), "big")


def _as_column_value(literal: DefaultLiteral, t: MySQLType) -> str:
    """The literal converted to the column's type, as a row's value would be, and that value's text."""
    text = literal.value
    kind = t.kind
    if kind in INTEGER_KINDS or kind == "year":
        try:
            number = Decimal(text).quantize(Decimal(1), ROUND_HALF_UP)
        except InvalidOperation:
            raise InvalidDefault("it is not an integer") from None
        if kind == "year" and 0 < number < 100:
            number += 2000 if number < 70 else 1900
        if not -2**63 <= number < 2**64:
            raise InvalidDefault(f"it is out of range for {t.short_name}")
        return _text(pa.array([number], pa.decimal128(20, 0)), t)  # as a BIGINT UNSIGNED arrives
    if kind in ("float", "double"):
        try:
            number = float(text)
        except ValueError:
            raise InvalidDefault("it is not a number") from None
        return go_float_text(_canonical(pa.array([number]), t)[0].as_py(), 32 if kind == "float" else 64)
    if kind == "decimal":
        return _text(pa.array([text]), t)
    if kind == "date":
        return _text(pa.array([_parse(dt.date.fromisoformat, text)]), t)
    if kind in ("datetime", "timestamp"):
        # A TIMESTAMP default is read as UTC, the time zone TiDB keeps it in.
        value = _parse(dt.datetime.fromisoformat, text)
        zoned = value.replace(tzinfo=dt.timezone.utc) if kind == "timestamp" else value
        return _text(pa.array([zoned]), t)
    if kind == "enum":
        return enum_names(_canonical(pa.array([text]), t), t.elements)[0].as_py()
    if kind == "set":
        return set_names(_canonical(pa.array([text]), t), t.elements)[0].as_py()
    if kind in ("char", "varchar") and t.length is not None and len(text) > t.length:
        raise InvalidDefault(f"it is longer than {t.short_name.upper()}({t.length})")
    return _text(pa.array([text]), t)


def _parse(parse, text: str):
    try:
        return parse(text)
    except ValueError:
        raise InvalidDefault(f"{text!r} is not a {parse.__qualname__.split('.')[0].upper()} value") from None


def _text(values: pa.Array, t: MySQLType) -> str:
    text = value_text(_canonical(values, t), t)[0].as_py()
    return text.decode() if isinstance(text, bytes) else text


def _canonical(values: pa.Array, t: MySQLType) -> pa.Array:
    """The value as the column would hold it, or InvalidDefault saying why not."""
    # changes/ builds on the column model, which holds defaults: import at use.
    from ..changes.canonical import BadValue, canonical_type_values

    try:
        return canonical_type_values(values, t, "UTC")
    except BadValue as bad:
        raise InvalidDefault(bad.problem) from None
