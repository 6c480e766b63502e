"""The column model read back: a MySQL column's Spark type, and its decoded value as that type holds it.

The inverse of ``schema.default_mysql_type`` and of the design's "How values
of declared MySQL types arrive in Spark columns", so that a topic read and
written again round-trips: TINYINT(1) is boolean, BIGINT UNSIGNED
decimal(20,0), ENUM and SET their member names, BIT a long, TIME text,
DATETIME timestamp_ntz and TIMESTAMP timestamp.  A type a protocol carries
without its parameters reads as far as they are known: DECIMAL without a
precision as decimal(38,18), ENUM and SET without members as their index and
bitmask (longs).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any, Callable
from zoneinfo import ZoneInfo

from pyspark.sql import types as T

from .mysql_types import MySQLType

SPARK_MAX_PRECISION = 38
UNKNOWN_DECIMAL = T.DecimalType(38, 18)  # a DECIMAL whose precision the protocol does not carry
_SIGNED_INTEGERS = {"tinyint": T.ByteType(), "smallint": T.ShortType(), "mediumint": T.IntegerType(),
                    "int": T.IntegerType(), "bigint": T.LongType()}
_UNSIGNED_INTEGERS = {"tinyint": T.ShortType(), "smallint": T.IntegerType(), "mediumint": T.IntegerType(),
                      "int": T.LongType(), "bigint": T.DecimalType(20, 0)}
_BY_KIND = {"float": T.FloatType(), "double": T.DoubleType(), "bit": T.LongType(), "year": T.IntegerType(),
            "date": T.DateType(), "datetime": T.TimestampNTZType(), "timestamp": T.TimestampType(),
            "time": T.StringType(), "json": T.StringType()}


def spark_type_of(t: MySQLType) -> T.DataType:
    """The Spark type a column of MySQL type ``t`` reads as."""
    if t.is_integer:
        if t.kind == "tinyint" and t.length == 1 and not t.unsigned:
            return T.BooleanType()
        return (_UNSIGNED_INTEGERS if t.unsigned else _SIGNED_INTEGERS)[t.kind]
    if t.kind == "decimal":
        if t.length is None:
            return UNKNOWN_DECIMAL
        return T.DecimalType(min(t.length, SPARK_MAX_PRECISION), min(t.decimals or 0, SPARK_MAX_PRECISION))
    if t.kind in ("enum", "set"):
        return T.StringType() if t.elements else T.LongType()
    if t.is_string:
        return T.BinaryType() if t.binary else T.StringType()
    return _BY_KIND[t.kind]


def value_converter(t: MySQLType, time_zone: str) -> Callable[[Any], Any]:
    """How a decoder's TiDB value of type ``t`` (ENUM index, SET bitmask, BIT number, a naive TIMESTAMP in
    the rendering time zone) becomes the value of ``spark_type_of(t)``; None stays None."""
    spark_type = spark_type_of(t)
    if isinstance(spark_type, T.BooleanType):
        return lambda v: None if v is None else bool(v)
    if t.kind == "bit":
        return lambda v: None if v is None else (v - 2**64 if v >= 2**63 else v)  # BIT(64): the bits in a long
    if isinstance(spark_type, T.DecimalType):
        return lambda v: None if v is None else (v if isinstance(v, Decimal) else Decimal(str(v)))
    if t.kind == "enum" and t.elements:
        members = ("", *t.elements)  # index 0: MySQL's '' for a value that was no member
        return lambda v: None if v is None else members[v] if 0 <= v < len(members) else ""
    if t.kind == "set" and t.elements:
        return lambda v: None if v is None else ",".join(m for i, m in enumerate(t.elements) if v >> i & 1)
    if t.kind == "timestamp":
        zone = ZoneInfo(time_zone)
        return lambda v: None if v is None else v.replace(tzinfo=zone) if v.tzinfo is None else v
    if t.kind == "date":
        return lambda v: v.date() if isinstance(v, dt.datetime) else v
    if isinstance(spark_type, T.BinaryType):
        return lambda v: v.encode() if isinstance(v, str) else v
    if isinstance(spark_type, T.StringType):
        return lambda v: v.decode() if isinstance(v, (bytes, bytearray)) else v if v is None else str(v)
    return lambda v: v
