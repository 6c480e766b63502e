"""What the decoders share: TiDB values back from the text, names and numbers the protocols carry."""

from __future__ import annotations

import datetime as dt
import io
import re
from decimal import ROUND_HALF_UP, Context, Decimal
from typing import Any, Callable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from ...table.mysql_types import MySQLType, tidb_arrow_type

_UNESCAPED_COMMA = re.compile(r"(?<!\\),")
_JSON_BLOCK_BYTES = 1 << 24  # a chunk of messages parses as one block where it fits


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


def typed_row(row: dict[str, Any] | None, convert: Callable[[str, Any], Any]) -> dict[str, Any] | None:
    """A decoded row's values as ``convert(column name, value)`` types them (None: no row)."""
    return None if row is None else {name: convert(name, value) for name, value in row.items()}


def unsigned_64(number: int) -> int:
    """A 64-bit unsigned value that a protocol carried as its bits in a signed long (2^64-1 as -1)."""
    return number % 2**64


def text_value(text: str | None, mysql_type: str) -> Any:
    """A value as TiDB's text (Canal-JSON's, Simple's) back to a Python value, typed by its MySQL type name.

    Integers, BIT, YEAR, ENUM (index) and SET (bitmask) become int; FLOAT/DOUBLE
    float; DECIMAL Decimal; DATE date; DATETIME/TIMESTAMP naive datetime in the
    rendering time zone; binary types bytes; TIME, JSON and text stay str.
    """
    if text is None:
        return None
    base = mysql_type.lower().split("(")[0].split(" ")[0]
    if base in ("tinyint", "smallint", "mediumint", "int", "bigint", "bit", "year", "enum", "set"):
        return int(text)
    if base in ("float", "double"):
        return float(text.replace("+Inf", "inf").replace("-Inf", "-inf"))
    if base == "decimal":
        return Decimal(text)
    if base == "date":
        return dt.date.fromisoformat(text)
    if base in ("datetime", "timestamp"):
        return dt.datetime.fromisoformat(text)
    if "blob" in base or "binary" in base:
        return text.encode("latin-1")
    return text


def tidb_values(values: list, t: MySQLType) -> pa.Array:
    """A column's decoded values as TiDB values of type ``t`` (``table/mysql_types.tidb_arrow_type``), a DECIMAL's each the nearest
    value of its type (``nearest_decimal``), an integer's a whole number (``whole_number``)."""
    arrow_type = tidb_arrow_type(t)
    if pa.types.is_decimal(arrow_type):
        values = [None if v is None else nearest_decimal(v, arrow_type.precision, arrow_type.scale) for v in values]
    elif pa.types.is_integer(arrow_type):
        values = [whole_number(v) for v in values]
    return pa.array(values, arrow_type)


def whole_number(value: Any) -> Any:
    """An integer column's value: a JSON boolean (Debezium's BIT(1) without its schema) as TiDB's 1 or 0; a number
    with a fraction is refused, being no value of the column (Arrow would cut the fraction off)."""
    if isinstance(value, (bool, float, Decimal)):
        if value != int(value):
            raise ValueError(f"{value} is not a whole number")
        return int(value)
    return value


def nearest_decimal(value: Decimal | float | int | str, precision: int, scale: int) -> Decimal:
    """A DECIMAL's value as one of ``decimal(precision, scale)``: rounded half away from zero to the scale, as TiDB
    stores a value in a DECIMAL column (TiCDC's decoders do so with the double Debezium carries: its shortest
    text).  A value with more integer digits than the type holds is refused, not clamped."""
    exact = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    if exact.is_finite() and _fits(exact, precision - scale):
        rounded = exact.quantize(Decimal(1).scaleb(-scale), ROUND_HALF_UP, Context(prec=precision + 1))
        if _fits(rounded, precision - scale):
            return rounded
    raise ValueError(f"{value} has more integer digits than decimal({precision},{scale}), its Spark type, holds")


def _fits(number: Decimal, integer_digits: int) -> bool:
    return number.is_zero() or number.adjusted() < integer_digits


def text_values(texts: pa.Array, t: MySQLType) -> pa.Array:
    """``text_value`` a column at a time: TiDB's text of a column of type ``t`` back to its TiDB values
    (``table.spark_types.tidb_arrow_type``).  Binary strings are the text's code points as bytes."""
    arrow_type = tidb_arrow_type(t)
    if pa.types.is_binary(arrow_type):
        return pa.array([None if text is None else text.encode("latin-1") for text in texts.to_pylist()],
                        pa.binary())
    if pa.types.is_floating(arrow_type):
        texts = pc.replace_substring(texts, "Inf", "inf")
    return texts.cast(arrow_type)


def json_lines(texts: list[bytes], schema: pa.Schema) -> pa.Table | None:
    """JSON texts parsed at once by Arrow's JSON reader, a row each, into ``schema`` (other fields ignored).

    None where they cannot be: a text that is not one JSON value on one line (JSON escapes the newlines in its
    strings, so only such a text holds one), or that does not fit the schema; the caller then goes text by text,
    which names the bad one.
    """
    if any(b"\n" in text for text in texts):
        return None
    block = max(_JSON_BLOCK_BYTES, 2 * max(map(len, texts), default=0))  # a block holds a whole text
    try:
        parsed = pa_json.read_json(io.BytesIO(b"\n".join(texts)),
                                   read_options=pa_json.ReadOptions(use_threads=False, block_size=block),
                                   parse_options=pa_json.ParseOptions(explicit_schema=schema,
                                                                      unexpected_field_behavior="ignore"))
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    return parsed if parsed.num_rows == len(texts) else None
