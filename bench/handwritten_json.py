"""Hand-written encoders of the JSON protocols (Canal-JSON, Open Protocol, Debezium): a dict per row, then
the serialiser, as a team would write them with the feed's types hard-coded.

- ``handwritten_canal_json``: one Canal-JSON message per row, no key;
- ``handwritten_open_protocol``: per row an Open Protocol event (a key and a
  value document, a dict per column), packed per partition into frames of up
  to 16 events with ``struct.pack``;
- ``handwritten_debezium``: one message per row, its key and value payloads a
  dict each, serialised compactly, with the constant ``schema`` parts (written
  once as dicts and serialised once) spliced in; with the TiDB extension, as
  the bench runs the sink, so the bytes are the sink's but for the encoding
  clock (``payload.ts_ms``).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import struct
import time

from feed import DATABASE, TABLE
from handwritten_values import ANY_PARTITION, datetime3, encoded, go_number, signed64, text

SQL_TYPES = {"id": -5, "c_tinyint": -6, "c_smallint": 5, "c_int": 4, "c_ubigint": -5, "c_decimal": 3,
             "c_double": 8, "c_varchar": 12, "c_text": 2005, "c_varbinary": 2004, "c_date": 91,
             "c_datetime": 93, "c_timestamp": 93, "c_json": 12}
MYSQL_TYPES = {"id": "bigint", "c_tinyint": "tinyint", "c_smallint": "smallint", "c_int": "int",
               "c_ubigint": "bigint unsigned", "c_decimal": "decimal", "c_double": "double",
               "c_varchar": "varchar", "c_text": "text", "c_varbinary": "varbinary", "c_date": "date",
               "c_datetime": "datetime", "c_timestamp": "timestamp", "c_json": "json"}


# ---------------------------------------------------------------------------
# Canal-JSON


def canal_json_message(row: dict, build_ms: int, dumps=json.dumps) -> bytes:
    """One Canal-JSON message the per-row way."""
    data = {k: text(v) for k, v in row.items() if not k.startswith("_")}
    before = row.get("_before")
    old = [{k: text(v) for k, v in before.items()}] if row["_op"] == "UPDATE" and before else None
    message = {"id": 0, "database": DATABASE, "table": TABLE, "pkNames": ["id"], "isDdl": False,
               "type": row["_op"], "es": row["_commit_ts"] >> 18, "ts": build_ms, "sql": "",
               "sqlType": SQL_TYPES, "mysqlType": MYSQL_TYPES, "old": old, "data": [data]}
    return encoded(message, dumps)


def handwritten_canal_json(rows, dumps=json.dumps, partitions: int = 1):
    """Canal-JSON messages: one per row, no key, the producer's partitioner places them."""
    build_ms = int(time.time() * 1000)
    for row in rows:
        yield ANY_PARTITION, None, canal_json_message(row, build_ms, dumps)


# ---------------------------------------------------------------------------
# Open Protocol


def _base64(value: str) -> str:
    return base64.b64encode(value.encode()).decode()


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
    "c_ubigint": ({"t": 8, "f": 193}, int), "c_decimal": ({"t": 246, "f": 65}, text),
    "c_double": ({"t": 5, "f": 65}, float), "c_varchar": ({"t": 15, "f": 64}, str),
    "c_text": ({"t": 252, "f": 64}, _base64), "c_varbinary": ({"t": 15, "f": 65}, _go_quoted),
    "c_date": ({"t": 10, "f": 65}, text), "c_datetime": ({"t": 12, "f": 65}, datetime3),
    "c_timestamp": ({"t": 7, "f": 65}, text), "c_json": ({"t": 245, "f": 65}, str),
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
    return encoded(key, dumps), encoded(value, dumps)


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


def debezium_row(row: dict) -> dict:
    """A row's ``before`` or ``after`` object: each column as Debezium types it."""
    ubigint, decimal, double, binary = row["c_ubigint"], row["c_decimal"], row["c_double"], row["c_varbinary"]
    date, c_datetime, timestamp = row["c_date"], row["c_datetime"], row["c_timestamp"]
    return {
        "id": row["id"], "c_tinyint": row["c_tinyint"], "c_smallint": row["c_smallint"], "c_int": row["c_int"],
        "c_ubigint": None if ubigint is None else signed64(ubigint),
        "c_decimal": None if decimal is None else go_number(float(decimal)),
        "c_double": None if double is None else go_number(double),
        "c_varchar": row["c_varchar"], "c_text": row["c_text"],
        "c_varbinary": None if binary is None else base64.b64encode(binary).decode(),
        # The feed's dates are from 1970 on: no two-digit-year rule to apply.
        "c_date": None if date is None else date.toordinal() - _EPOCH_DAY,
        # DATETIME(3): the wall clock's epoch milliseconds, rounded half up as TiDB stores it.
        "c_datetime": None if c_datetime is None else ((c_datetime - _EPOCH) // _MICROSECOND + 500) // 1000,
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
        key = b'{"payload":' + encoded({"id": row["id"]}, dumps) + DEBEZIUM_KEY_TAIL
        value = b'{"payload":' + encoded(debezium_payload(row, int(time.time() * 1000)), dumps) + DEBEZIUM_VALUE_TAIL
        yield ANY_PARTITION, key, value

