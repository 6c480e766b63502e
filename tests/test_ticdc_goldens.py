"""The type matrix as TiCDC's own encoders write it: every protocol configuration, every MySQL type, byte for byte.

``tests/golden/ticdc/`` holds, per protocol configuration (``configs.json``: a
TiCDC sink URI's parameters), the messages TiCDC b813e76's ``codec.NewEventEncoder``
wrote for one table per MySQL type (``types.json``: ``id INT PRIMARY KEY, v
<type>``): its CREATE TABLE, an INSERT of each value and of NULL, an UPDATE and a
DELETE, and per configuration a watermark.  The
generator beside them (``generator/``, see the README) ran TiCDC's code; nothing
here builds Go.  Each event goes through the sink alone, as one row of the same
table and commit ts, with the encoder's clock set to the message's own build
time where the protocol stamps one; its key and value must be TiCDC's bytes.
Avro's messages are compared after the 5-byte Confluent header or AWS Glue's 18
bytes (the ids are each registry's), and the schemas the sink registers must be
the text TiCDC registered.  The Glue configurations' goldens were written with
TiCDC's Glue client pointed at moto's Glue API; here the sink registers in moto's
too (``glue_api.py``), and must make TiCDC's requests, and its schemas' data
format and compatibility.
"""

from __future__ import annotations

import base64
import datetime as dt
import io
import json
import re
import tempfile
from decimal import Decimal
from functools import cache
from pathlib import Path
from urllib.parse import parse_qsl

import uuid

import fastavro
import numpy as np
import pytest
from changefeed import build, schema
from confluent_kafka.schema_registry import SchemaRegistryClient
from glue_api import ACCESS_KEY, SECRET_ACCESS_KEY
from pyspark.sql import types as T

from ticdc_sink.changes.dispatch import Routing
from ticdc_sink.codec import encoder_for
from ticdc_sink.codec.simple.avro_wire import SCHEMA as SIMPLE_AVRO_SCHEMA
from ticdc_sink.ddl.statements import DDLChange, classify

GOLDEN = Path(__file__).resolve().parent / "golden" / "ticdc"


def _golden_json(name: str):
    return json.loads((GOLDEN / name).read_text(encoding="utf-8"))


def type_table(case: dict) -> dict:
    """A type of types.json as the generator's table (its ``asTable``): ``id INT PRIMARY KEY, v <type>``, an INSERT
    of each value and of NULL, an UPDATE of id 100 from the first value to the last, a DELETE of id 101."""
    def row(id_: int, value: list) -> list:
        return [[str(id_), str(id_)], value]

    values = case["values"]
    return {"name": case["name"], "columns": [["id", "INT"], ["v", case["type"]]], "primary_key": "id",
            "inserts": [row(i + 1, v) for i, v in enumerate(values)] + [row(len(values) + 1, ["NULL", None])],
            "update": [row(100, values[0]), row(100, values[-1])], "delete": row(101, values[-1])}


# Every table of the goldens: the shapes (keys) and one per MySQL type.
TABLES = {case["name"]: case for case in _golden_json("shapes.json")}
TABLES.update({case["name"]: type_table(case) for case in _golden_json("types.json")})
CONFIGS = [config["name"] for config in _golden_json("configs.json")]
REGISTRY_PLACEHOLDER = "{registry}"
# A registry URL for what registers no schema (control events): never called.
UNUSED_REGISTRY = "http://127.0.0.1:9"
# The commit ts of each table's first row (the generator's baseCommitTs + 1); its CREATE TABLE commits just before.
FIRST_COMMIT_TS = 450000000000000001


@cache
def golden(config: str) -> dict:
    return json.loads((GOLDEN / f"{config}.json").read_text(encoding="utf-8"))


def spark_type(mysql_type: str) -> tuple[T.DataType, object]:
    """The Spark type a column of ``mysql_type`` arrives in (docs/input.md), and how its input text reads."""
    t = mysql_type.lower()
    base = re.match(r"[a-z]+", t).group()
    if base == "bigint" and "unsigned" in t:
        return T.DecimalType(20, 0), Decimal
    if base == "bit":
        width = int(re.search(r"\((\d+)\)", t).group(1))
        # BIT(64)'s values do not all fit a long: they arrive as their bytes, big-endian.
        return (T.BinaryType(), lambda text: int(text).to_bytes(8, "big")) if width == 64 else (T.LongType(), int)
    if base in ("tinyint", "smallint", "mediumint", "int", "bigint", "boolean"):
        return T.LongType(), int
    if base == "year":
        return T.IntegerType(), int
    if base in ("float", "double"):
        return (T.FloatType() if base == "float" else T.DoubleType()), float
    if base == "decimal":
        precision, scale = map(int, re.search(r"\((\d+),(\d+)\)", t).groups())
        # Spark's decimals stop at 38 digits: a wider DECIMAL arrives as its text.
        return (T.DecimalType(precision, scale), Decimal) if precision <= 38 else (T.StringType(), str)
    if base == "date":
        return T.DateType(), dt.date.fromisoformat
    if base == "datetime":
        return T.TimestampNTZType(), dt.datetime.fromisoformat
    if base == "timestamp":
        return T.TimestampType(), lambda text: dt.datetime.fromisoformat(text).replace(tzinfo=dt.timezone.utc)
    if "binary" in base or "blob" in base:
        return T.BinaryType(), bytes.fromhex
    return T.StringType(), str  # text, TIME, ENUM, SET, JSON


def _columns(case: dict) -> list[tuple[str, str, T.DataType, bool]]:
    """(name, MySQL type with its DEFAULT clause, Spark type, nullable) of a table's columns; NOT NULL goes to the
    Spark field, the rest to ``column-types`` as the user writes it."""
    out = []
    for name, declared in case["columns"]:
        not_null = " NOT NULL" in declared.upper()
        mysql_type = re.sub(r" NOT NULL\b", "", declared, flags=re.IGNORECASE)
        out.append((name, mysql_type, spark_type(mysql_type)[0], not not_null and name != case.get("primary_key")))
    return out


def input_schema(case: dict) -> T.StructType:
    """The sink's input for a table: the metadata columns, the table's columns, and ``_before``; a table without a
    primary key also ``_tidb_rowid``."""
    columns = [(name, spark, nullable) for name, _, spark, nullable in _columns(case)]
    row_id = [] if "primary_key" in case else [("_tidb_rowid", T.LongType())]
    return schema(("_op", T.StringType()), ("_commit_ts", T.LongType()), ("_start_ts", T.LongType()), *row_id,
                  *columns, ("_before", schema(*columns)))


def events(case: dict) -> list[dict]:
    """The generator's events of a table as the sink's input rows, in the same order and commit and start ts (the
    ts before the commit's); in a table without a primary key, each row's ``_tidb_rowid`` as TiDB allocated it (one
    per row inserted, the update's and the delete's rows inserted after the others)."""
    readers = [(name, spark_type(mysql_type)[1]) for name, mysql_type, _, _ in _columns(case)]

    def values(row: list) -> dict:
        return {name: None if text is None else read(text) for (name, read), (_, text) in zip(readers, row)}

    rows = [{"_op": "INSERT", **values(row), "_before": None} for row in case["inserts"]]
    before, after = case["update"]
    rows.append({"_op": "UPDATE", **values(after), "_before": values(before)})
    rows.append({"_op": "DELETE", **values(case["delete"]), "_before": None})
    rows = [{**row, "_commit_ts": FIRST_COMMIT_TS + i, "_start_ts": FIRST_COMMIT_TS + i - 1}
            for i, row in enumerate(rows)]
    return rows if "primary_key" in case else [{**row, "_tidb_rowid": i + 1} for i, row in enumerate(rows)]


def options(config: str, case: dict, table: dict, registry_url: str | None) -> dict:
    """The sink's options for a table of a configuration; ``registry_url``: the Confluent registry, or for a Glue
    configuration the Glue API (the changefeed file names the registry and its region)."""
    query = golden(config)["uri"].replace(REGISTRY_PLACEHOLDER, registry_url or "")
    opts = dict(parse_qsl(query))
    if registry_of(config) == "glue" and registry_url:
        opts.update({"glue-schema-registry-endpoint": registry_url, "glue-schema-registry-access-key": ACCESS_KEY,
                     "glue-schema-registry-secret-access-key": SECRET_ACCESS_KEY})
    if opts.get("protocol") == "open-protocol":
        opts.pop("max-batch-size")  # the test encodes one row at a time
    opts.update({"topic": "tidb_{schema}_{table}", "database": "test", "table": f"t_{case['name']}",
                 "column-types": ", ".join(f"{name} {mysql_type}" for name, mysql_type, _, _ in _columns(case)),
                 "time-zone": "UTC"})
    for key in ("primary_key", "unique_keys"):
        if key in case:
            opts[key.replace("_", "-")] = case[key]
    if opts["protocol"] == "simple" or opts.get("output-row-key"):
        opts["table-id"] = str(table["table_id"])
    if opts["protocol"] == "simple":
        opts["schema-version"] = str(table["schema_version"])
    if "changefeed" in golden(config):  # settings only a changefeed file has, as the file gives them
        opts["changefeed-config"] = changefeed_file(config)
    return opts


@cache
def changefeed_file(config: str) -> str:
    """The configuration's changefeed TOML, in a file of its own for the test session."""
    path = Path(tempfile.mkdtemp(prefix="ticdc-goldens-")) / f"{config}.toml"
    path.write_text(golden(config)["changefeed"], encoding="utf-8")
    return str(path)


def message_bytes(message: dict, part: str) -> bytes | None:
    text = message.get(part)
    if not text:
        return None
    return base64.b64decode(text) if message["encoding"] == "base64" else text.encode()


def build_ms(config: str, value: bytes, table: dict) -> int:
    """The build time TiCDC stamped on a message (Canal's ``ts``, Debezium's ``ts_ms``, Simple's ``buildTs``)."""
    wire = wire_format(config)
    if wire == "simple-avro":
        return fastavro.schemaless_reader(io.BytesIO(value), SIMPLE_AVRO_SCHEMA, None)["payload"]["buildTs"]
    if wire == "debezium-avro":
        [value_schema] = [s for subject, s in table["registered"].items() if subject.endswith("-value")]
        return fastavro.schemaless_reader(io.BytesIO(value[HEADER[registry_of(config)][1]:]),
                                          fastavro.parse_schema(json.loads(value_schema)), None)["ts_ms"]
    if wire in ("avro", "open-protocol"):
        return 0
    doc = json.loads(value)
    if wire == "canal-json":
        return doc["ts"]
    if wire == "debezium":
        return doc.get("payload", doc)["ts_ms"]
    return doc["buildTs"]


def registry_of(config: str) -> str | None:
    """The registry a configuration's schemas go to: "confluent" (its URI's schema-registry), "glue" (its changefeed
    file's glue-schema-registry-config), or None."""
    if REGISTRY_PLACEHOLDER in golden(config)["uri"]:
        return "confluent"
    return "glue" if "glue-schema-registry-config" in golden(config).get("changefeed", "") else None


# A registry's header: how it starts, and its length.
HEADER = {"confluent": (b"\x00", 5), "glue": (b"\x03\x00", 18)}


def wire_format(config: str) -> str:
    """The configuration's protocol, Simple's Avro as ``simple-avro``."""
    uri = dict(parse_qsl(golden(config)["uri"]))
    return "simple-avro" if uri.get("encoding-format") == "avro" else uri["protocol"]


def encoded(config: str, case: dict, registry_url: str | None) -> list[tuple[bytes | None, bytes] | Exception]:
    """Each event of the type's table through the sink alone, at the build time of TiCDC's message: its key and
    value, or the error of a row the sink refuses."""
    table = golden(config)["tables"][case["name"]]
    topic, clock_ms, encoder, out = f"tidb_test_t_{case['name']}", 0, None, []
    for row, message in zip(events(case), table["messages"]):
        config_, layout, changes, _ = build(input_schema(case), [row], **options(config, case, table, registry_url))
        if "error" not in message:
            clock_ms = build_ms(config, message_bytes(message, "value"), table)
        encoder = encoder or encoder_for(config_, layout.table, clock=lambda: clock_ms)  # one per table, as a task's
        try:
            messages = encoder.encode_rows(changes, Routing([topic], np.zeros(1, np.int32), np.zeros(1, np.int32),
                                                            {topic: 1}))
        except Exception as refused:  # noqa: BLE001 - compared with TiCDC's refusal by the test
            out.append(refused)
            continue
        keys = messages.keys.to_pylist() if messages.keys is not None else [None]
        [(key, value)] = zip(keys, messages.values.to_pylist())
        out.append((as_bytes(key), as_bytes(value)))
    return out


def as_bytes(data: str | bytes | None) -> bytes | None:
    return data.encode() if isinstance(data, str) else data


def comparable(config: str, data: bytes | None) -> bytes | None:
    """Avro's header carries the registry's schema id (Confluent's) or version UUID (Glue's): compare what follows
    it.  A delete under avro-enable-watermark (byte 3 and its commit ts, 9 bytes) has none."""
    if data is None or registry_of(config) is None:
        return data
    if dict(parse_qsl(golden(config)["uri"])).get("avro-enable-watermark") == "true" and len(data) == 9:
        return data
    start, size = HEADER[registry_of(config)]
    assert data.startswith(start), data
    return data[size:]


def keyed_by_unique_key(config: str, case: dict) -> bool:
    """The one place the sink departs from TiCDC b813e76 on purpose (docs/protocols/avro.md): an Avro table whose
    only key is a NOT NULL unique key.  The protocol document keys Avro by "primary key columns or unique index
    columns", as TiCDC's older code base does; b813e76 keys by primary-key columns alone, so it sends such a
    table's rows without a key and its deletes as empty messages.  The sink sends the key, and a delete as its
    key with a null value (a tombstone), which TiCDC's decoder reads as a delete."""
    return wire_format(config) == "avro" and "primary_key" not in case and "unique_keys" in case


@pytest.mark.parametrize("name", list(TABLES))
@pytest.mark.parametrize("config", [c for c in CONFIGS if registry_of(c) != "glue"])
def test_every_event_is_ticdcs_bytes(config, name, request):
    case, table = TABLES[name], golden(config)["tables"][name]
    uses_registry = registry_of(config) == "confluent"
    registry_url = request.getfixturevalue("schema_registry").url if uses_registry else None
    sink = encoded(config, case, registry_url)
    check_messages(config, case, table, sink)
    if registry_url:  # the schemas the sink registered, under TiCDC's subjects, in TiCDC's text
        client = SchemaRegistryClient({"url": registry_url})
        registered = {subject: client.get_latest_version(subject).schema.schema_str
                      for subject in client.get_subjects()}
        if keyed_by_unique_key(config, case):
            assert registered.pop(f"tidb_test_t_{name}-key")  # the key's schema, which TiCDC does not register
        assert registered == table["registered"]


def check_messages(config: str, case: dict, table: dict, sink: list) -> None:
    """The sink's keys and values are TiCDC's, after the registry's header; its refusals TiCDC's."""
    for message, encoding in zip(table["messages"], sink):
        if "error" in message:  # TiCDC refuses the row: so must the sink, naming the value's column
            assert isinstance(encoding, Exception) and "'v'" in str(encoding), (message, encoding)
            continue
        assert not isinstance(encoding, Exception), (message["event"], encoding)
        key, value = encoding
        if keyed_by_unique_key(config, case):
            assert message_bytes(message, "key") is None and key is not None, message["event"]
        else:
            assert (message["event"], comparable(config, key)) == \
                (message["event"], comparable(config, message_bytes(message, "key")))
        assert (message["event"], comparable(config, value)) == \
            (message["event"], comparable(config, message_bytes(message, "value")))
    assert len(sink) == len(table["messages"])


@pytest.mark.parametrize("name", list(TABLES))
@pytest.mark.parametrize("config", [c for c in CONFIGS if registry_of(c) == "glue"])
def test_every_event_is_ticdcs_bytes_through_glue(config, name, glue_api, monkeypatch):
    """The same through AWS Glue's registry (moto's), named by the changefeed file as TiCDC's was: the messages
    after Glue's header; the header of each, 3, 0 and the UUID of the schema version registered for it, in TiCDC's
    goldens and in the sink's; the schemas, under TiCDC's names, in TiCDC's text, data format and compatibility;
    and the requests, TiCDC's but its GetRegistry, which the sink makes once on the driver (``check_services``)."""
    import botocore.client

    case, table = TABLES[name], golden(config)["tables"][name]
    calls = []
    make_api_call = botocore.client.BaseClient._make_api_call

    def recorded(client, operation, params):
        calls.append(" ".join([operation, params.get("SchemaName") or params.get("SchemaId", {}).get("SchemaName", "")])
                     .strip())
        return make_api_call(client, operation, params)

    registry = glue_api.new_registry(re.search(r'registry-name = "(.+)"', golden(config)["changefeed"]).group(1))
    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", recorded)
    try:
        sink = encoded(config, case, glue_api.endpoint)
        schemas = registry.schemas()
    finally:
        glue_api.reset()
    check_messages(config, case, table, sink)
    ticdcs = dict(schemas)
    key_name = f"tidb_test_t_{name}-key"
    if keyed_by_unique_key(config, case):  # the key's schema, which TiCDC does not register
        assert ticdcs.pop(key_name)
        calls = [call for call in calls if not call.endswith(key_name)]
    assert {schema_name: schema.latest for schema_name, schema in ticdcs.items()} == table["registered"]
    assert {schema_name: (schema.data_format, schema.compatibility) for schema_name, schema in ticdcs.items()} == \
        {schema_name: (s["data_format"], s["compatibility"]) for schema_name, s in table["glue"]["schemas"].items()}
    assert calls == [call for call in table["glue"]["calls"] if call != "GetRegistry"]
    for message, encoding in zip(table["messages"], sink):
        for index, part in enumerate(("key", "value")):
            schema_name = f"tidb_test_t_{name}-{part}"
            ticdc, ours = message_bytes(message, part), None if isinstance(encoding, Exception) else encoding[index]
            if ticdc:
                assert glue_version(ticdc) in table["glue"]["schemas"][schema_name]["version_ids"]
            if ours:
                assert glue_version(ours) in schemas[schema_name].versions


def glue_version(data: bytes) -> str:
    """The schema version a message in Glue's wire format names."""
    assert data[:2] == b"\x03\x00", data
    return str(uuid.UUID(bytes=data[2:18]))


@pytest.mark.parametrize("name", list(TABLES))
@pytest.mark.parametrize("config", [c for c in CONFIGS if golden(c)["uri"].startswith("protocol=simple")])
def test_simple_bootstraps_are_ticdcs_bytes(config, name):
    """The BOOTSTRAP's tableSchema: each type's name, charset, length, scale or fsp, members and flags."""
    case, table = TABLES[name], golden(config)["tables"][name]
    config_, layout, _, _ = build(input_schema(case), events(case)[:1], **options(config, case, table, UNUSED_REGISTRY))
    expected = message_bytes(table["bootstrap"], "value")
    clock_ms = build_ms(config, expected, table)
    bootstrap = encoder_for(config_, layout.table, clock=lambda: clock_ms).encode_bootstrap("test", f"t_{name}")
    assert as_bytes(bootstrap) == expected


@pytest.mark.parametrize("name", list(TABLES))
@pytest.mark.parametrize("config", [c for c in CONFIGS if golden(c)["tables"][next(iter(TABLES))].get("ddl")])
def test_create_table_ddls_are_ticdcs_bytes(config, name):
    """Each table's CREATE TABLE as TiDB handed it to TiCDC, committed just before its rows.  Under table routing
    TiCDC rewrites the statement through TiDB's parser; the sink is given it as rewritten (docs/options.md) and
    routes the table's names, as its driver does."""
    case, table = TABLES[name], golden(config)["tables"][name]
    config_, layout, _, _ = build(input_schema(case), events(case)[:1], **options(config, case, table, UNUSED_REGISTRY))
    expected = table["ddl"]
    clock_ms = build_ms(config, message_bytes(expected, "value"), table)
    encoder = encoder_for(config_, layout.table, clock=lambda: clock_ms)
    query = table.get("routed_query", table["query"])
    ddl = DDLChange("test", f"t_{name}", query, FIRST_COMMIT_TS - 1, classify(query))
    messages = encoder.encode_ddl(encoder.route.ddl(ddl), f"tidb_test_t_{name}")
    keys = messages.keys.to_pylist() if messages.keys is not None else [None] * len(messages)
    assert {(as_bytes(key), as_bytes(value)) for key, value in zip(keys, messages.values.to_pylist())} == \
        {(message_bytes(expected, "key"), message_bytes(expected, "value"))}


@pytest.mark.parametrize("config", [c for c in CONFIGS if golden(c)["watermark"]])
def test_watermarks_are_ticdcs_bytes(config):
    """The resolved-ts event at the ts after every table's rows, to the watermark's topic."""
    case = next(iter(TABLES.values()))
    table, expected = golden(config)["tables"][case["name"]], golden(config)["watermark"]
    config_, layout, _, _ = build(input_schema(case), events(case)[:1], **options(config, case, table, UNUSED_REGISTRY))
    clock_ms = build_ms(config, message_bytes(expected, "value"), table)
    messages = encoder_for(config_, layout.table, clock=lambda: clock_ms).encode_watermark(
        FIRST_COMMIT_TS + 99, ["tidb_test_watermark"])
    keys = messages.keys.to_pylist() if messages.keys is not None else [None] * len(messages)
    assert {(as_bytes(key), as_bytes(value)) for key, value in zip(keys, messages.values.to_pylist())} == \
        {(message_bytes(expected, "key"), message_bytes(expected, "value"))}
