"""How TiCDC's Debezium protocol types a column (TiCDC ``pkg/sink/codec/debezium/codec.go`` at pingcap/ticdc@b813e76f).

Each column has a field schema (``[tidb_type,] type, optional, [name, version,
parameters,] field``, in the order TiCDC writes it) and a JSON value per row,
which the Debezium MySQL connector's conventions decide: small integers as
int16, decimals as doubles, binary strings and BIT(n) as base64, dates as days,
DATETIME as epoch milli- or microseconds of the wall clock, TIMESTAMP as UTC
text, TIME as microseconds.  Values are rendered a column at a time, like the
other JSON protocols' (``json_text``), with jsoniter's escaping (no HTML escapes).
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...table.mysql_types import MySQLType
from ...table.schema import Column
from ...table.value_text import (bit_bytes, enum_names, float_json_numbers, null_mask, set_names, timestamp_text,
                                 value_text)
from ..shared.json_text import PLAIN, bare_fragments, base64_fragments, json_fragments, quote_json
from ..shared.names import escape_member

_NAMED_TYPES = {"date": ("int32", "io.debezium.time.Date"), "time": ("int64", "io.debezium.time.MicroTime"),
                "timestamp": ("string", "io.debezium.time.ZonedTimestamp"),
                "year": ("int32", "io.debezium.time.Year"), "json": ("string", "io.debezium.data.Json")}
_INTEGER_TYPES = {"tinyint": ("int16", "int16"), "smallint": ("int16", "int32"), "mediumint": ("int32", "int32"),
                  "int": ("int32", "int64"), "bigint": ("int64", "int64")}  # signed, unsigned
# Types whose names TiCDC never suffixes with unsigned (tidb_type, a DDL column's typeName).
NO_UNSIGNED_SUFFIX = {"year", "bit", "varchar", "char", "decimal"}
_TRUE_FALSE = pa.array(["false", "true"], pa.string())
# Dates before year 100 are read as two-digit years by TiCDC (the Debezium MySQL connector's rule).
_FIRST_FOUR_DIGIT_DAY = (dt.date(100, 1, 1) - dt.date(1970, 1, 1)).days


def tidb_type(t: MySQLType) -> str:
    """TiDB's lower-case type name, ``unsigned`` for unsigned numbers (``tidb_type`` of the extension)."""
    return t.base_name + " unsigned" if t.unsigned and t.kind not in NO_UNSIGNED_SUFFIX else t.base_name


def field_schema(column: Column, extension: bool) -> str:
    """The column's field schema, compact JSON in TiCDC's order."""
    t = column.type
    parts = [f'"tidb_type":{quote_json(tidb_type(t), style=PLAIN)},'] if extension else []
    schema_type, name, parameters = connect_type(t)
    parts.append(f'"type":"{schema_type}","optional":{"true" if column.nullable else "false"},')
    if name:
        parts.append(f'"name":"{name}","version":1,')
    if parameters:
        key, value = parameters
        parts.append(f'"parameters":{{"{key}":{quote_json(value, style=PLAIN)}}},')
    parts.append(f'"field":{quote_json(column.name, style=PLAIN)}')
    return "{" + "".join(parts) + "}"


def connect_type(t: MySQLType) -> tuple[str, str | None, tuple[str, str] | None]:
    """(type, name, parameters) of a column's field schema."""
    if t.kind in _INTEGER_TYPES:
        return _INTEGER_TYPES[t.kind][t.unsigned], None, None
    if t.kind == "float":
        return ("float" if t.decimals is None else "double"), None, None  # FLOAT(M,D), D=0 too, is double
    if t.kind in ("double", "decimal"):
        return "double", None, None
    if t.kind == "bit":
        if t.length == 1:
            return "boolean", None, None
        return "bytes", "io.debezium.data.Bits", ("length", str(t.length))
    if t.kind == "enum":
        return "string", "io.debezium.data.Enum", ("allowed", ",".join(escape_member(e) for e in t.elements))
    if t.kind == "set":
        return "string", "io.debezium.data.EnumSet", ("allowed", ",".join(t.elements))
    if t.kind == "datetime":
        return "int64", "io.debezium.time.Timestamp" if t.fsp <= 3 else "io.debezium.time.MicroTimestamp", None
    if t.kind in _NAMED_TYPES:
        schema_type, name = _NAMED_TYPES[t.kind]
        return schema_type, name, None
    return "string", None, None  # character and binary strings


def value_fragments(values: pa.Array, column: Column, time_zone: str) -> pa.Array:
    """The JSON value of each row of a canonical column (``null`` for NULL)."""
    t = column.type
    if t.kind == "bigint" and t.unsigned:  # TiCDC writes the uint64 as an int64: 2^64-1 is -1
        numbers = pc.fill_null(values, 0).to_numpy(zero_copy_only=False).astype(np.uint64).view(np.int64)
        return bare_fragments(pa.array(numbers, mask=null_mask(values)).cast(pa.string()))
    if t.is_integer or t.kind in ("year", "time"):
        return bare_fragments(values.cast(pa.string()))
    if t.kind == "float":
        return bare_fragments(float_json_numbers(values, 32))
    if t.kind in ("double", "decimal"):
        doubles = decimal_doubles(values) if t.kind == "decimal" else values
        return bare_fragments(float_json_numbers(doubles, 64))
    if t.kind == "bit":
        if t.length == 1:
            return bare_fragments(_TRUE_FALSE.take(values.cast(pa.int8())))
        return base64_fragments(bit_bytes(values, (t.length + 7) // 8, "little"))
    if t.kind == "enum":
        return json_fragments(enum_names(values, t.elements), style=PLAIN)
    if t.kind == "set":
        return json_fragments(set_names(values, t.elements), style=PLAIN)
    if t.kind == "date":
        return bare_fragments(two_digit_years(values.cast(pa.int32()), days=True).cast(pa.string()))
    if t.kind == "datetime":
        micros = two_digit_years(values.cast(pa.timestamp("us")).cast(pa.int64()), days=False)
        return bare_fragments((micros if t.fsp > 3 else pc.divide(micros, 1000)).cast(pa.string()))
    if t.kind == "timestamp":
        return json_fragments(timestamp_text(values, t.fsp, "UTC", separator="T", suffix="Z"), escape=False)
    if t.is_string and t.binary:
        return base64_fragments(values)
    return json_fragments(value_text(values, t, time_zone), escape=t.is_string or t.kind == "json", style=PLAIN)


def decimal_doubles(values: pa.Array) -> pa.Array:
    """The double nearest each decimal, as TiCDC's ``strconv.ParseFloat`` of its text gives it.

    A decimal128 whose unscaled integer is within 2^53 and whose scale is at most 22 is the quotient of two
    exact doubles, and IEEE division rounds it correctly; only other values are parsed from their text.
    """
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    t = values.type
    if not pa.types.is_decimal128(t) or not 0 <= t.scale <= _EXACT_POWERS_OF_TEN or len(values) == 0:
        return values.cast(pa.string()).cast(pa.float64())
    words = np.frombuffer(values.buffers()[1], dtype=np.int64)[2 * values.offset: 2 * (values.offset + len(values))]
    low, high = words[0::2], words[1::2]
    exact = (high == (low >> 63)) & (low >= -_EXACT_INTEGERS) & (low <= _EXACT_INTEGERS)
    nulls = null_mask(values)
    doubles = pa.array(low.astype(np.float64) / float(10 ** t.scale), mask=nulls)
    if nulls is not None:
        exact |= nulls
    if exact.all():
        return doubles
    inexact = ~exact
    parsed = values.filter(pa.array(inexact)).cast(pa.string()).cast(pa.float64())
    return pc.replace_with_mask(doubles, pa.array(inexact), parsed)


_EXACT_INTEGERS = 2**53
_EXACT_POWERS_OF_TEN = 22


def two_digit_years(numbers: pa.Array, days: bool) -> pa.Array:
    """Epoch days (or microseconds) with years 0-69 read as 2000-2069 and 70-99 as 1970-1999."""
    limit = _FIRST_FOUR_DIGIT_DAY if days else _FIRST_FOUR_DIGIT_DAY * 86_400_000_000
    early = pc.fill_null(pc.less(numbers, pa.scalar(limit, numbers.type)), False)
    if not pc.any(early).as_py():
        return numbers
    fixed = [_shift_two_digit_year(v, days) for v in numbers.filter(early).to_pylist()]
    return pc.replace_with_mask(numbers, early, pa.array(fixed, numbers.type))


def _shift_two_digit_year(number: int, days: bool) -> int:
    epoch = dt.datetime(1970, 1, 1)
    moment = epoch + (dt.timedelta(days=number) if days else dt.timedelta(microseconds=number))
    if moment.year < 100:
        moment = moment.replace(year=moment.year + (2000 if moment.year < 70 else 1900))
    delta = moment - epoch
    return delta.days if days else delta // dt.timedelta(microseconds=1)
