"""What a user would write without the sink, and the bare limit of the output path.

``handwritten_canal_json`` is the per-row code a team would hand-write:
a Python dict per row, ``json.dumps`` (or ``orjson.dumps`` when installed),
the same Canal-JSON layout with the feed's types hard-coded. ``produce_all`` is
a bare confluent-kafka loop over pre-encoded messages.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from decimal import Decimal

try:
    import orjson
except ImportError:  # optional: the baseline then uses json.dumps only
    orjson = None

from feed import DATABASE, TABLE

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


def handwritten_canal_json(row: dict, build_ms: int, dumps=json.dumps) -> bytes:
    """One Canal-JSON message the per-row way."""
    data = {k: _text(v) for k, v in row.items() if not k.startswith("_")}
    before = row.get("_before")
    old = [{k: _text(v) for k, v in before.items()}] if row["_op"] == "UPDATE" and before else None
    message = {"id": 0, "database": DATABASE, "table": TABLE, "pkNames": ["id"], "isDdl": False,
               "type": row["_op"], "es": row["_commit_ts"] >> 18, "ts": build_ms, "sql": "",
               "sqlType": SQL_TYPES, "mysqlType": MYSQL_TYPES, "old": old, "data": [data]}
    encoded = dumps(message)
    return encoded if isinstance(encoded, bytes) else encoded.encode()


def dumps_choices() -> dict[str, object]:
    choices = {"json.dumps": json.dumps}
    if orjson is not None:
        choices["orjson.dumps"] = orjson.dumps
    return choices


def produce_all(settings: dict, topic: str, values: list[bytes]) -> float:
    """Produce ``values`` with a bare idempotent producer; returns the seconds until all are acknowledged."""
    from confluent_kafka import Producer

    failures = []

    def on_delivery(error, _message):
        if error is not None:
            failures.append(error)

    producer = Producer({**settings, "enable.idempotence": True, "acks": "all", "linger.ms": 5})
    started = time.perf_counter()
    for value in values:
        while True:
            try:
                producer.produce(topic, value, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    remaining = producer.flush(120)
    elapsed = time.perf_counter() - started
    if failures or remaining:
        raise RuntimeError(f"bare producer: {len(failures)} failed, {remaining} unacknowledged")
    return elapsed
