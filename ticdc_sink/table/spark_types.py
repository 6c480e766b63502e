"""The column model read back: a MySQL column's Spark type, and its decoded values as that type holds them.

The inverse of ``schema.default_mysql_type`` and of the design's "How values
of declared MySQL types arrive in Spark columns", so that a topic read and
written again round-trips: TINYINT(1) is boolean, BIGINT UNSIGNED
decimal(20,0), ENUM and SET their member names, BIT a long, TIME text,
DATETIME timestamp_ntz and TIMESTAMP timestamp.  A type a protocol carries
without its parameters reads as far as they are known: DECIMAL without a
precision as decimal(38,18), ENUM and SET without members as their index and
bitmask (longs).

Values arrive in two steps, a column at a time: a decoder's TiDB values
(``tidb_arrow_type``: ENUM index, SET bitmask, BIT number, a naive TIMESTAMP
in the rendering time zone) become the Spark type's (``spark_column``).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T

from .mysql_types import UNKNOWN_PRECISION, MySQLType, decimal_precision

UNKNOWN_DECIMAL = T.DecimalType(*UNKNOWN_PRECISION)
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
        return T.DecimalType(*decimal_precision(t))
    if t.kind in ("enum", "set"):
        return T.StringType() if t.elements else T.LongType()
    if t.is_string:
        return T.BinaryType() if t.binary else T.StringType()
    return _BY_KIND[t.kind]


def spark_column(values: pa.Array, t: MySQLType, time_zone: str, arrow_type: pa.DataType) -> pa.Array:
    """A column of TiDB values of type ``t`` (``tidb_arrow_type``) as the values of ``spark_type_of(t)``, in
    ``arrow_type``: the Arrow type Spark exchanges the read's column as (``arrow_schema_of``)."""
    spark_type = spark_type_of(t)
    if isinstance(spark_type, T.BooleanType):
        return pc.not_equal(values, 0).cast(arrow_type)
    if t.kind == "bit":
        return values.cast(pa.uint64()).view(pa.int64()).cast(arrow_type)  # BIT(64): the 64 bits in a long
    if t.kind == "enum" and t.elements:
        members = pa.array(["", *t.elements])  # index 0: MySQL's '' for a value that was no member
        valid = pc.and_(pc.greater_equal(values, 0), pc.less(values, len(members)))
        return pc.take(members, pc.if_else(valid, values, 0)).cast(arrow_type)
    if t.kind == "set" and t.elements:
        return pa.array([None if bits is None else ",".join(m for i, m in enumerate(t.elements) if bits >> i & 1)
                         for bits in values.to_pylist()], pa.string()).cast(arrow_type)
    if t.kind == "timestamp":
        # A wall-clock time that the zone's clock change skipped or repeated: its earlier reading, as MySQL does.
        return pc.assume_timezone(values, time_zone, ambiguous="earliest", nonexistent="earliest") \
            .cast(pa.timestamp("us", tz="UTC")).cast(arrow_type)
    return values.cast(arrow_type)


def arrow_schema_of(spark_schema) -> pa.Schema:
    """The Arrow schema Spark uses for a DataFrame (zoned timestamps in UTC)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    try:
        return to_arrow_schema(spark_schema, timezone="UTC")
    except TypeError:  # pyspark 4.0 has no timezone parameter and always uses UTC
        return to_arrow_schema(spark_schema)
