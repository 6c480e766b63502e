"""The DataFrame a read gives: the sink's input contract, so that a topic read and written again round-trips.

Columns: ``_op``, ``_commit_ts``, ``_schema``, ``_table``, the table's columns
in table order, ``_before`` (the old row of an UPDATE, a struct of the table's
columns) and ``_ddl`` (the statement of a DDL row), each metadata name as the
sink's ``*-column`` options rename it; with ``include-kafka-coordinates``
also ``_topic``, ``_partition``, ``_offset``.  One table shape per DataFrame,
as for the sink.  Rows are gathered a column at a time and leave as Arrow
record batches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import pyarrow as pa
from pyspark.sql import types as T

from ..codec.base import DDLEvent, RowEvent
from ..errors import ConfigError
from ..sink.spark_rows import arrow_schema_of
from ..table.mysql_types import MySQLType
from ..table.schema import default_mysql_type
from ..table.spark_types import spark_type_of, value_converter
from ..table.type_grammar import TypeSyntaxError, parse_mysql_type, split_column_types
from .options import ReadConfig

COORDINATES = (("_topic", T.StringType()), ("_partition", T.IntegerType()), ("_offset", T.LongType()))


@dataclass(frozen=True)
class ReadColumn:
    """A table column as read: its MySQL type (what the decoded values mean) and its Spark type."""

    name: str
    type: MySQLType
    spark_type: T.DataType


@dataclass(frozen=True)
class ReadLayout:
    """The columns of a read, and which table it reads (None: the one table its topics hold)."""

    config: ReadConfig
    database: str | None
    table: str | None
    columns: tuple[ReadColumn, ...]
    table_schemas: tuple[dict, ...] = ()  # what the decoder learned while the layout was found (Simple's)

    @classmethod
    def from_event(cls, config: ReadConfig, event: RowEvent) -> "ReadLayout":
        """The layout a row of the table tells (its protocol's types), ``column-types`` overriding."""
        declared = _declared_types(config)
        columns = []
        # Table order: the types' where the protocol lists them so (Simple's row values are sorted by name).
        for name in [*event.column_types, *(n for n in event.columns if n not in event.column_types)]:
            t = declared.get(name) or event.column_types.get(name) or _type_of_value(event.columns.get(name))
            columns.append(ReadColumn(name, t, spark_type_of(t)))
        return cls(config, event.database, event.table, tuple(columns))

    @classmethod
    def from_schema(cls, config: ReadConfig, schema: T.StructType) -> "ReadLayout":
        """The layout of a schema the user gave: its table columns as typed there, read by their
        ``column-types`` (or ``mysql_type`` metadata) where given, else by the Spark type's MySQL type."""
        sink = config.sink
        metadata = {sink.op_column, sink.commit_ts_column, sink.schema_column, sink.table_column,
                    sink.before_column, sink.ddl_column, *(name for name, _ in COORDINATES)}
        declared = _declared_types(config)
        columns = []
        for f in schema.fields:
            if f.name in metadata:
                continue
            text = f.metadata.get("mysql_type")
            t = declared.get(f.name) or (parse_mysql_type(text) if text else default_mysql_type(f.dataType))
            columns.append(ReadColumn(f.name, t, f.dataType))
        return cls(config, sink.database, sink.table, tuple(columns))

    def spark_schema(self) -> T.StructType:
        sink = self.config.sink
        table = [T.StructField(c.name, c.spark_type) for c in self.columns]
        fields = [T.StructField(sink.op_column, T.StringType()), T.StructField(sink.commit_ts_column, T.LongType()),
                  T.StructField(sink.schema_column, T.StringType()), T.StructField(sink.table_column, T.StringType()),
                  *table, T.StructField(sink.before_column, T.StructType(table)),
                  T.StructField(sink.ddl_column, T.StringType())]
        if self.config.include_kafka_coordinates:
            fields += [T.StructField(name, spark_type) for name, spark_type in COORDINATES]
        return T.StructType(fields)

    def reads(self, database: str, table: str) -> bool:
        """Whether a change of ``database.table`` belongs to this read."""
        return (self.table is None or self.table == table) and (self.database is None or self.database == database)


def _declared_types(config: ReadConfig) -> dict[str, MySQLType]:
    text = config.sink.column_types
    try:
        return {name: parse_mysql_type(type_text) for name, type_text in split_column_types(text or "")}
    except TypeSyntaxError as e:
        raise ConfigError("column-types", text, str(e)) from None


def _type_of_value(value: Any) -> MySQLType:
    """A column the protocol carries no type for (Debezium without schemas): by its JSON value."""
    if isinstance(value, bool):
        return MySQLType("tinyint", length=1)
    if isinstance(value, int):
        return MySQLType("bigint")
    if isinstance(value, float):
        return MySQLType("double")
    return MySQLType("longtext")


class RowsBuilder:
    """Gathers a partition's output rows a column at a time and hands them out as Arrow record batches."""

    def __init__(self, layout: ReadLayout):
        self.layout = layout
        self.arrow_schema = arrow_schema_of(layout.spark_schema())
        zone = layout.config.sink.time_zone
        self._names = [c.name for c in layout.columns]
        self._converters: list[Callable[[Any], Any]] = [value_converter(c.type, zone) for c in layout.columns]
        self._casts = [_needs_cast(c) for c in layout.columns]
        self._coordinates = layout.config.include_kafka_coordinates
        self._clear()

    def _clear(self) -> None:
        self._meta: list[list] = [[], [], [], [], [], []]  # op, commit ts, schema, table, before, ddl
        self._values: list[list] = [[] for _ in self._names]
        self._where: list[list] = [[], [], []]

    def __len__(self) -> int:
        return len(self._meta[0])

    def add_row(self, event: RowEvent, topic: str, partition: int, offset: int) -> None:
        op, ts, schema, table, before, ddl = self._meta
        op.append(event.type)
        ts.append(event.commit_ts)
        schema.append(event.database)
        table.append(event.table)
        columns = event.columns or {}
        for values, name, convert in zip(self._values, self._names, self._converters):
            values.append(convert(columns.get(name)))
        old = event.old if event.type == "UPDATE" else None
        before.append(None if old is None else
                      {name: convert(old.get(name)) for name, convert in zip(self._names, self._converters)})
        ddl.append(None)
        self._add_where(topic, partition, offset)

    def add_ddl(self, event: DDLEvent, topic: str, partition: int, offset: int) -> None:
        op, ts, schema, table, before, ddl = self._meta
        op.append("DDL")
        ts.append(event.commit_ts)
        schema.append(event.database)
        table.append(event.table)
        for values in self._values:
            values.append(None)
        before.append(None)
        ddl.append(event.query)
        self._add_where(topic, partition, offset)

    def _add_where(self, topic: str, partition: int, offset: int) -> None:
        if self._coordinates:
            for values, value in zip(self._where, (topic, partition, offset)):
                values.append(value)

    def take(self) -> pa.RecordBatch:
        """The rows gathered so far, as one record batch of the read's Arrow schema; the builder starts over."""
        fields = list(self.arrow_schema)
        op, ts, schema, table, before, ddl = self._meta
        table_arrays = [_column(values, f.type, cast)
                        for values, f, cast in zip(self._values, fields[4:], self._casts)]
        before_type = fields[4 + len(table_arrays)].type
        arrays = [pa.array(op, pa.string()), pa.array(ts, pa.int64()), pa.array(schema, pa.string()),
                  pa.array(table, pa.string()), *table_arrays, _before_array(before, before_type, self._casts),
                  pa.array(ddl, pa.string())]
        if self._coordinates:
            arrays += [pa.array(values, f.type) for values, f in zip(self._where, fields[len(arrays):])]
        self._clear()
        return pa.RecordBatch.from_arrays(arrays, schema=self.arrow_schema)


def _needs_cast(column: ReadColumn) -> pa.DataType | None:
    """The Arrow type the converted values have when the user's Spark type is another (cast afterwards)."""
    natural = spark_type_of(column.type)
    if natural == column.spark_type:
        return None
    return arrow_schema_of(T.StructType([T.StructField("v", natural)])).field("v").type


def _column(values: list, arrow_type: pa.DataType, natural: pa.DataType | None) -> pa.Array:
    if natural is None:
        return pa.array(values, arrow_type)
    return pa.array(values, natural).cast(arrow_type)


def _before_array(rows: list, struct_type: pa.StructType, casts: list) -> pa.Array:
    if not any(casts):
        return pa.array(rows, struct_type)
    mask = pa.array([row is None for row in rows])
    children = [_column([None if row is None else row[struct_type.field(i).name] for row in rows],
                        struct_type.field(i).type, cast) for i, cast in enumerate(casts)]
    return pa.StructArray.from_arrays(children, fields=list(struct_type), mask=mask)
