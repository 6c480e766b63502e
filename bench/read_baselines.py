"""Reading a Canal-JSON topic into Spark without the reader, as a user would: over Spark's Kafka source, into
the reader's columns, so that the read section compares like for like.

``canal_json_by_from_json``: ``from_json`` with a hand-written schema, each
column cast to its Spark type; ``canal_json_by_python_udf``: per message
``json.loads`` and a tuple per row built by hand, in a Python UDF (the Spark
workers import this module for it).
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

from pyspark.sql import functions as F
from pyspark.sql import types as T


def canal_json_read_schema(columns: T.StructType) -> T.StructType:
    """What both hand-written reads give, as the reader does: op, commit ts, database, table, the table's
    columns in their Spark types, and an update's old row."""
    return T.StructType([T.StructField("_op", T.StringType()), T.StructField("_commit_ts", T.LongType()),
                         T.StructField("_schema", T.StringType()), T.StructField("_table", T.StringType()),
                         *columns, T.StructField("_before", columns)])


def canal_json_message_schema(columns: T.StructType) -> T.StructType:
    """A Canal-JSON message as a user declares it for ``from_json``: every column value a string."""
    row = T.ArrayType(T.StructType([T.StructField(f.name, T.StringType()) for f in columns]))
    text = T.StringType()
    return T.StructType([
        T.StructField("id", T.LongType()), T.StructField("database", text), T.StructField("table", text),
        T.StructField("pkNames", T.ArrayType(text)), T.StructField("isDdl", T.BooleanType()),
        T.StructField("type", text), T.StructField("es", T.LongType()), T.StructField("ts", T.LongType()),
        T.StructField("sql", text), T.StructField("sqlType", T.MapType(text, T.IntegerType())),
        T.StructField("mysqlType", T.MapType(text, text)), T.StructField("old", row), T.StructField("data", row),
        T.StructField("_tidb", T.StructType([T.StructField("commitTs", T.LongType())])),
    ])


def _typed_column(text, spark_type: T.DataType):
    """A Canal-JSON value (a string) as its column's Spark type: binary values are ISO-8859-1 text."""
    return F.encode(text, "ISO-8859-1") if isinstance(spark_type, T.BinaryType) else text.cast(spark_type)


def canal_json_by_from_json(kafka, columns: T.StructType):
    """Spark's Kafka source read as Canal-JSON with ``from_json`` and a hand-written schema: a row per element
    of ``data`` (watermarks have none), each column cast to its Spark type, ``old`` as the update's old row."""
    message = F.from_json(F.col("value").cast("string"), canal_json_message_schema(columns)).alias("m")
    rows = kafka.select(message).select("m.type", "m._tidb.commitTs", "m.database", "m.table", "m.old",
                                        F.posexplode("m.data").alias("at", "row"))

    def typed(row) -> list:
        return [_typed_column(row[f.name], f.dataType).alias(f.name) for f in columns]

    old = F.col("old")[F.col("at")]
    return rows.select(F.col("type").alias("_op"), F.col("commitTs").alias("_commit_ts"),
                       F.col("database").alias("_schema"), F.col("table").alias("_table"), *typed(F.col("row")),
                       F.when(old.isNotNull(), F.struct(*typed(old))).alias("_before"))


def _utc_datetime(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.timezone.utc)


CANAL_JSON_VALUES = {  # the feed's columns, each Canal-JSON string to its Python value, by hand
    "id": int, "c_tinyint": int, "c_smallint": int, "c_int": int, "c_ubigint": Decimal, "c_decimal": Decimal,
    "c_double": float, "c_varchar": str, "c_text": str, "c_varbinary": lambda text: text.encode("latin-1"),
    "c_date": dt.date.fromisoformat, "c_datetime": dt.datetime.fromisoformat, "c_timestamp": _utc_datetime,
    "c_json": str,
}


def canal_json_values(row: dict) -> tuple:
    return tuple(None if (text := row.get(name)) is None else value(text) for name, value in CANAL_JSON_VALUES.items())


def canal_json_rows(value: bytes) -> list[tuple]:
    """One Canal-JSON message the per-row Python way: ``json.loads``, then each row's values converted by hand
    (a watermark has none)."""
    message = json.loads(value)
    olds = message["old"] or ()
    return [(message["type"], message["_tidb"]["commitTs"], message["database"], message["table"],
             *canal_json_values(data), canal_json_values(olds[at]) if at < len(olds) else None)
            for at, data in enumerate(message["data"] or ())]


def canal_json_by_python_udf(kafka, columns: T.StructType):
    """Spark's Kafka source read as Canal-JSON by ``canal_json_rows`` in a Python UDF, its rows exploded: the
    per-row Python a user writes first (no ``mapInArrow`` or ``mapInPandas`` version is measured)."""
    rows = F.udf(canal_json_rows, T.ArrayType(canal_json_read_schema(columns)))
    return kafka.select(F.explode(rows("value")).alias("row")).select("row.*")

