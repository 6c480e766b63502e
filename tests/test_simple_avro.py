"""protocol=simple, encoding-format=avro: the document's examples as TiCDC's Avro marshaller writes them.

The expected bytes are fastavro's encoding, with TiCDC's schema as the reference
holds it (golden/simple/simple-avro-schema.json), of each JSON golden converted
the way TiCDC's avro.go builds its messages: the same fields, ``database`` for
the table schema's ``schema``, unsigned/zerofill written (false included) for
numeric types only, ``decimal`` for DECIMAL and TIMESTAMP only, and each value in the union
branch of the Go type TiCDC holds it in (BIT a string).  Map members are sorted by name, as
the sink writes them (TiCDC's follow Go's map order).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import json
from decimal import Decimal
from pathlib import Path

import fastavro
import numpy as np
import pytest
from changefeed import build, configured, schema
from pyspark.sql import types as T
from test_simple import ADD_CREATE_TIME, DOCUMENT_ROWS, VERSION
from test_simple import encoder as json_encoder
from test_simple import golden, user_after_add_column

from ticdc_sink.changes.dispatch import Routing
from ticdc_sink.codec.simple.decoder import SimpleDecoder
from ticdc_sink.codec.simple.encoder import SimpleEncoder
from ticdc_sink.codec.simple.table_schema import simple_table
from ticdc_sink.ddl.statements import DDLChange, classify

GOLDEN_SCHEMA = Path(__file__).resolve().parent / "golden" / "simple" / "simple-avro-schema.json"
SCHEMA = fastavro.parse_schema(json.loads(GOLDEN_SCHEMA.read_text(encoding="utf-8")))
NS = "com.pingcap.simple.avro."
LONG_TYPES = {"tinyint", "smallint", "mediumint", "int", "bigint", "year", "enum", "set"}
FLAGGED = {"tinyint", "smallint", "mediumint", "int", "bigint", "float", "double", "bit", "year", "decimal"}


def avro_table_schema(table: dict) -> dict:
    def data_type(d: dict) -> dict:
        flagged = d["mysqlType"] in FLAGGED
        return {"mysqlType": d["mysqlType"], "charset": d["charset"], "collate": d["collate"],
                "length": d.get("length", 0),
                "decimal": d.get("decimal", 0) if d["mysqlType"] in ("decimal", "timestamp") else None,
                "elements": d.get("elements") if d["mysqlType"] in ("enum", "set") else None,
                "unsigned": d.get("unsigned", False) if flagged else None,
                "zerofill": d.get("zerofill", False) if flagged else None}

    return {"database": table["schema"], "table": table["table"], "tableID": table["tableID"],
            "version": table["version"], "indexes": table["indexes"],
            "columns": [{**c, "dataType": data_type(c["dataType"])} for c in table["columns"]]}


def avro_value(value, d: dict):
    """A JSON value of Simple in the Avro branch TiCDC picks for its Go type."""
    mysql_type = d["mysqlType"]
    if value is None:
        return None
    if mysql_type == "timestamp":
        return (NS + "Timestamp", value)
    signed = int(value) - 2**64 if mysql_type in LONG_TYPES and int(value) >= 2**63 else None  # Go's int64(uint64)
    if mysql_type == "bigint" and d.get("unsigned"):
        return (NS + "UnsignedBigint", {"value": int(value) if signed is None else signed})
    if mysql_type in LONG_TYPES:
        return ("long", int(value) if signed is None else signed)
    if mysql_type in ("float", "double"):
        return (mysql_type, float(value))
    if d["charset"] == "binary" and ("binary" in mysql_type or "blob" in mysql_type):
        import base64
        return ("bytes", base64.b64decode(value))
    return ("string", value)


def ticdc_avro(message: str, table: dict | None = None) -> bytes:
    """A JSON Simple message as TiCDC's Avro marshaller writes the same event (``table``: the DML's schema)."""
    doc = json.loads(message)
    kind = doc["type"]
    if kind == "WATERMARK":
        record, payload = "Watermark", {k: doc[k] for k in ("version", "commitTs", "buildTs")}
    elif kind == "BOOTSTRAP":
        record, payload = "Bootstrap", {"version": 1, "buildTs": doc["buildTs"],
                                        "tableSchema": avro_table_schema(doc["tableSchema"])}
    elif kind in ("INSERT", "UPDATE", "DELETE"):
        types = {c["name"]: c["dataType"] for c in table["columns"]}

        def row(values):
            return None if values is None else {k: avro_value(values[k], types[k]) for k in sorted(values)}

        record, kind = "DML", "DML"
        payload = {**{k: doc[k] for k in ("version", "database", "table", "tableID", "type", "commitTs", "buildTs",
                                          "schemaVersion")},
                   "claimCheckLocation": None, "handleKeyOnly": None, "checksum": None,
                   "data": row(doc.get("data")), "old": row(doc.get("old"))}
    else:
        record, kind = "DDL", "DDL"
        payload = {"version": 1, "type": doc["type"], "sql": doc.get("sql", ""), "commitTs": doc["commitTs"],
                   "buildTs": doc["buildTs"],
                   **{k: avro_table_schema(doc[k]) if k in doc else None for k in ("tableSchema", "preTableSchema")}}
    out = io.BytesIO()
    fastavro.schemaless_writer(out, SCHEMA, (NS + "Message", {"type": kind, "payload": (NS + record, payload)}))
    return out.getvalue()


def test_the_schema_the_sink_ships_is_ticdcs():
    from ticdc_sink.codec.simple.avro_wire import SCHEMA as SHIPPED

    canonical = fastavro.schema.to_parsing_canonical_form
    assert canonical(SHIPPED) == canonical(SCHEMA)


def avro_encoder(rows: list[dict], clock_ms: int = 0):
    simple, changes = json_encoder(rows, clock_ms)
    return SimpleEncoder(configured(simple.config, encoding_format="avro"), simple.table,
                         clock=simple.clock), changes


def user_table() -> dict:
    return json.loads(golden("table-schema"))


@pytest.mark.parametrize("name, row, clock_ms", DOCUMENT_ROWS)
def test_the_documents_row_events_are_ticdcs_avro_bytes(name, row, clock_ms):
    simple, changes = avro_encoder([row], clock_ms)
    n = changes.num_rows
    messages = simple.encode_rows(changes, Routing(["t"], np.zeros(n, np.int32), np.zeros(n, np.int32), {"t": 1}))
    assert messages.keys is None
    assert messages.values.to_pylist() == [ticdc_avro(golden(name), user_table())]


def test_the_documents_control_events_are_ticdcs_avro_bytes():
    simple, _ = avro_encoder([])
    simple.clock = lambda: 1708923816911
    watermark = simple.encode_watermark(447984124732375041, ["t"])
    assert watermark.values.to_pylist() == [ticdc_avro(golden("watermark"))]
    simple.clock = lambda: 1708924603278
    assert simple.encode_bootstrap("simple", "new_user") == ticdc_avro(golden("bootstrap"))

    after, table = user_after_add_column()
    simple = SimpleEncoder(configured(after.config, encoding_format="avro"), table, clock=after.clock)
    ddl = DDLChange("simple", "user", ADD_CREATE_TIME, 447987408682614795, classify(ADD_CREATE_TIME))
    messages = simple.encode_ddl(ddl, "t")
    derived = simple_table(dataclasses.replace(table, columns=table.columns[:4]), None).version
    expected = golden("ddl-alter-add-column").replace(f'"version":{VERSION}', f'"version":{derived}')
    assert messages.values.to_pylist() == [ticdc_avro(expected)] and messages.partitions.tolist() == [-1]


TYPES = schema(("_op", T.StringType()), ("_commit_ts", T.LongType()), ("id", T.IntegerType(), False),
               ("ts", T.TimestampType()), ("bin", T.BinaryType()), ("big", T.DecimalType(20, 0)),
               ("b", T.LongType()), ("e", T.StringType()), ("s", T.StringType()), ("d", T.DecimalType(5, 2)),
               ("day", T.DateType()), ("t", T.StringType()), ("j", T.StringType()), ("txt", T.StringType()),
               ("f", T.FloatType()), ("g", T.DoubleType()), ("y", T.IntegerType()), ("small", T.IntegerType()),
               ("nothing", T.StringType()))
COLUMN_TYPES = ("ts TIMESTAMP(3), bin VARBINARY(8), big BIGINT UNSIGNED, b BIT(64), e ENUM('a','b','c'), "
                "s SET('a','b','c'), d DECIMAL(5,2), t TIME(1), j JSON, txt TEXT, y YEAR, small SMALLINT UNSIGNED")
ROW = {"_op": "INSERT", "_commit_ts": 7, "id": 1, "ts": dt.datetime(2024, 2, 26, 0, 32, 23, 120000),
       "bin": b"\x00\xff\x02", "big": Decimal(2**64 - 1), "b": -1, "e": "b", "s": "a,c", "d": Decimal("90.5"),
       "day": dt.date(2024, 2, 26), "t": "-01:02:03.5", "j": '{"a":1}', "txt": 'x<y&\b"\\é😀', "f": 0.1,
       "g": -2.5e-300, "y": 2024, "small": 65535, "nothing": None}


def type_matrix(encoding_format: str):
    config, layout, changes, _ = build(TYPES, [ROW], database="d", table="t", primary_key="id",
                                       time_zone="Asia/Shanghai", column_types=COLUMN_TYPES)
    config = configured(config, protocol="simple", encoding_format=encoding_format)
    return SimpleEncoder(config, layout.table, clock=lambda: 0), changes


def test_every_type_takes_the_branch_of_ticdcs_go_type():
    as_json, changes = type_matrix("json")
    as_avro, _ = type_matrix("avro")
    [json_message] = as_json.encode_values(changes).to_pylist()
    [avro_message] = as_avro.encode_values(changes).to_pylist()
    table = json.loads(as_json.encode_bootstrap("d", "t"))["tableSchema"]
    assert avro_message == ticdc_avro(json_message, table)
    data = fastavro.schemaless_reader(io.BytesIO(avro_message), SCHEMA, None)["payload"]["data"]
    assert data["big"] == {"value": -1}  # all 64 bits, as Go's int64(uint64)
    assert data["b"] == "18446744073709551615"  # BIT: its unsigned number's text
    assert data["ts"] == {"location": "Asia/Shanghai", "value": "2024-02-26 08:32:23.120"}
    assert (data["bin"], data["e"], data["s"], data["d"], data["small"]) == (b"\x00\xff\x02", 2, 5, "90.50", 65535)


@pytest.mark.parametrize("encoding_format", ["json", "avro"])
def test_every_value_round_trips(encoding_format):
    simple, changes = type_matrix(encoding_format)
    decoder = SimpleDecoder()
    [bootstrap] = decoder.decode(None, _bytes(simple.encode_bootstrap("d", "t")))
    assert (bootstrap.type, bootstrap.table, bootstrap.commit_ts) == ("BOOTSTRAP", "t", 0)
    [value] = simple.encode_values(changes).to_pylist()
    [event] = decoder.decode(None, _bytes(value))
    assert event.columns == {"id": 1, "ts": dt.datetime(2024, 2, 26, 8, 32, 23, 120000), "bin": b"\x00\xff\x02",
                             "big": 2**64 - 1, "b": 2**64 - 1, "e": 2, "s": 5, "d": Decimal("90.50"),
                             "day": dt.date(2024, 2, 26), "t": "-01:02:03.5", "j": '{"a": 1}',
                             "txt": 'x<y&\b"\\é😀', "f": 0.1, "g": -2.5e-300, "y": 2024, "small": 65535,
                             "nothing": None}
    assert event.commit_ts == 7 and event.primary_keys == ["id"]


def test_the_avro_table_schema_reads_back_as_the_json_one():
    as_json, _ = type_matrix("json")
    as_avro, _ = type_matrix("avro")
    decoder = SimpleDecoder()
    decoder.decode(None, as_avro.encode_bootstrap("d", "t"))
    [(key, from_avro)] = decoder._schemas.items()
    from_json = json.loads(as_json.encode_bootstrap("d", "t"))["tableSchema"]
    assert key == ("d", "t", from_json["version"])
    for column, json_column in zip(from_avro["columns"], from_json["columns"]):
        avro_type = {k: v for k, v in column["dataType"].items() if v not in (None, False, 0)}
        json_type = dict(json_column["dataType"])
        if json_type["mysqlType"] not in ("decimal", "timestamp"):  # JSON also writes DATETIME's and TIME's fsp
            json_type.pop("decimal", None)
        assert avro_type == json_type, column["name"]
    assert [c["dataType"]["decimal"] for c in from_json["columns"] if c["name"] in ("ts", "t")] == [3, 1]


def _bytes(value: str | bytes) -> bytes:
    return value.encode() if isinstance(value, str) else value
