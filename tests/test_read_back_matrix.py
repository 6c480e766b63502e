"""Every protocol and mode against every column type the sink writes, read back as the reader reads them.

A cell is a protocol's mode, a column type and one of its values (NULL
among them).  Each is written by the sink's encoder and read back through
the reader's decoding path (a ``source.partition_read`` task, a chunk of
messages at a time and a message at a time) with the write's options,
``column-types`` included.  It comes back equal to its input where the
protocol carries the value exactly.  Where the protocol loses something, the
declared type wins and the cell comes back as the nearest value of that type,
as TiCDC's own decoder gives it: ``LOSSY`` says what is lost and the exact
value read back.  A value a protocol cannot carry at all (``REFUSED``) fails
the write or the read, naming the column.  Then each protocol's ``_commit_ts``
without the TiDB extension, and a user's Debezium DECIMAL through Spark.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from changefeed import build, schema
from protocols import ProtocolUnderTest
from pyspark.sql import types as T
from test_reader_units import Message

from ticdc_sink.changes.dispatch import Routing
from ticdc_sink.codec import PROTOCOLS, SendsTableSchemas, decoder_for, encoder_for
from ticdc_sink.codec.base import RowEvent, learned_table_schemas
from ticdc_sink.config.reader import parse_read_options
from ticdc_sink.errors import ContractError, ReadError
from ticdc_sink.source.layout import ReadLayout
from ticdc_sink.source.partition_read import KafkaRange, _RangeRead
from ticdc_sink.table.mysql_types import KIND_NAMES
from ticdc_sink.table.type_grammar import parse_mysql_type

UTC = dt.timezone.utc
TIME_ZONE = "Asia/Shanghai"


def f32(x: float) -> float:
    """The float32 nearest ``x``: a FLOAT column's values are Spark floats."""
    return float(np.float32(x))


def fraction(fsp: int) -> int:
    """The largest microseconds a fraction of ``fsp`` digits holds (999999 for 6, 999000 for 3, 0 for 0)."""
    return (10**fsp - 1) * 10 ** (6 - fsp)


@dataclass(frozen=True)
class Column:
    name: str
    mysql: str  # as declared in column-types
    spark: T.DataType  # as the sink takes it and the reader gives it
    values: tuple  # besides NULL, which every column has


DATETIMES = [f"dt{fsp}" for fsp in range(7)]
COLUMNS = [
    Column("i8", "TINYINT", T.ByteType(), (-128, 127, 0)),
    Column("u8", "TINYINT UNSIGNED", T.ShortType(), (0, 255)),
    Column("i16", "SMALLINT", T.ShortType(), (-32768, 32767)),
    Column("u16", "SMALLINT UNSIGNED", T.IntegerType(), (0, 65535)),
    Column("i24", "MEDIUMINT", T.IntegerType(), (-8388608, 8388607)),
    Column("u24", "MEDIUMINT UNSIGNED", T.IntegerType(), (0, 16777215)),
    Column("i32", "INT", T.IntegerType(), (-(2**31), 2**31 - 1)),
    Column("u32", "INT UNSIGNED", T.LongType(), (0, 2**32 - 1)),
    Column("i64", "BIGINT", T.LongType(), (-(2**63), 2**63 - 1)),
    Column("u64", "BIGINT UNSIGNED", T.DecimalType(20, 0),
           (Decimal(0), Decimal(2**63 - 1), Decimal(2**63), Decimal(2**64 - 1))),
    Column("bool", "BOOLEAN", T.BooleanType(), (True, False)),
    Column("t1", "TINYINT(1)", T.BooleanType(), (False, True)),
    Column("f", "FLOAT", T.FloatType(), (f32(3.4028234663852886e38), f32(-1.1754943508222875e-38), f32(0.1),
                                         f32(-16777216.0))),
    Column("d", "DOUBLE", T.DoubleType(), (1.7976931348623157e308, -5e-324, 0.1, -123456789.123456789)),
    Column("dec", "DECIMAL(12,3)", T.DecimalType(12, 3),
           (Decimal("-999999999.999"), Decimal("999999999.999"), Decimal("0.001"), Decimal("1234.500"))),
    Column("dec0", "DECIMAL", T.DecimalType(10, 0), (Decimal("-9999999999"), Decimal("9999999999"))),
    # Spark's decimals have 38 digits: a DECIMAL(65,30) is read as decimal(38,30).
    Column("dec65", "DECIMAL(65,30)", T.DecimalType(38, 30),
           (Decimal("-99999999.999999999999999999999999999999"), Decimal("99999999.999999999999999999999999999999"),
            Decimal("0.000000000000000000000000000001"), Decimal("12345678.123456789012345678901234567890"))),
    Column("day", "DATE", T.DateType(),
           (dt.date(1, 1, 1), dt.date(1000, 1, 1), dt.date(9999, 12, 31), dt.date(2024, 2, 29))),
    *(Column(name, f"DATETIME({fsp})", T.TimestampNTZType(),
             (dt.datetime(1, 1, 1), dt.datetime(1000, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, fraction(fsp))))
      for fsp, name in enumerate(DATETIMES)),
    *(Column(f"ts{fsp}", f"TIMESTAMP({fsp})", T.TimestampType(),
             (dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC),
              dt.datetime(2038, 1, 19, 3, 14, 7, fraction(fsp), tzinfo=UTC)))
      for fsp in range(7)),
    Column("tm0", "TIME", T.StringType(), ("-838:59:59", "838:59:59", "00:00:00")),
    Column("tm3", "TIME(3)", T.StringType(), ("-00:00:01.250", "838:59:59.000", "12:34:56.789")),
    Column("tm6", "TIME(6)", T.StringType(), ("-838:59:59.000000", "-00:00:00.000001", "12:34:56.789012")),
    Column("yr", "YEAR", T.IntegerType(), (1901, 2155)),
    Column("ch", "CHAR(10)", T.StringType(), ("abc", "")),
    Column("vc", "VARCHAR(255)", T.StringType(), ('héllo <"quoted"> & \\ \u2028\t\n', "")),
    Column("tt", "TINYTEXT", T.StringType(), ("line1\nline2 测试",)),
    Column("tx", "TEXT", T.StringType(), ("😀 emoji",)),
    Column("mt", "MEDIUMTEXT", T.StringType(), ("medium",)),
    Column("lt", "LONGTEXT", T.StringType(), ("long " * 50,)),
    Column("bn", "BINARY(4)", T.BinaryType(), (b"\x00\xff\x80\x01",)),
    Column("vb", "VARBINARY(16)", T.BinaryType(), (b"a\"b\\\x89\x00", b"")),
    Column("tb", "TINYBLOB", T.BinaryType(), (b"\x00\x01\xfe\xff",)),
    Column("bl", "BLOB", T.BinaryType(), (bytes(range(256)),)),
    Column("mb", "MEDIUMBLOB", T.BinaryType(), (b"mb\x00",)),
    Column("lb", "LONGBLOB", T.BinaryType(), (b"\xff" * 300,)),
    Column("en", "ENUM('small','Medium','large')", T.StringType(), ("small", "large")),
    Column("st", "SET('r','g','b')", T.StringType(), ("r,b", "", "r,g,b")),
    Column("b1", "BIT(1)", T.LongType(), (0, 1)),
    Column("b10", "BIT(10)", T.LongType(), (0, 1023, 512)),
    Column("b64", "BIT(64)", T.LongType(), (-1, 0, 2**63 - 1, -(2**63))),
    Column("js", "JSON", T.StringType(), ('{"a": 1, "b": [1, 2.5, null, true]}', '"x"', "[]")),
]
BY_NAME = {c.name: c for c in COLUMNS}
COLUMN_TYPES = ", ".join(f"{c.name} {c.mysql}" for c in COLUMNS)


def input_schema(columns: list[Column]) -> T.StructType:
    """The sink's input of a table of ``id`` and ``columns``."""
    table = [("id", T.LongType(), False), *((c.name, c.spark) for c in columns)]
    return schema(("_op", T.StringType()), ("_commit_ts", T.LongType()), *table,
                  ("_before", T.StructType([T.StructField(*f) for f in table])))


SCHEMA = input_schema(COLUMNS)


@dataclass(frozen=True)
class Mode:
    """A protocol and the options that change what its messages carry."""

    protocol: str
    options: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return " ".join([self.protocol, *(f"{k}={v}" for k, v in self.options.items())])

    def has(self, protocol: str, **options: str) -> bool:
        """Whether this is ``protocol`` with these options (``_`` for ``-``)."""
        return self.protocol == protocol and all(self.options.get(k.replace("_", "-")) == v
                                                 for k, v in options.items())


def each(protocol: str, **choices: list[str]) -> list[Mode]:
    """The protocol with every combination of the options' values (``_`` for ``-``)."""
    combos: list[dict] = [{}]
    for option, values in choices.items():
        combos = [{**c, option.replace("_", "-"): v} for c in combos for v in values]
    return [Mode(protocol, c) for c in combos]


ON_OFF = ["false", "true"]
AVRO_MODES = {"enable_tidb_extension": ON_OFF, "avro_decimal_handling_mode": ["precise", "string"],
              "avro_bigint_unsigned_handling_mode": ["long", "string"]}
MODES = [*each("canal-json", enable_tidb_extension=ON_OFF), Mode("open-protocol"), *each("avro", **AVRO_MODES),
         *each("debezium", enable_tidb_extension=ON_OFF, debezium_disable_schema=ON_OFF),
         *each("debezium-avro", **AVRO_MODES), *each("simple", encoding_format=["json", "avro"])]


@dataclass(frozen=True)
class Cell:
    """Cells of one column and value in the modes ``applies`` picks."""

    protocol: str
    options: dict  # the mode's options that make it so ({}: every mode of the protocol)
    column: str
    value: object
    read: object  # LOSSY: the value read back; REFUSED: the error's words
    lost: str  # what the protocol loses, or why it refuses the value

    def applies(self, mode: Mode, column: str, value) -> bool:
        return mode.has(self.protocol, **self.options) and (column, value) == (self.column, self.value)


def lossy_everywhere(protocols: tuple[str, ...], column: str, value, read, lost: str) -> list[Cell]:
    return [Cell(protocol, {}, column, value, read, lost) for protocol in protocols]


DEBEZIUM = ("debezium", "debezium-avro")
TWO_DIGIT_YEAR = ("a date before year 100 is written as a two-digit year, 2000-2069 (TiCDC's rule, the Debezium "
                  "MySQL connector's)")
LOSSY = [
    *lossy_everywhere(("debezium",), "dec65", Decimal("12345678.123456789012345678901234567890"),
                      Decimal("12345678.123456790000000000000000000000"),
                      "a DECIMAL is a double: 17 significant digits, then zeros to the scale"),
    *lossy_everywhere(DEBEZIUM, "day", dt.date(1, 1, 1), dt.date(2001, 1, 1), TWO_DIGIT_YEAR),
    *(cell for name in DATETIMES
      for cell in lossy_everywhere(DEBEZIUM, name, dt.datetime(1, 1, 1), dt.datetime(2001, 1, 1), TWO_DIGIT_YEAR)),
]
REFUSED = [
    *(Cell("debezium-avro", {"avro-bigint-unsigned-handling-mode": "long"}, "u64", value,
           "unsigned bigint value overflows avro long", "on write, as TiCDC refuses it: over an Avro long")
      for value in (Decimal(2**63), Decimal(2**64 - 1))),
    *(Cell("debezium", {}, "dec65", value, "has more integer digits than decimal(38,30), its Spark type, holds",
           "on read: its double rounds to 1E+8, which Spark's decimal(38,30) cannot hold")
      for value in (Decimal("-99999999.999999999999999999999999999999"),
                    Decimal("99999999.999999999999999999999999999999"))),
]


def refused(mode: Mode, column: str, value) -> Cell | None:
    return next((cell for cell in REFUSED if cell.applies(mode, column, value)), None)


def expected(mode: Mode, column: str, value):
    """What the reader gives for a cell: its input, or the nearest value of its type where the protocol loses."""
    return next((cell.read for cell in LOSSY if cell.applies(mode, column, value)), value)


def carried_values(mode: Mode, columns: list[Column]) -> dict[str, list]:
    """Each column's values that the mode's messages carry."""
    return {c.name: [v for v in c.values if refused(mode, c.name, v) is None] for c in columns}


def input_rows(mode: Mode, columns: list[Column] = COLUMNS) -> list[dict]:
    """INSERTs of every column's values, cycled through, and an all-NULL row last."""
    values = carried_values(mode, columns)
    count = 1 + max(map(len, values.values()))
    return [{"_op": "INSERT", "_commit_ts": (i + 1) << 18, "id": i, "_before": None,
             **{name: None if i == count - 1 else vs[i % len(vs)] for name, vs in values.items()}}
            for i in range(count)]


def cell_count() -> int:
    """The matrix's cells: every mode, column and value (NULL too), carried or refused."""
    return sum(len(c.values) + 1 for c in COLUMNS) * len(MODES)


def cells_of(cells: list[Cell]) -> int:
    """How many of the matrix's cells ``cells`` stand for, over every mode."""
    return sum(cell.applies(mode, cell.column, cell.value) for mode in MODES for cell in cells)


def write_options(mode: Mode, registry: str) -> dict:
    under = ProtocolUnderTest(mode.protocol, registry)
    return {**under.options("t"), **mode.options, "database": "d", "table": "m", "primary-key": "id",
            "time-zone": TIME_ZONE, "column-types": COLUMN_TYPES}


def written(options: dict, rows: list[dict], spark_schema: T.StructType = SCHEMA) -> tuple[list[Message],
                                                                                          list[Message]]:
    """The messages the sink's encoder makes of ``rows``: the table's schema (Simple's, which the sink sends ahead
    of the rows), and the rows'."""
    config, layout, changes, _ = build(spark_schema, rows, **options)
    routing = Routing(["t"], np.zeros(len(rows), dtype=np.int32), np.zeros(len(rows), dtype=np.int32), {"t": 1})
    encoder = encoder_for(config, layout.table)
    messages = encoder.encode_rows(changes, routing)
    schemas = [(None, encoder.bootstrap_messages("d", "m", "t").values[0].as_py())] \
        if isinstance(encoder, SendsTableSchemas) else []
    keys = messages.keys.to_pylist() if messages.keys is not None else [None] * len(messages)
    pairs = [*schemas, *zip(keys, messages.values.to_pylist())]
    kafka = [Message(*(None if x is None else x.encode() if isinstance(x, str) else x for x in pair), offset)
             for offset, pair in enumerate(pairs)]
    return kafka[:len(schemas)], kafka[len(schemas):]


def decodes_a_column_at_a_time(mode: Mode) -> bool:
    return mode.protocol in ("canal-json", "open-protocol") or mode.has("simple", encoding_format="json")


def read_back(mode: Mode, options: dict, schemas: list[Message], rows: list[Message],
              spark_schema: T.StructType | None = None) -> list[list[dict]]:
    """The rows a reader with the write's options gives of the messages (its columns those of ``spark_schema``, as
    ``.schema(...)`` gives them, else learned from the first row, as ``reader.find_layout`` learns them): the rows'
    messages a chunk at a time, as a task after the table's schema reads them (a column at a time where the
    protocol can), and every message one at a time."""
    config = parse_read_options({**options, "kafka.bootstrap.servers": "127.0.0.1:1"})
    decoder = decoder_for(config.sink)
    messages = schemas + rows
    if spark_schema is None:
        first = next(e for m in messages for e in decoder.decode(m.key(), m.value()) if isinstance(e, RowEvent))
        layout = ReadLayout.from_event(config, first, learned_table_schemas(decoder))
    else:
        layout = ReadLayout.from_schema(config, spark_schema)
    chunked = _RangeRead(layout, KafkaRange("t:0", 0, len(messages)))
    columns = chunked.decoder.decode_columns([m.key() for m in rows], [m.value() for m in rows], chunked.types)
    assert (columns is not None) == decodes_a_column_at_a_time(mode)
    by_chunk = [*chunked.chunk(rows), *chunked.finish()]
    one_by_one = _RangeRead(layout, KafkaRange("t:0", 0, len(messages)))
    for message in messages:
        one_by_one.message(message)
    by_message = list(one_by_one.finish())
    return [pa.Table.from_batches(batches, chunked.rows.arrow_schema).to_pylist()
            for batches in (by_chunk, by_message)]


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.name)
def test_every_cell_reads_back_as_written_or_as_the_nearest_value_of_its_declared_type(mode, schema_registry):
    rows = input_rows(mode)
    options = write_options(mode, schema_registry.url)
    wrong = []
    for path, read in zip(("a chunk at a time", "a message at a time"),
                          read_back(mode, options, *written(options, rows))):
        assert [r["id"] for r in read] == [r["id"] for r in rows], path
        for row, got in zip(rows, read):
            wrong += [(path, c.name, row[c.name], got[c.name]) for c in COLUMNS
                      if got[c.name] != expected(mode, c.name, row[c.name])]
    assert not wrong, f"{len(wrong)} cells read back otherwise (path, column, written, read): {wrong}"


@pytest.mark.parametrize("cell", REFUSED, ids=lambda c: f"{c.protocol} {c.options} {c.column} {c.value}")
def test_a_value_the_protocol_cannot_carry_fails_naming_its_column(cell, schema_registry):
    mode = next(m for m in MODES if m.has(cell.protocol, **cell.options))
    options = write_options(mode, schema_registry.url)
    row = {**input_rows(mode)[0], cell.column: cell.value}
    with pytest.raises((ContractError, ReadError), match=f"{cell.column}.*{re.escape(cell.read)}"):
        read_back(mode, options, *written(options, [row]))


@pytest.mark.parametrize("declared, message", [
    (None, r"column 'd' is bigint\(20\) as the topic's messages type it, and a value does not fit it \(.*\); declare "
           r"its type with column-types$"),
    ("d TINYINT", r"column 'd' is tinyint\(4\) as column-types declares it, and a value does not fit it \(.*\)$"),
])
def test_a_value_that_does_not_fit_its_column_says_who_typed_it(declared, message):
    """Debezium without its schema: a DOUBLE column whose first value is whole reads as a BIGINT unless declared;
    the error asks for a declaration only where there is none."""
    options = {"protocol": "debezium", "debezium-disable-schema": "true", "topic": "t", "primary-key": "id",
               "database": "d", "table": "m", "column-types": "d DOUBLE"}
    doubles = schema(("_commit_ts", T.LongType()), ("id", T.LongType(), False), ("d", T.DoubleType()))
    rows = [{"_commit_ts": 1 << 18, "id": 1, "d": 1.0}, {"_commit_ts": 2 << 18, "id": 2, "d": 1.5}]
    messages = written(options, rows, doubles)
    reading = {k: v for k, v in options.items() if k != "column-types"}
    if declared:
        reading["column-types"] = declared
    with pytest.raises(ReadError, match=message):
        read_back(Mode("debezium"), reading, *messages)


# Without the TiDB extension Debezium carries a DECIMAL as a double, a BIGINT UNSIGNED as the int64 of its bits and
# a binary string as base64 text; debezium-avro a DECIMAL in string mode as text, a BIGINT UNSIGNED in long mode as
# that int64.  Only the type the read declares tells them.
DECLARED = [BY_NAME["dec"], BY_NAME["u64"], BY_NAME["vb"]]
WITHOUT_EXTENSION = [*each("debezium", enable_tidb_extension=["false"], debezium_disable_schema=ON_OFF),
                     *each("debezium-avro", **{**AVRO_MODES, "enable_tidb_extension": ["false"]})]


def read_schema(columns: list[Column], metadata: dict[str, dict]) -> T.StructType:
    """A read's ``.schema(...)`` of a table of ``id`` and ``columns``, with each column's field ``metadata``."""
    return schema(("_op", T.StringType()), ("_commit_ts", T.LongType()), ("id", T.LongType(), False),
                  *((c.name, c.spark, True, metadata.get(c.name)) for c in columns))


@pytest.mark.parametrize("declared_by", ["mysql_type", "Spark type"])
@pytest.mark.parametrize("table_chosen", [True, False], ids=["database and table", "any table"])
@pytest.mark.parametrize("mode", WITHOUT_EXTENSION, ids=lambda m: m.name)
def test_a_debezium_topic_without_the_extension_reads_back_by_the_types_of_the_reads_schema(
        mode, table_chosen, declared_by, schema_registry):
    """Issue 37: the types a read's ``.schema(...)`` declares reach the Debezium decoders as column-types does,
    for the table read (or any, where the read names none): by a field's mysql_type metadata, or by its Spark type
    where that says the type (decimal, binary; decimal(20,0) does not say unsigned: BIGINT UNSIGNED takes
    mysql_type either way)."""
    options = {**write_options(mode, schema_registry.url),
               "column-types": ", ".join(f"{c.name} {c.mysql}" for c in DECLARED)}
    rows = input_rows(mode, DECLARED)
    reading = {k: v for k, v in options.items()
               if k != "column-types" and (table_chosen or k not in ("database", "table"))}
    metadata = {c.name: {"mysql_type": c.mysql} for c in DECLARED if declared_by == "mysql_type" or c.name == "u64"}
    for read in read_back(mode, reading, *written(options, rows, input_schema(DECLARED)),
                          spark_schema=read_schema(DECLARED, metadata)):
        assert [{name: r[name] for name in ("id", *(c.name for c in DECLARED))} for r in read] == [
            {"id": row["id"], **{c.name: expected(mode, c.name, row[c.name]) for c in DECLARED}} for row in rows]


def test_the_types_a_reads_messages_give_are_no_declaration():
    """A read hands its decoder the types it declares (``ReadLayout.declared_types``), not those its first row's
    messages gave: Debezium's MicroTime says TIME without its fraction digits, which as a declaration would cut
    them."""
    time = Column("tm", "TIME(6)", T.StringType(), ("12:34:56.789012", "-00:00:00.001"))
    options = {**write_options(Mode("debezium"), ""), "column-types": "tm TIME(6)"}
    rows = input_rows(Mode("debezium"), [time])
    reading = {k: v for k, v in options.items() if k != "column-types"}
    for read in read_back(Mode("debezium"), reading, *written(options, rows, input_schema([time]))):
        assert [r["tm"] for r in read] == [row["tm"] for row in rows]


PHYSICAL_MS = 1_700_000_000_123


def tso(logical: int) -> int:
    """Commits of one millisecond, told apart by their logical part."""
    return (PHYSICAL_MS << 18) + logical


OFF = {"enable-tidb-extension": "false"}
# Each protocol's _commit_ts of an INSERT, an UPDATE and a DELETE without the TiDB extension (and Avro's with it):
# the commit's TSO; "es": Canal-JSON's physical milliseconds of the commit as a TSO (logical part 0); None: the
# messages carry neither (Avro's without the extension; its DELETE is a tombstone, the key alone, unless
# avro-include-before-value makes it a value).
BEFORE_VALUE = {"avro-include-before-value": "true"}
COMMIT_TS = [
    (Mode("canal-json", OFF), ("es", "es", "es")),
    (Mode("open-protocol"), ("tso", "tso", "tso")),
    (Mode("avro", OFF), (None, None, None)),
    (Mode("avro", {"enable-tidb-extension": "true"}), ("tso", "tso", None)),
    (Mode("avro", BEFORE_VALUE), (None, None, None)),
    (Mode("avro", {"enable-tidb-extension": "true", **BEFORE_VALUE}), ("tso", "tso", "tso")),
    *((mode, ("tso", "tso", "tso")) for mode in each("debezium", enable_tidb_extension=["false"],
                                                     debezium_disable_schema=ON_OFF)),
    (Mode("debezium-avro", OFF), ("tso", "tso", "tso")),
    *((mode, ("tso", "tso", "tso")) for mode in each("simple", encoding_format=["json", "avro"])),
]


@pytest.mark.parametrize("mode, carried", COMMIT_TS, ids=lambda x: x.name if isinstance(x, Mode) else "")
def test_commit_ts_without_the_tidb_extension(mode, carried, schema_registry):
    table = {k: v for k, v in input_rows(mode)[0].items() if k not in ("_op", "_commit_ts", "_before")}
    rows = [{**table, "_op": "INSERT", "_commit_ts": tso(1), "_before": None},
            {**table, "_op": "UPDATE", "_commit_ts": tso(2), "_before": table},
            {**table, "_op": "DELETE", "_commit_ts": tso(3), "_before": None}]
    options = write_options(mode, schema_registry.url)
    for read in read_back(mode, options, *written(options, rows)):
        ops = ["INSERT", "INSERT" if mode == Mode("avro", OFF) else "UPDATE", "DELETE"]  # Avro's needs _tidb_op
        assert [(r["_op"], r["_commit_ts"]) for r in read] == [
            (op, {"tso": row["_commit_ts"], "es": tso(0), None: None}[how])
            for op, row, how in zip(ops, rows, carried)]


@pytest.mark.parametrize("given", [True, False], ids=["given", "absent"])
def test_debeziums_start_ts_reads_back_as_written_else_as_the_commit_ts(given, schema_registry):
    """debezium-include-start-ts: each row's ``_start_ts`` (the input's, else its commit ts) comes back."""
    mode = Mode("debezium", {"debezium-include-start-ts": "true"})
    table = {k: v for k, v in input_rows(mode)[0].items() if k not in ("_op", "_commit_ts", "_before")}
    rows = [{**table, "_op": op, "_commit_ts": tso(10 + i), "_before": table if op == "UPDATE" else None}
            for i, op in enumerate(("INSERT", "UPDATE", "DELETE"))]
    spark_schema = SCHEMA
    if given:
        spark_schema = T.StructType([*SCHEMA.fields, T.StructField("_start_ts", T.LongType())])
        rows = [{**row, "_start_ts": tso(i)} for i, row in enumerate(rows)]
    options = write_options(mode, schema_registry.url)
    for read in read_back(mode, options, *written(options, rows, spark_schema)):
        assert [(r["_op"], r["_start_ts"]) for r in read] == \
            [(row["_op"], row["_start_ts"] if given else row["_commit_ts"]) for row in rows]


@pytest.mark.parametrize("mode", [Mode("open-protocol", {"open-output-old-value": "false"}),
                                  Mode("debezium", {"debezium-output-old-value": "false"}),
                                  Mode("debezium-avro", {"debezium-output-old-value": "false"})],
                         ids=lambda m: m.name)
def test_with_output_old_value_false_an_update_reads_back_without_its_old_row(mode, schema_registry):
    table = {k: v for k, v in input_rows(mode)[0].items() if k not in ("_op", "_commit_ts", "_before")}
    rows = [{**table, "_op": "UPDATE", "_commit_ts": tso(1), "_before": table},
            {**table, "_op": "DELETE", "_commit_ts": tso(2), "_before": None}]
    options = write_options(mode, schema_registry.url)
    # Open Protocol's "u" without "p" is an insert or an update alike: its decoders (TiCDC's too) read an INSERT.
    update = "INSERT" if mode.protocol == "open-protocol" else "UPDATE"
    for read in read_back(mode, options, *written(options, rows)):
        assert [(r["_op"], r["_before"]) for r in read] == [(update, None), ("DELETE", None)]
        assert {k: read[1][k] for k in table} == {k: read[0][k] for k in table}  # the DELETE's whole row


@pytest.mark.parametrize("mode", each("avro", enable_tidb_extension=ON_OFF, avro_include_before_value=["true"]),
                         ids=lambda m: m.name)
def test_avro_with_the_before_value_reads_back_every_cell_as_an_old_row_and_in_a_deleted_row(mode, schema_registry):
    """avro-include-before-value: the matrix's rows, then each updated to the next row's values (so every cell is
    an old row in ``_before`` once), then deleted: a DELETE reads back whole, not as its key."""
    def table_columns(row: dict) -> dict:
        return {k: v for k, v in row.items() if not k.startswith("_")}

    inserts = input_rows(mode)
    count = len(inserts)
    updates = [{**inserts[(i + 1) % count], "_op": "UPDATE", "_commit_ts": (count + i + 1) << 18, "id": row["id"],
                "_before": table_columns(row)} for i, row in enumerate(inserts)]
    deletes = [{**row, "_op": "DELETE", "_commit_ts": (2 * count + i + 1) << 18, "_before": None}
               for i, row in enumerate(updates)]
    rows = inserts + updates + deletes
    options = write_options(mode, schema_registry.url)

    def as_read(values: dict | None, read: bool = False) -> dict | None:
        """A row's columns as the reader gives them (``read``: as given already)."""
        return None if values is None else {c.name: values[c.name] if read else expected(mode, c.name, values[c.name])
                                            for c in COLUMNS}

    for read in read_back(mode, options, *written(options, rows)):
        assert [(r["_op"], r["id"], as_read(r, True), as_read(r["_before"], True)) for r in read] == \
            [(r["_op"], r["id"], as_read(r), as_read(r["_before"])) for r in rows]


@pytest.mark.spark
@pytest.mark.broker
def test_a_debezium_decimal_reads_back_through_spark_as_the_user_wrote_it(spark, broker, topic):
    """Issue 37: DECIMAL(12,3) written with protocol=debezium, read back with the same options (column-types
    included), failed on the double Debezium carries it as."""
    options = {"kafka.bootstrap.servers": broker.bootstrap_servers, "topic": topic, "protocol": "debezium",
               "database": "shop", "table": "orders", "primary-key": "id", "column-types": "amount DECIMAL(12,3)"}
    amounts = [Decimal("1234.567"), Decimal("-999999999.999"), Decimal("0.001"), None]
    rows = [(i, amount) for i, amount in enumerate(amounts)]
    spark.createDataFrame(rows, "id INT, amount DECIMAL(12,3)").write.format("ticdc").mode("append") \
        .options(**options).save()

    frame = spark.read.format("ticdc").options(**options, **{"kafka.isolation.level": broker.isolation}).load()

    assert frame.schema["amount"].dataType == T.DecimalType(12, 3)
    assert [tuple(r) for r in frame.select("id", "amount").orderBy("id").collect()] == rows


@pytest.mark.spark
@pytest.mark.broker
def test_a_debezium_topic_without_the_extension_reads_back_through_spark_by_the_schemas_types(spark, broker, topic):
    """Issue 37: read with the ``.schema(...)`` it was written with, without column-types: BIGINT UNSIGNED declared
    by its field's mysql_type metadata, DECIMAL and VARBINARY by their Spark types, read back as written."""
    options = {"kafka.bootstrap.servers": broker.bootstrap_servers, "topic": topic, "protocol": "debezium",
               "database": "shop", "table": "orders", "primary-key": "id"}
    columns = T.StructType([T.StructField("id", T.IntegerType()), T.StructField("amount", T.DecimalType(12, 3)),
                            T.StructField("units", T.DecimalType(20, 0), metadata={"mysql_type": "BIGINT UNSIGNED"}),
                            T.StructField("digest", T.BinaryType())])
    rows = [(0, Decimal("1234.567"), Decimal(2**64 - 1), b"a\"b\\\x89\x00"),
            (1, Decimal("-999999999.999"), Decimal(2**63), b""), (2, None, None, None)]
    spark.createDataFrame(rows, columns).write.format("ticdc").mode("append").options(**options).save()

    frame = spark.read.format("ticdc").schema(T.StructType([T.StructField("_op", T.StringType()), *columns])) \
        .options(**options, **{"kafka.isolation.level": broker.isolation}).load()

    assert [tuple(r) for r in frame.select("id", "amount", "units", "digest").orderBy("id").collect()] == rows


def test_the_matrix_covers_every_protocol_and_type():
    assert {m.protocol for m in MODES} == set(PROTOCOLS)
    types = [parse_mysql_type(c.mysql) for c in COLUMNS]
    assert {t.kind for t in types} == KIND_NAMES
    assert {(t.kind, t.unsigned) for t in types if t.is_integer} == {
        (kind, unsigned) for kind in ("tinyint", "smallint", "mediumint", "int", "bigint") for unsigned in (0, 1)}
    assert {t.kind for t in types if t.binary} == {"char", "varchar", "tinytext", "text", "mediumtext", "longtext"}
    assert all(cell.column in BY_NAME and cell.value in BY_NAME[cell.column].values for cell in LOSSY + REFUSED)
    print(f"\nthe read-back matrix: {len(MODES)} modes x {len(COLUMNS)} columns, {cell_count()} cells "
          f"({cells_of(LOSSY)} lossy, {cells_of(REFUSED)} refused):")
    for cell in LOSSY + REFUSED:
        print(f"  {cell.protocol} {cell.options or ''} {cell.column} {cell.value!r} -> {cell.read!r}: {cell.lost}")
