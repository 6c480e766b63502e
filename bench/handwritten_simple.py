"""Hand-written encoders of TiCDC's Simple protocol, in JSON (``json.dumps``) and in Avro (fastavro): one
message per row, no key, with the sink's table ID and schema version so that both write the same messages."""

from __future__ import annotations

import base64
import datetime as dt
import io
import time
from dataclasses import dataclass

from feed import DATABASE, TABLE
from handwritten_values import ANY_PARTITION, datetime3, go_number, signed64


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
    return repr(go_number(value))


SIMPLE_TEXT = {  # each column's text in Simple JSON (every value a string), by name
    "id": str, "c_tinyint": str, "c_smallint": str, "c_int": str, "c_ubigint": str, "c_decimal": str,
    "c_double": _simple_float, "c_varchar": str, "c_text": str,
    "c_varbinary": lambda v: base64.b64encode(v).decode(), "c_date": str, "c_datetime": datetime3,
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
    "c_ubigint": (_AVRO + "UnsignedBigint", lambda v: {"value": signed64(v)}), "c_decimal": ("string", str),
    "c_double": ("double", float), "c_varchar": ("string", str), "c_text": ("string", str),
    "c_varbinary": ("bytes", bytes), "c_date": ("string", str), "c_datetime": ("string", datetime3),
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

