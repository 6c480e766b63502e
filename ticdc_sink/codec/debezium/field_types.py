"""How TiCDC's Debezium protocol types a column (TiCDC ``pkg/sink/codec/debezium/codec.go`` at pingcap/ticdc@b813e76f).

Each column has a field schema (``[tidb_type,] type, optional, [name, version,
parameters,] field``, in the order TiCDC writes it) and a JSON value per row,
which the Debezium MySQL connector's conventions decide: small integers as
int16, decimals as doubles, binary strings and BIT(n) as base64, dates as days,
DATETIME as epoch milli- or microseconds of the wall clock, TIMESTAMP as UTC
text, TIME as microseconds.  Values are rendered a column at a time, like the
other JSON protocols' (``json_text``), with jsoniter's escaping (no HTML escapes).
A column's DEFAULT is its field schema's ``default`` (``field_default``) and
stands in for its NULLs (``NullDefault``), as TiCDC writes them.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...changes.canonical import canonical_type_values
from ...errors import ContractError
from ...table.column_default import CURRENT_TIMESTAMP, bit_default_number
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
    default = field_default(column)
    if default is not None:
        parts.append(f',"default":{default}')
    return "{" + "".join(parts) + "}"


_NUMBER_KINDS = {"tinyint", "smallint", "mediumint", "int", "bigint", "float", "double", "decimal", "year"}
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_TEXT = '"1970-01-01T00:00:00Z"'
# TIMESTAMP's first second: TiCDC writes an earlier default as the epoch (NOT NULL) or not at all.
_MIN_TIMESTAMP = dt.datetime(1970, 1, 1, 0, 0, 1)


def field_default(column: Column) -> str | None:
    """The field schema's ``default`` as JSON text, None where TiCDC writes none (TiCDC ``codec.go``
    ``writeDebeziumFieldSchema``): numbers are Go floats of the stored text; text, ENUM and SET the text itself;
    dates, times and BITs the value the stored text is, read in UTC, as a row's value renders."""
    text, t = column.default, column.type
    if text is None:
        return None
    if t.kind in _NUMBER_KINDS:
        number = float(text)
        if t.kind == "year" and number < 100:  # TiCDC's two-digit years
            number += 2000 if number < 70 else 1900
        return float_json_numbers(pa.array([number], pa.float64()), 64)[0].as_py()
    if t.kind not in ("bit", "date", "datetime", "timestamp", "time"):
        return quote_json(text, style=PLAIN)
    if text.startswith(CURRENT_TIMESTAMP):
        # Only the bare word is known to TiCDC; CURRENT_TIMESTAMP(n) fails to parse, which it writes as 0.
        if t.kind == "timestamp" and text == CURRENT_TIMESTAMP:
            return None if column.nullable else _EPOCH_TEXT
        return "0"
    if t.kind == "timestamp" and dt.datetime.fromisoformat(text) < _MIN_TIMESTAMP:
        return None if column.nullable else _EPOCH_TEXT
    return value_fragments(_stored_value(column, "UTC"), column, "UTC")[0].as_py()


def _stored_value(column: Column, time_zone: str) -> pa.Array:
    """The column's stored DEFAULT as a one-row canonical column (a TIMESTAMP's text read in ``time_zone``)."""
    text, t = column.default, column.type
    if t.kind == "bit":
        value = bit_default_number(text)
    elif t.kind in ("datetime", "timestamp"):
        value = dt.datetime.fromisoformat(text)
    elif t.kind == "date":
        value = dt.date.fromisoformat(text)
    elif t.kind == "decimal":
        value = Decimal(text)
    elif t.kind in ("float", "double"):
        value = float(text)
    elif t.is_integer or t.kind == "year":
        value = int(text)
    else:
        value = text
    return canonical_type_values(pa.array([value]), t, time_zone)


class NullDefault:
    """What TiCDC writes for a NULL of a column with a DEFAULT: it gives the row the stored default and writes
    that (TiCDC ``codec.go`` ``writeDebeziumFieldValue``, ``avro.go`` ``debeziumAvroFieldValue``, ``helper.go``
    ``getValueFromDefault``).  Most kinds get the default's value; TIME gets 0 and BIGINT UNSIGNED above
    2^63-1 gets 0 (neither parses into the row); a nullable TIMESTAMP defaulting to CURRENT_TIMESTAMP, or
    to a time before TIMESTAMP's range, stays null; a DATETIME's CURRENT_TIMESTAMP is the epoch.  TiCDC
    cannot write a NULL of a DATE (it panics) or of a CURRENT_TIMESTAMP(n) default (an error): the sink
    refuses those rows.  ``value`` is None where NULLs stay null."""

    def __init__(self, column: Column, time_zone: str):
        self.column, self.value, self.refusal = column, None, None
        text, t = column.default, column.type
        if t.kind == "date":
            self.refusal = "TiCDC's Debezium encoder panics on a NULL DATE that has a DEFAULT"
        elif t.kind in ("datetime", "timestamp") and text.startswith(CURRENT_TIMESTAMP):
            if text != CURRENT_TIMESTAMP:
                self.refusal = f"TiCDC's Debezium encoder cannot read the DEFAULT {text} of a NULL (its error)"
            elif t.kind == "datetime" or not column.nullable:
                self.value = pa.scalar(_EPOCH, pa.timestamp("us", tz=None if t.kind == "datetime" else "UTC"))
        elif t.kind == "time":
            self.value = pa.scalar(0, pa.int64())
        elif t.kind == "bigint" and t.unsigned and int(text) >= 2**63:
            self.value = pa.scalar(0, pa.uint64())
        elif t.kind != "timestamp" or dt.datetime.fromisoformat(text) >= _MIN_TIMESTAMP:
            self.value = _stored_value(column, time_zone)[0]

    def fill(self, values: pa.Array, describe_row: Callable[[int], str]) -> pa.Array:
        """``values`` with their NULLs as TiCDC writes them; ContractError where TiCDC cannot write one."""
        if not values.null_count:
            return values
        if self.refusal:
            row = int(np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))[0])
            raise ContractError(self.column.name, None, describe_row(row), self.refusal)
        return values if self.value is None else pc.fill_null(values, self.value.cast(values.type))


def null_defaults(columns: list[Column], time_zone: str) -> dict[str, NullDefault]:
    """The ``NullDefault`` of each column that has a DEFAULT, by name."""
    return {c.name: NullDefault(c, time_zone) for c in columns if c.default is not None}


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
