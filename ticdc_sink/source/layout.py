"""The DataFrame a read gives: the sink's input contract, so that a topic read and written again round-trips.

Columns: ``_op``, ``_commit_ts``, ``_schema``, ``_table``, the table's columns
in table order, ``_before`` (the old row of an UPDATE, a struct of the table's
columns) and ``_ddl`` (the statement of a DDL row), each metadata name as the
sink's ``*-column`` options rename it; with ``debezium-include-start-ts``
also ``_start_ts`` after ``_commit_ts``; with ``include-kafka-coordinates``
also ``_topic``, ``_partition``, ``_offset``.  One table shape per DataFrame,
as for the sink.  Rows are gathered a column at a time and leave as Arrow
record batches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T

from ..codec.base import DDLEvent, MessageColumns, RowEvent
from ..codec.shared.decoding import tidb_values
from ..config.reader import ReadConfig
from ..errors import ConfigError, ReadError
from ..table.mysql_types import MySQLType
from ..table.schema import default_mysql_type
from ..table.spark_types import arrow_schema_of, spark_column, spark_type_of
from ..table.type_grammar import TypeSyntaxError, declared_types, parse_mysql_type

COORDINATES = (("_topic", T.StringType()), ("_partition", T.IntegerType()), ("_offset", T.LongType()))


@dataclass(frozen=True)
class ReadColumn:
    """A table column as read: its MySQL type (what the decoded values mean), its Spark type, and who gave the
    type (``TYPED_BY``), for an error to say."""

    name: str
    type: MySQLType
    spark_type: T.DataType
    typed_by: str  # a key of TYPED_BY


# Who typed a column, as an error says it, and what it asks of the user when a value does not fit that type:
# nothing where the user declared the type (the error names the declaration).
TYPED_BY = {
    "messages": ("as the topic's messages type it", "; declare its type with column-types"),
    "column-types": ("as column-types declares it", ""),
    "mysql_type": ("as the schema's mysql_type metadata declares it", ""),
    "schema": ("as the schema's Spark type makes it", "; declare its MySQL type with column-types"),
}


@dataclass(frozen=True)
class ReadLayout:
    """The columns of a read, its output schema, and which table it reads."""

    config: ReadConfig
    database: str | None
    table: str | None
    columns: tuple[ReadColumn, ...]
    schema: T.StructType  # what the read gives: the contract's columns, or those of the schema the user gave
    table_schemas: tuple[dict, ...] = ()  # what the decoder learned while the layout was found (Simple's)

    @property
    def table_chosen(self) -> bool:
        """Whether the user named the table (``database``/``table``): then other tables' rows are skipped."""
        return self.config.sink.table is not None

    @classmethod
    def from_event(cls, config: ReadConfig, event: RowEvent, table_schemas: tuple[dict, ...] = ()) -> "ReadLayout":
        """The layout a row of the table tells (its protocol's types), ``column-types`` overriding."""
        declared = _declared_types(config)
        columns = []
        # Table order: the types' where the protocol lists them so (Simple's row values are sorted by name).
        for name in [*event.column_types, *(n for n in event.columns if n not in event.column_types)]:
            t = declared.get(name) or event.column_types.get(name) or _type_of_value(event.columns.get(name))
            columns.append(ReadColumn(name, t, spark_type_of(t), "column-types" if name in declared else "messages"))
        return cls(config, config.sink.database or event.database, config.sink.table or event.table,
                   tuple(columns), _contract_schema(config, columns), table_schemas)

    @classmethod
    def from_schema(cls, config: ReadConfig, schema: T.StructType) -> "ReadLayout":
        """The layout of a schema the user gave: its table columns as typed there, read by their
        ``column-types`` (or ``mysql_type`` metadata) where given, else by the Spark type's MySQL type."""
        declared = _declared_types(config)
        columns = []
        for f in schema.fields:
            if f.name in _metadata_names(config):
                continue
            text = f.metadata.get("mysql_type")
            t = declared.get(f.name) or (parse_mysql_type(text) if text else default_mysql_type(f.dataType))
            typed_by = "column-types" if f.name in declared else "mysql_type" if text else "schema"
            columns.append(ReadColumn(f.name, t, f.dataType, typed_by))
        return cls(config, config.sink.database, config.sink.table, tuple(columns), schema)

    @property
    def declared_types(self) -> dict[str, MySQLType]:
        """The types of the columns the read declares, not those its messages gave (``TakesDeclaredTypes.declare_types``)."""
        return {c.name: c.type for c in self.columns if c.typed_by != "messages"}

    def reads(self, database: str, table: str) -> bool:
        """Whether a change of ``database.table`` belongs to this read."""
        return (self.table is None or self.table == table) and (self.database is None or self.database == database)


def _metadata_names(config: ReadConfig) -> set[str]:
    sink = config.sink
    return {sink.op_column, sink.commit_ts_column, sink.schema_column, sink.table_column, sink.before_column,
            sink.ddl_column, sink.start_ts_column, *(name for name, _ in COORDINATES)}


def _reads_start_ts(config: ReadConfig) -> bool:
    """Whether the topic's rows carry their transaction's start ts (Debezium's debezium-include-start-ts)."""
    return bool(getattr(config.sink.protocol_options, "debezium_include_start_ts", False))


def _contract_schema(config: ReadConfig, columns: list[ReadColumn]) -> T.StructType:
    """The sink's input contract for these table columns (``include-kafka-coordinates``: and where each row was)."""
    sink = config.sink
    table = [T.StructField(c.name, c.spark_type) for c in columns]
    fields = [T.StructField(sink.op_column, T.StringType()), T.StructField(sink.commit_ts_column, T.LongType()),
              *([T.StructField(sink.start_ts_column, T.LongType())] if _reads_start_ts(config) else []),
              T.StructField(sink.schema_column, T.StringType()), T.StructField(sink.table_column, T.StringType()),
              *table, T.StructField(sink.before_column, T.StructType(table)),
              T.StructField(sink.ddl_column, T.StringType())]
    if config.include_kafka_coordinates:
        fields += [T.StructField(name, spark_type) for name, spark_type in COORDINATES]
    return T.StructType(fields)


def _declared_types(config: ReadConfig) -> dict[str, MySQLType]:
    text = config.sink.column_types
    try:
        return declared_types(text)
    except TypeSyntaxError as e:
        raise ConfigError("column-types", text, str(e)) from None


def _type_of_value(value: Any) -> MySQLType:
    """A column the protocol carries no type for (Debezium without schemas): by its JSON value."""
    if isinstance(value, bool):
        return parse_mysql_type("TINYINT(1)")
    if isinstance(value, int):
        return parse_mysql_type("BIGINT")
    if isinstance(value, float):
        return parse_mysql_type("DOUBLE")
    return parse_mysql_type("LONGTEXT")


class RowsBuilder:
    """Gathers a partition's output rows a column at a time and hands them out as Arrow record batches of the
    read's schema: the decoders' TiDB values per column, turned into the Spark type's a column at a time."""

    def __init__(self, layout: ReadLayout):
        self.layout = layout
        self.arrow_schema = arrow_schema_of(layout.schema)
        sink = layout.config.sink
        self._names = [c.name for c in layout.columns]
        self._columns = {c.name: c for c in layout.columns}
        self._metadata = {sink.op_column: 0, sink.commit_ts_column: 1, sink.schema_column: 2, sink.table_column: 3,
                          sink.before_column: 4, sink.ddl_column: 5, "_topic": 6, "_partition": 7, "_offset": 8,
                          sink.start_ts_column: 9}
        self._clear()

    def _clear(self) -> None:
        # op, commit ts, schema, table, before, ddl, topic, partition, offset, start ts
        self._meta: list[list] = [[] for _ in range(10)]
        self._values: dict[str, list] = {name: [] for name in self._names}

    def __len__(self) -> int:
        return len(self._meta[0])

    def add_row(self, event: RowEvent, topic: str, partition: int, offset: int) -> None:
        columns = event.columns or {}
        for name, values in self._values.items():
            values.append(columns.get(name))
        self._add_meta(event.type, event, event.old if event.type == "UPDATE" else None, None, topic, partition,
                       offset, event.start_ts)

    def add_ddl(self, event: DDLEvent, topic: str, partition: int, offset: int) -> None:
        for values in self._values.values():
            values.append(None)
        self._add_meta("DDL", event, None, event.query, topic, partition, offset, None)

    def _add_meta(self, op: str, event, before, ddl, topic: str, partition: int, offset: int,
                  start_ts: int | None) -> None:
        for values, value in zip(self._meta, (op, event.commit_ts, event.database, event.table, before, ddl, topic,
                                              partition, offset, start_ts)):
            values.append(value)

    def take(self) -> pa.RecordBatch:
        """The rows gathered so far, as one record batch of the read's Arrow schema; the builder starts over."""
        arrays = [self._array(f) for f in self.arrow_schema]
        self._clear()
        return pa.RecordBatch.from_arrays(arrays, schema=self.arrow_schema)

    def _array(self, f: pa.Field) -> pa.Array:
        if f.name in self._values:
            return self._column(f.name, self._values[f.name], f.type)
        where = self._metadata.get(f.name)
        if where == 4:
            return self._before_array(f.type)
        if where is None:  # a column of the user's schema that no row carries
            return pa.nulls(len(self), f.type)
        return pa.array(self._meta[where], f.type)

    def _column(self, name: str, values: list | pa.Array, arrow_type: pa.DataType) -> pa.Array:
        column = self._columns.get(name)
        if column is None:  # a field of the user's _before that is no table column
            return pa.nulls(len(values), arrow_type)
        t = column.type
        try:
            typed = values if isinstance(values, pa.Array) else tidb_values(values, t)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, ValueError) as e:
            how, fix = TYPED_BY[column.typed_by]
            raise ReadError(f"column {name!r} is {t} {how}, and a value does not fit it ({e}){fix}") from None
        return spark_column(typed, t, self.layout.config.sink.time_zone, arrow_type)

    def batch_of_columns(self, columns: MessageColumns, keep: pa.Array, topic: str, partition: int,
                         offsets: pa.Array) -> pa.RecordBatch:
        """The rows ``keep`` selects of messages decoded a column at a time, as one record batch."""
        op = columns.op.filter(keep)
        count = len(op)
        meta = {0: op, 1: columns.commit_ts.filter(keep), 2: columns.database.filter(keep),
                3: columns.table.filter(keep), 5: pa.nulls(count, pa.string()),
                6: pa.repeat(pa.scalar(topic), count), 7: pa.repeat(pa.scalar(partition, pa.int32()), count),
                8: offsets.filter(keep), 9: pa.nulls(count, pa.int64())}  # no columnar decoder carries a start ts
        arrays = []
        for f in self.arrow_schema:
            where = self._metadata.get(f.name)
            if f.name in self._columns:
                arrays.append(self._column(f.name, columns.new[f.name].filter(keep), f.type))
            elif where == 4:
                children = [self._column(c.name, columns.old[c.name].filter(keep), c.type) if c.name in columns.old
                            else pa.nulls(count, c.type) for c in f.type]
                arrays.append(pa.StructArray.from_arrays(children, fields=list(f.type),
                                                         mask=pc.invert(pc.equal(op, "UPDATE"))))
            elif where is None:
                arrays.append(pa.nulls(count, f.type))
            else:
                arrays.append(meta[where].cast(f.type))
        return pa.RecordBatch.from_arrays(arrays, schema=self.arrow_schema)

    def _before_array(self, struct_type: pa.StructType) -> pa.Array:
        rows = self._meta[4]
        children = [self._column(f.name, [None if row is None else row.get(f.name) for row in rows], f.type)
                    for f in struct_type]
        return pa.StructArray.from_arrays(children, fields=list(struct_type),
                                          mask=pa.array([row is None for row in rows], pa.bool_()))
