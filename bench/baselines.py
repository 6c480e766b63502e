"""What a user would write without the sink, and the bare limit of the output path.

The hand-written encoders are the per-row code a team would write, with the
feed's types hard-coded: a Python dict per row, ``json.dumps`` (or
``orjson.dumps`` when installed). Each turns rows into Kafka messages
``(partition, key, value)``:

- ``handwritten_canal_json``: one Canal-JSON message per row, no key;
- ``handwritten_open_protocol``: per row an Open Protocol event (a key and a
  value document, a dict per column), packed per partition into frames of up
  to 16 events with ``struct.pack``.

``produce_all`` is a bare confluent-kafka loop over pre-encoded messages.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import struct
import time
from decimal import Decimal

try:
    import orjson
except ImportError:  # optional: the baseline then uses json.dumps only
    orjson = None

from feed import DATABASE, TABLE

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


def dumps_choices(protocol: str = "canal-json") -> dict[str, object]:
    """The serialisers a hand-written encoder of ``protocol`` would use.

    TiCDC writes Open Protocol JSON without spaces or ``\\u`` escapes; a user
    matching it makes one such ``JSONEncoder`` (``json.dumps`` with options
    would build one per call).
    """
    if protocol == "open-protocol":
        choices = {"json.dumps": json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode}
    else:
        choices = {"json.dumps": json.dumps}
    if orjson is not None:
        choices["orjson.dumps"] = orjson.dumps
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


HANDWRITTEN = {"canal-json": handwritten_canal_json, "open-protocol": handwritten_open_protocol}


# ---------------------------------------------------------------------------
# The bare output limit


def produce_all(settings: dict, topic: str, messages: list[tuple[bytes | None, bytes]]) -> float:
    """Produce ``(key, value)`` messages with a bare idempotent producer; the seconds until all are acknowledged."""
    from confluent_kafka import Producer

    failures = []

    def on_delivery(error, _message):
        if error is not None:
            failures.append(error)

    producer = Producer({**settings, "enable.idempotence": True, "acks": "all", "linger.ms": 5})
    started = time.perf_counter()
    for key, value in messages:
        while True:
            try:
                producer.produce(topic, value, key, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    remaining = producer.flush(120)
    elapsed = time.perf_counter() - started
    if failures or remaining:
        raise RuntimeError(f"bare producer: {len(failures)} failed, {remaining} unacknowledged")
    return elapsed
