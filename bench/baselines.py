"""What a user would write without the sink or the reader, and the bare limit of the output path.

The hand-written encoders are the per-row code a team would write, with the
feed's types hard-coded: a Python dict per row, then ``json.dumps`` (or
``orjson.dumps`` when installed) or confluent-kafka's ``AvroSerializer``. Each
turns rows into Kafka messages ``(partition, key, value)``:

- ``handwritten_canal_json``: one Canal-JSON message per row, no key;
- ``handwritten_open_protocol``: per row an Open Protocol event (a key and a
  value document, a dict per column), packed per partition into frames of up
  to 16 events with ``struct.pack``;
- ``handwritten_avro``: one message per row, its key and value records
  serialised by ``AvroSerializer`` with the schemas the sink registers, so the
  bytes are the sink's; a delete is the key and no value (a tombstone);
- ``handwritten_debezium``: one message per row, its key and value payloads a
  dict each, serialised compactly, with the constant ``schema`` parts (written
  once as dicts and serialised once) spliced in; with the TiDB extension, as
  the bench runs the sink, so the bytes are the sink's but for the encoding
  clock (``payload.ts_ms``).

Reading a Canal-JSON topic into Spark without the reader, over Spark's Kafka
source, into the reader's columns: ``canal_json_by_from_json`` (``from_json``
with a hand-written schema, each column cast to its Spark type) and
``canal_json_by_python_udf`` (per message ``json.loads`` and a tuple per row
built by hand, in a Python UDF).

``produce_all`` is a bare confluent-kafka loop over pre-encoded messages.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import struct
import time
import uuid
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

try:
    import orjson
except ImportError:  # optional: the baseline then uses json.dumps only
    orjson = None

from feed import DATABASE, TABLE
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage

ANY_PARTITION = -1  # confluent-kafka's "the partitioner decides"

SQL_TYPES = {"id": -5, "c_tinyint": -6, "c_smallint": 5, "c_int": 4, "c_ubigint": -5, "c_decimal": 3,
             "c_double": 8, "c_varchar": 12, "c_text": 2005, "c_varbinary": 2004, "c_date": 91,
             "c_datetime": 93, "c_timestamp": 93, "c_json": 12}
MYSQL_TYPES = {"id": "bigint", "c_tinyint": "tinyint", "c_smallint": "smallint", "c_int": "int",
               "c_ubigint": "bigint unsigned", "c_decimal": "decimal", "c_double": "double",
               "c_varchar": "varchar", "c_text": "text", "c_varbinary": "varbinary", "c_date": "date",
               "c_datetime": "datetime", "c_timestamp": "timestamp", "c_json": "json"}


def _text(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        return value.decode("latin-1")
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")
    if isinstance(value, (dt.date, Decimal, int, float, str)):
        return str(value)
    return str(value)


def _encoded(document, dumps) -> bytes:
    encoded = dumps(document)
    return encoded if isinstance(encoded, bytes) else encoded.encode()


# The serialiser of each protocol's hand-written encoder that the encode target is measured against, and that
# the hand-written Spark job uses.
STANDARD_SERIALIZER = {"canal-json": "json.dumps", "open-protocol": "json.dumps", "avro": "AvroSerializer",
                       "debezium": "json.dumps", "simple": "json.dumps", "simple-avro": "fastavro"}


def serializer_choices(protocol: str = "canal-json", avro: AvroTarget | None = None) -> dict[str, object]:
    """The serialisers a hand-written encoder of ``protocol`` would use, by name.

    TiCDC writes Open Protocol and Debezium JSON without spaces or ``\\u``
    escapes; a user matching it makes one such ``JSONEncoder`` (``json.dumps``
    with options would build one per call).  Avro's is confluent-kafka's
    ``AvroSerializer`` for the registry, topic and schemas of ``avro``.
    """
    if protocol == "avro":
        return {"AvroSerializer": AvroSerializers(avro)}
    if protocol == "simple-avro":
        return {"fastavro": SimpleAvroWriter(SimpleTableIdentity.of_the_sink())}
    if protocol in ("open-protocol", "debezium", "simple"):
        choices = {"json.dumps": json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode}
    else:
        choices = {"json.dumps": json.dumps}
    if orjson is not None:
        choices["orjson.dumps"] = orjson.dumps
    if protocol == "simple":
        identity = SimpleTableIdentity.of_the_sink()
        choices = {name: SimpleJSONDumps(dumps) for name, dumps in choices.items()}
        for dumps in choices.values():
            dumps.identity = identity
    return choices


# ---------------------------------------------------------------------------
# Canal-JSON


def canal_json_message(row: dict, build_ms: int, dumps=json.dumps) -> bytes:
    """One Canal-JSON message the per-row way."""
    data = {k: _text(v) for k, v in row.items() if not k.startswith("_")}
    before = row.get("_before")
    old = [{k: _text(v) for k, v in before.items()}] if row["_op"] == "UPDATE" and before else None
    message = {"id": 0, "database": DATABASE, "table": TABLE, "pkNames": ["id"], "isDdl": False,
               "type": row["_op"], "es": row["_commit_ts"] >> 18, "ts": build_ms, "sql": "",
               "sqlType": SQL_TYPES, "mysqlType": MYSQL_TYPES, "old": old, "data": [data]}
    return _encoded(message, dumps)


def handwritten_canal_json(rows, dumps=json.dumps, partitions: int = 1):
    """Canal-JSON messages: one per row, no key, the producer's partitioner places them."""
    build_ms = int(time.time() * 1000)
    for row in rows:
        yield ANY_PARTITION, None, canal_json_message(row, build_ms, dumps)


# ---------------------------------------------------------------------------
# Open Protocol

_HALF_MILLISECOND = dt.timedelta(microseconds=500)


def _datetime3(value: dt.datetime) -> str:  # DATETIME(3), rounded to milliseconds
    return _text(value + _HALF_MILLISECOND)[:-3]


def _base64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


# Go's strconv.Quote: control characters escaped, invalid UTF-8 bytes as \xNN (backslashreplace does those).
_GO_ESCAPES = {**{c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F]},
               **{c: f"\\u{c:04x}" for c in [*range(0x80, 0xA0), 0xAD]},
               7: "\\a", 8: "\\b", 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r"}


def _go_quoted(data: bytes) -> str:
    escaped = data.replace(b"\\", b"\\\\").replace(b'"', b'\\"')
    return escaped.decode("utf-8", "backslashreplace").translate(_GO_ESCAPES)


OPEN_COLUMNS = {  # name: (the column's "t", "h" and "f" members, its "v" from the row's value)
    "id": ({"t": 8, "h": True, "f": 11}, int), "c_tinyint": ({"t": 1, "f": 65}, int),
    "c_smallint": ({"t": 2, "f": 65}, int), "c_int": ({"t": 3, "f": 65}, int),
    "c_ubigint": ({"t": 8, "f": 193}, int), "c_decimal": ({"t": 246, "f": 65}, _text),
    "c_double": ({"t": 5, "f": 65}, float), "c_varchar": ({"t": 15, "f": 64}, str),
    "c_text": ({"t": 252, "f": 64}, _base64), "c_varbinary": ({"t": 15, "f": 65}, _go_quoted),
    "c_date": ({"t": 10, "f": 65}, _text), "c_datetime": ({"t": 12, "f": 65}, _datetime3),
    "c_timestamp": ({"t": 7, "f": 65}, _text), "c_json": ({"t": 245, "f": 65}, str),
}


def _open_columns(values: dict) -> dict:
    return {name: {**head, "v": None if values[name] is None else to_json(values[name])}
            for name, (head, to_json) in OPEN_COLUMNS.items()}


def open_protocol_event(row: dict, dumps) -> tuple[bytes, bytes]:
    """One row's event key and value the per-row way (old values on: a delete carries every column)."""
    key = {"ts": row["_commit_ts"], "scm": DATABASE, "tbl": TABLE, "t": 1}
    if row["_op"] == "DELETE":
        value = {"d": _open_columns(row)}
    else:
        value = {"u": _open_columns(row)}
        if row["_op"] == "UPDATE" and row["_before"]:
            value["p"] = _open_columns(row["_before"])
    return _encoded(key, dumps), _encoded(value, dumps)


_VERSION = struct.pack(">Q", 1)


def _frame(events: list[tuple[bytes, bytes]]) -> tuple[bytes, bytes]:
    keys, values = [_VERSION], []
    for key, value in events:
        keys += (struct.pack(">Q", len(key)), key)
        values += (struct.pack(">Q", len(value)), value)
    return b"".join(keys), b"".join(values)


def handwritten_open_protocol(rows, dumps, partitions: int = 1, max_events: int = 16):
    """Open Protocol messages: each partition's events (by id) in frames of up to ``max_events``.

    No check of max-message-bytes: the feed's frames stay far below it.
    """
    pending: list[list[tuple[bytes, bytes]]] = [[] for _ in range(partitions)]
    for row in rows:
        partition = row["id"] % partitions
        events = pending[partition]
        events.append(open_protocol_event(row, dumps))
        if len(events) == max_events:
            yield partition, *_frame(events)
            events.clear()
    for partition, events in enumerate(pending):
        if events:
            yield partition, *_frame(events)


# ---------------------------------------------------------------------------
# Avro


@dataclass(frozen=True)
class AvroTarget:
    """What the hand-written Avro encoder writes for: the registry, the topic (subjects ``<topic>-key`` and
    ``<topic>-value``) and the schema texts the sink registers, so that both make the same bytes."""

    registry_url: str
    topic: str
    key_schema: str
    value_schema: str


class AvroSerializers:
    """confluent-kafka's ``AvroSerializer`` of the key and of the value, each called per row with its context."""

    def __init__(self, target: AvroTarget):
        from confluent_kafka.schema_registry import SchemaRegistryClient, topic_subject_name_strategy
        from confluent_kafka.schema_registry.avro import AvroSerializer
        from confluent_kafka.serialization import MessageField, SerializationContext

        client = SchemaRegistryClient({"url": target.registry_url})
        conf = {"subject.name.strategy": topic_subject_name_strategy}  # TiCDC's subjects, <topic>-key and -value
        self._key = AvroSerializer(client, target.key_schema, conf=conf)
        self._value = AvroSerializer(client, target.value_schema, conf=conf)
        self._key_context = SerializationContext(target.topic, MessageField.KEY)
        self._value_context = SerializationContext(target.topic, MessageField.VALUE)

    def key(self, record: dict) -> bytes:
        return self._key(record, self._key_context)

    def value(self, record: dict) -> bytes:
        return self._value(record, self._value_context)


def _signed64(value) -> int:
    """BIGINT UNSIGNED as TiCDC's Avro ``long``: the same 64 bits, read as signed."""
    number = int(value)
    return number - 2**64 if number >= 2**63 else number


def avro_value(row: dict) -> dict:
    """An insert's or update's value record: each column as TiCDC's Avro types it, then the TiDB extension."""
    ubigint, date, datetime3, timestamp = row["c_ubigint"], row["c_date"], row["c_datetime"], row["c_timestamp"]
    return {
        "id": row["id"], "c_tinyint": row["c_tinyint"], "c_smallint": row["c_smallint"], "c_int": row["c_int"],
        "c_ubigint": None if ubigint is None else _signed64(ubigint), "c_decimal": row["c_decimal"],
        "c_double": row["c_double"], "c_varchar": row["c_varchar"], "c_text": row["c_text"],
        "c_varbinary": row["c_varbinary"], "c_date": None if date is None else str(date),
        "c_datetime": None if datetime3 is None else _datetime3(datetime3),
        "c_timestamp": None if timestamp is None else _text(timestamp), "c_json": row["c_json"],
        "_tidb_op": "u" if row["_op"] == "UPDATE" else "c", "_tidb_commit_ts": row["_commit_ts"],
        "_tidb_commit_physical_time": row["_commit_ts"] >> 18,
    }


def handwritten_avro(rows, serializers: AvroSerializers, partitions: int = 1):
    """Avro messages: one per row, keyed by its primary key (the producer's partitioner hashes it); a delete
    is the key and no value, a tombstone."""
    for row in rows:
        key = serializers.key({"id": row["id"]})
        value = None if row["_op"] == "DELETE" else serializers.value(avro_value(row))
        yield ANY_PARTITION, key, value


# ---------------------------------------------------------------------------
# Debezium

DEBEZIUM_CLUSTER = "default"  # TiCDC's cluster-id when none is given: the schema names' and source's
_DEBEZIUM_NAME = f"{DEBEZIUM_CLUSTER}.{DATABASE}.{TABLE}"
DEBEZIUM_COLUMNS = [  # the feed's columns in table order: (name, tidb_type, Debezium type, semantic type)
    ("id", "bigint", "int64", None), ("c_tinyint", "tinyint", "int16", None),
    ("c_smallint", "smallint", "int16", None), ("c_int", "int", "int32", None),
    ("c_ubigint", "bigint unsigned", "int64", None), ("c_decimal", "decimal", "double", None),
    ("c_double", "double", "double", None), ("c_varchar", "varchar", "string", None),
    ("c_text", "text", "string", None), ("c_varbinary", "varbinary", "string", None),
    ("c_date", "date", "int32", "io.debezium.time.Date"),
    ("c_datetime", "datetime", "int64", "io.debezium.time.Timestamp"),  # DATETIME(3): milliseconds
    ("c_timestamp", "timestamp", "string", "io.debezium.time.ZonedTimestamp"),
    ("c_json", "json", "string", "io.debezium.data.Json"),
]


def _debezium_field(column: str, tidb_type: str, kind: str, semantic: str | None) -> dict:
    """A column's field schema, with the TiDB extension's ``tidb_type``; only the key column is NOT NULL."""
    field = {"tidb_type": tidb_type, "type": kind, "optional": column != "id"}
    if semantic:
        field.update(name=semantic, version=1)
    field["field"] = column
    return field


def _plain_field(kind: str, name: str, optional: bool = False) -> dict:
    return {"type": kind, "optional": optional, "field": name}


def _debezium_schemas() -> tuple[dict, dict]:
    """The key's and the value's ``schema`` documents, the same for every row of the table."""
    fields = [_debezium_field(*column) for column in DEBEZIUM_COLUMNS]
    rows = [{"type": "struct", "optional": True, "name": f"{_DEBEZIUM_NAME}.Value", "field": member,
             "fields": fields} for member in ("before", "after")]
    snapshot = {"type": "string", "optional": True, "name": "io.debezium.data.Enum", "version": 1,
                "parameters": {"allowed": "true,last,false,incremental"}, "default": "false", "field": "snapshot"}
    source = {"type": "struct", "fields": [
        _plain_field("string", "version"), _plain_field("string", "connector"), _plain_field("string", "name"),
        _plain_field("int64", "ts_ms"), snapshot, _plain_field("string", "db"),
        _plain_field("string", "sequence", True), _plain_field("string", "table", True),
        _plain_field("int64", "server_id"), _plain_field("string", "gtid", True), _plain_field("string", "file"),
        _plain_field("int64", "pos"), _plain_field("int32", "row"), _plain_field("int64", "thread", True),
        _plain_field("string", "query", True),
        _plain_field("int64", "commit_ts"), _plain_field("string", "cluster_id"),  # the TiDB extension's
    ], "optional": False, "name": "io.debezium.connector.mysql.Source", "field": "source"}
    transaction = {"type": "struct", "fields": [
        _plain_field("string", "id"), _plain_field("int64", "total_order"),
        _plain_field("int64", "data_collection_order")],
        "optional": True, "name": "event.block", "version": 1, "field": "transaction"}
    key = {"type": "struct", "name": f"{_DEBEZIUM_NAME}.Key", "optional": False, "fields": fields[:1]}
    value = {"type": "struct", "optional": False, "name": f"{_DEBEZIUM_NAME}.Envelope", "version": 1,
             "fields": [*rows, source, _plain_field("string", "op"), _plain_field("int64", "ts_ms", True),
                        transaction]}
    return key, value


def _schema_tail(schema: dict) -> bytes:
    return (',"schema":' + json.dumps(schema, separators=(",", ":"), ensure_ascii=False) + "}").encode()


# The end of every key and value: the schema, serialised once.
DEBEZIUM_KEY_TAIL, DEBEZIUM_VALUE_TAIL = (_schema_tail(schema) for schema in _debezium_schemas())
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_DAY = dt.date(1970, 1, 1).toordinal()
_MICROSECOND = dt.timedelta(microseconds=1)


def _go_number(value: float):
    """A float64 as Go prints it: a whole number without a fraction (``100``, not ``100.0``). Otherwise
    Python's shortest text is Go's in the feed's range (they differ from 1e16 up and below 1e-4)."""
    return int(value) if value.is_integer() else value


def debezium_row(row: dict) -> dict:
    """A row's ``before`` or ``after`` object: each column as Debezium types it."""
    ubigint, decimal, double, binary = row["c_ubigint"], row["c_decimal"], row["c_double"], row["c_varbinary"]
    date, datetime3, timestamp = row["c_date"], row["c_datetime"], row["c_timestamp"]
    return {
        "id": row["id"], "c_tinyint": row["c_tinyint"], "c_smallint": row["c_smallint"], "c_int": row["c_int"],
        "c_ubigint": None if ubigint is None else _signed64(ubigint),
        "c_decimal": None if decimal is None else _go_number(float(decimal)),
        "c_double": None if double is None else _go_number(double),
        "c_varchar": row["c_varchar"], "c_text": row["c_text"],
        "c_varbinary": None if binary is None else base64.b64encode(binary).decode(),
        # The feed's dates are from 1970 on: no two-digit-year rule to apply.
        "c_date": None if date is None else date.toordinal() - _EPOCH_DAY,
        # DATETIME(3): the wall clock's epoch milliseconds, rounded half up as TiDB stores it.
        "c_datetime": None if datetime3 is None else ((datetime3 - _EPOCH) // _MICROSECOND + 500) // 1000,
        # TIMESTAMP(6): the UTC instant with six fraction digits (a naive value is the local clock's, as
        # PySpark gives it).
        "c_timestamp": None if timestamp is None else
        timestamp.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "c_json": row["c_json"],
    }


def debezium_payload(row: dict, now_ms: int) -> dict:
    """A row's value payload: the source block, the encoding clock, op and the rows in TiCDC's order."""
    commit_ts, op = row["_commit_ts"], row["_op"]
    payload = {"source": {"version": "2.4.0.Final", "connector": "TiCDC", "name": DEBEZIUM_CLUSTER,
                          "ts_ms": commit_ts >> 18, "snapshot": "false", "db": DATABASE, "table": TABLE,
                          "server_id": 0, "gtid": None, "file": "", "pos": 0, "row": 0, "thread": 0,
                          "query": None, "commit_ts": commit_ts, "cluster_id": DEBEZIUM_CLUSTER},
               "ts_ms": now_ms, "transaction": None}
    if op == "INSERT":
        payload.update(op="c", before=None, after=debezium_row(row))
    elif op == "DELETE":
        payload.update(op="d", after=None, before=debezium_row(row))
    elif row["_before"] is None:  # an update without old values has no before at all
        payload.update(op="u", after=debezium_row(row))
    else:
        payload.update(op="u", before=debezium_row(row["_before"]), after=debezium_row(row))
    return payload


def handwritten_debezium(rows, dumps, partitions: int = 1):
    """Debezium messages: one per row, keyed by its primary key (the producer's partitioner hashes it), each
    ``{"payload":..,"schema":..}`` with the payload serialised per row and the schema's text appended."""
    for row in rows:
        key = b'{"payload":' + _encoded({"id": row["id"]}, dumps) + DEBEZIUM_KEY_TAIL
        value = b'{"payload":' + _encoded(debezium_payload(row, int(time.time() * 1000)), dumps) + DEBEZIUM_VALUE_TAIL
        yield ANY_PARTITION, key, value


# ---------------------------------------------------------------------------
# Simple

@dataclass(frozen=True)
class SimpleTableIdentity:
    """The ``tableID`` and schema version the sink writes for the feed's table: a hand-written encoder would
    hard-code the numbers its team chose; these are the sink's, so that both write the same messages."""

    table_id: int
    version: int

    @classmethod
    def of_the_sink(cls) -> "SimpleTableIdentity":
        from feed import sink_options, spark_schema

        from ticdc_sink.changes.contract import InputLayout
        from ticdc_sink.codec.simple.table_schema import simple_table, table_id
        from ticdc_sink.config.sink_options import parse_options

        config = parse_options(sink_options("127.0.0.1:1", "t", protocol="simple"))
        layout = InputLayout.from_spark_schema(spark_schema(), config)
        return cls(table_id(DATABASE, TABLE, config), simple_table(layout.table, config).version)


def _simple_float(value: float) -> str:
    return repr(_go_number(value))


SIMPLE_TEXT = {  # each column's text in Simple JSON (every value a string), by name
    "id": str, "c_tinyint": str, "c_smallint": str, "c_int": str, "c_ubigint": str, "c_decimal": str,
    "c_double": _simple_float, "c_varchar": str, "c_text": str,
    "c_varbinary": lambda v: base64.b64encode(v).decode(), "c_date": str, "c_datetime": _datetime3,
    "c_timestamp": lambda v: {"location": "UTC", "value": v.astimezone(dt.timezone.utc).strftime(
        "%Y-%m-%d %H:%M:%S.%f")},
    "c_json": str,
}
SIMPLE_MEMBERS = sorted(SIMPLE_TEXT)  # Go writes a map's members sorted by key


def simple_json_values(values: dict) -> dict:
    return {name: None if values[name] is None else SIMPLE_TEXT[name](values[name]) for name in SIMPLE_MEMBERS}


# Go's encoding/json escapes these three in every string; they appear in JSON text only inside strings.
_GO_HTML_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


class SimpleJSONDumps:
    """``dumps`` of a Simple JSON message as Go writes it: compact, no ``\\u`` escapes but Go's ``<>&``."""

    def __init__(self, dumps):
        self.dumps = dumps

    def __call__(self, document) -> bytes:
        text = self.dumps(document)
        return (text.decode() if isinstance(text, bytes) else text).translate(_GO_HTML_ESCAPES).encode()


def simple_message(row: dict, identity: SimpleTableIdentity, build_ms: int, values) -> dict:
    """A row's Simple DML message, its rows from ``values`` (JSON text or Avro branches)."""
    op = row["_op"] if row["_op"] != "UPDATE" or row["_before"] else "INSERT"
    message = {"version": 1, "database": DATABASE, "table": TABLE, "tableID": identity.table_id, "type": op,
               "commitTs": row["_commit_ts"], "buildTs": build_ms, "schemaVersion": identity.version}
    if op == "DELETE":
        message["old"] = values(row)
    else:
        message["data"] = values(row)
        if op == "UPDATE":
            message["old"] = values(row["_before"])
    return message


def handwritten_simple(rows, dumps, partitions: int = 1):
    """Simple JSON messages: one per row, no key, the producer's partitioner places them."""
    identity = dumps.identity
    for row in rows:
        yield ANY_PARTITION, None, dumps(simple_message(row, identity, int(time.time() * 1000), simple_json_values))


_AVRO = "com.pingcap.simple.avro."
SIMPLE_AVRO = {  # each column's branch of Simple's Avro value union, by name
    "id": ("long", int), "c_tinyint": ("long", int), "c_smallint": ("long", int), "c_int": ("long", int),
    "c_ubigint": (_AVRO + "UnsignedBigint", lambda v: {"value": _signed64(v)}), "c_decimal": ("string", str),
    "c_double": ("double", float), "c_varchar": ("string", str), "c_text": ("string", str),
    "c_varbinary": ("bytes", bytes), "c_date": ("string", str), "c_datetime": ("string", _datetime3),
    "c_timestamp": (_AVRO + "Timestamp", SIMPLE_TEXT["c_timestamp"]), "c_json": ("string", str),
}


def simple_avro_values(values: dict) -> dict:
    return {name: None if values[name] is None else (SIMPLE_AVRO[name][0], SIMPLE_AVRO[name][1](values[name]))
            for name in SIMPLE_MEMBERS}


class SimpleAvroWriter:
    """fastavro's ``schemaless_writer`` with TiCDC's Simple schema (the one the sink ships), per message."""

    def __init__(self, identity: SimpleTableIdentity):
        import fastavro

        from ticdc_sink.codec.simple.avro_wire import SCHEMA

        self.identity, self.schema, self.write = identity, SCHEMA, fastavro.schemaless_writer

    def __call__(self, message: dict) -> bytes:
        import io
        out = io.BytesIO()
        dml = {**message, "claimCheckLocation": None, "handleKeyOnly": None, "checksum": None}
        dml.setdefault("data", None)
        dml.setdefault("old", None)
        self.write(out, self.schema, (_AVRO + "Message", {"type": "DML", "payload": (_AVRO + "DML", dml)}))
        return out.getvalue()


def handwritten_simple_avro(rows, writer: SimpleAvroWriter, partitions: int = 1):
    """Simple Avro messages: one per row, no key, the producer's partitioner places them."""
    for row in rows:
        yield ANY_PARTITION, None, writer(simple_message(row, writer.identity, int(time.time() * 1000),
                                                         simple_avro_values))


HANDWRITTEN = {"canal-json": handwritten_canal_json, "open-protocol": handwritten_open_protocol,
               "avro": handwritten_avro, "debezium": handwritten_debezium, "simple": handwritten_simple,
               "simple-avro": handwritten_simple_avro}


# ---------------------------------------------------------------------------
# Reading Canal-JSON without the reader


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
    """Spark's Kafka source read as Canal-JSON by ``canal_json_rows`` in a Python UDF, its rows exploded.
    (``mapInPandas`` and ``mapInArrow`` need pandas, which this venv lacks.)"""
    rows = F.udf(canal_json_rows, T.ArrayType(canal_json_read_schema(columns)))
    return kafka.select(F.explode(rows("value")).alias("row")).select("row.*")


# ---------------------------------------------------------------------------
# The bare output limit


PRODUCE_CALLS = {  # the ways confluent-kafka takes messages, each timed by ``produce_all``
    "produce": "produce() per message, a delivery callback each",
    "produce, error reports only": "produce() per message, delivery reports of failures only",
    "produce_batch": "produce_batch() per partition, a dict per message",
}


def produce_all(settings: dict, topic: str, messages: list[tuple[int, bytes | None, bytes | None]],
                call: str = "produce") -> float:
    """Produce ``(partition, key, value)`` messages with a bare idempotent producer, by one of
    ``PRODUCE_CALLS``; the seconds until all are acknowledged (none may fail)."""
    from confluent_kafka import Producer

    failures, delivered = [], [0]

    def on_delivery(error, _message):
        if error is not None:
            failures.append(error)
        else:
            delivered[0] += 1

    settings = {**settings, "enable.idempotence": True, "acks": "all", "linger.ms": 5}
    if call == "produce, error reports only":
        settings.update({"delivery.report.only.error": True, "on_delivery": on_delivery})
    producer = Producer(settings)
    started = time.perf_counter()
    if call == "produce_batch":
        _produce_batches(producer, topic, messages, on_delivery)
    else:
        callback = on_delivery if call == "produce" else None
        for count, (partition, key, value) in enumerate(messages):
            while True:
                try:
                    producer.produce(topic, value, key, partition, on_delivery=callback)
                    break
                except BufferError:
                    producer.poll(0.05)
            if count % 1000 == 0:
                producer.poll(0)
    remaining = producer.flush(120)
    elapsed = time.perf_counter() - started
    if call != "produce, error reports only" and delivered[0] != len(messages):
        raise RuntimeError(f"bare producer ({call}): {delivered[0]} of {len(messages)} acknowledged")
    if failures or remaining:
        raise RuntimeError(f"bare producer ({call}): {len(failures)} failed, {remaining} unacknowledged")
    return elapsed


def _produce_batches(producer, topic: str, messages: list[tuple[int, bytes | None, bytes | None]],
                     on_delivery, size: int = 10_000) -> None:
    """``produce_batch`` over runs of up to ``size`` messages per partition, as a task would hand over an
    Arrow batch's messages; the messages a full queue refused go again once it has room."""
    from confluent_kafka import KafkaError

    for start in range(0, len(messages), size):
        by_partition: dict[int, list[dict]] = {}
        for partition, key, value in messages[start:start + size]:
            by_partition.setdefault(partition, []).append({"key": key, "value": value})
        for partition, batch in by_partition.items():
            while batch:
                taken = producer.produce_batch(topic, batch, partition=partition, on_delivery=on_delivery)
                refused = [m for m in batch if "_error" in m] if taken < len(batch) else []
                for message in refused:
                    if message.pop("_error").code() != KafkaError._QUEUE_FULL:
                        raise RuntimeError("bare producer (produce_batch): a message was refused")
                if refused:
                    producer.poll(0.05)
                batch = refused
            producer.poll(0)


# ---------------------------------------------------------------------------
# What receiving the input costs


class DrainWriter(DataSourceArrowWriter):
    def __init__(self, report_dir: str):
        self.report_dir = report_dir

    def write(self, iterator) -> WriterCommitMessage:
        started, rows = time.thread_time(), 0
        for batch in iterator:
            rows += batch.num_rows
        seconds = time.thread_time() - started
        (Path(self.report_dir) / f"{uuid.uuid4().hex}.txt").write_text(f"{rows} {seconds}")
        return WriterCommitMessage()


class DrainDataSource(DataSource):
    """``format("bench-drain")``: a Python sink that takes Spark's Arrow batches and drops them.

    Each task writes the rows it took and its Python thread's CPU seconds in taking them to a file in
    the ``report-dir`` option's folder: what a task of the sink spends on receiving its input (the
    first stage of the per-stage costs), without the worker's start.
    """

    @classmethod
    def name(cls) -> str:
        return "bench-drain"

    def writer(self, schema, overwrite: bool) -> DrainWriter:
        return DrainWriter(self.options["report-dir"])


def drained(report_dir: Path) -> tuple[int, float]:
    """Rows and CPU seconds the drain's tasks reported in ``report_dir``."""
    reports = [path.read_text().split() for path in report_dir.glob("*.txt")]
    return sum(int(rows) for rows, _ in reports), sum(float(seconds) for _, seconds in reports)
