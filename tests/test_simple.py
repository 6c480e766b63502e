"""protocol=simple: TiCDC's Simple messages byte for byte (golden/simple/, the document's examples)."""

from __future__ import annotations

import base64
import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from changefeed import build, configured, schema
from pyspark.sql import types as T

from ticdc_sink.changes.dispatch import Routing
from ticdc_sink.codec import decoder_for
from ticdc_sink.codec.simple.avro_wire import SimpleAvro
from ticdc_sink.codec.simple.encoder import SimpleEncoder
from ticdc_sink.codec.simple.table_schema import simple_table, table_id

GOLDEN = Path(__file__).resolve().parent / "golden" / "simple"
# The document's table: simple.user, tableID 148, at schema version 447984074911121426.
USER = schema(("_op", T.StringType()), ("_commit_ts", T.LongType()), ("id", T.IntegerType(), False),
              ("name", T.StringType()), ("age", T.IntegerType()), ("score", T.FloatType()),
              ("_before", T.StructType([T.StructField("id", T.IntegerType(), False),
                                        T.StructField("name", T.StringType()), T.StructField("age", T.IntegerType()),
                                        T.StructField("score", T.FloatType())])))
USER_OPTIONS = {"protocol": "simple", "database": "simple", "table": "user", "primary_key": "id",
                "column_types": "id INT, name VARCHAR(255), age INT, score FLOAT"}
TABLE_ID, VERSION = 148, 447984074911121426
JOHN = {"id": 1, "name": "John Doe", "age": 25, "score": 90.5}


def golden(name: str) -> str:
    return (GOLDEN / f"{name}.json").read_text(encoding="utf-8")


def encoder(rows: list[dict], clock_ms: int = 0, **options):
    config, layout, changes, _ = build(USER, rows, **USER_OPTIONS)
    config = configured(config, protocol="simple", **{"table_id": TABLE_ID, "schema_version": VERSION,
                                                               **options})
    return SimpleEncoder(config, layout.table, clock=lambda: clock_ms), changes


def encode(rows: list[dict], clock_ms: int = 0, **options) -> list[str]:
    simple, changes = encoder(rows, clock_ms, **options)
    n = changes.num_rows
    messages = simple.encode_rows(changes, Routing(["t"], np.zeros(n, np.int32), np.zeros(n, np.int32), {"t": 1}))
    assert messages.keys is None  # TiCDC sends Simple messages without a key
    return messages.values.to_pylist()


# The document's DML examples: golden file, input row, buildTs.
DOCUMENT_ROWS = [
    ("dml-insert", {"_op": "INSERT", "_commit_ts": 447984084414103554, **JOHN}, 1708923662983),
    ("dml-update", {"_op": "UPDATE", "_commit_ts": 447984099186180098, **JOHN, "score": 95.0, "_before": JOHN},
     1708923719184),
    ("dml-delete", {"_op": "DELETE", "_commit_ts": 447984114259722243, **JOHN, "score": 95.0}, 1708923776484),
]


@pytest.mark.parametrize("name, row, clock_ms", DOCUMENT_ROWS)
def test_the_documents_row_events_are_ticdcs_bytes(name, row, clock_ms):
    assert encode([row], clock_ms) == [golden(name)]


def test_the_documents_watermark_goes_to_every_partition():
    simple, _ = encoder([])
    simple.clock = lambda: 1708923816911
    messages = simple.encode_watermark(447984124732375041, ["t"])
    assert messages.values.to_pylist() == [golden("watermark")] and messages.keys is None
    assert messages.partitions.tolist() == [-1]  # BROADCAST


def test_the_documents_table_schema_column_and_index():
    simple, _ = encoder([])
    text = simple.shape.json("simple", "user", TABLE_ID)
    assert text == golden("table-schema")
    assert golden("column") in text and golden("index") in text


def test_an_update_without_old_values_is_an_insert():
    no_old = schema(*[(f.name, f.dataType, f.nullable) for f in USER.fields if f.name != "_before"])
    config, layout, changes, _ = build(no_old, [{"_op": "UPDATE", "_commit_ts": 447984084414103554, **JOHN}],
                                       **USER_OPTIONS)
    config = configured(config, protocol="simple", table_id=TABLE_ID, schema_version=VERSION)
    [value] = SimpleEncoder(config, layout.table, clock=lambda: 1708923662983).encode_values(changes).to_pylist()
    assert value == golden("dml-insert")


def test_derived_ids_are_stable_positive_and_the_version_follows_the_shape():
    config, layout, _, _ = build(USER, [], **USER_OPTIONS)
    version = simple_table(layout.table, config).version
    assert version == simple_table(layout.table, config).version and 0 < version < 2**63
    wider = build(USER, [], **{**USER_OPTIONS, "column_types": "id BIGINT, name VARCHAR(255), age INT, score FLOAT"})
    assert simple_table(wider[1].table, wider[0]).version != version
    assert table_id("simple", "user", config) == table_id("simple", "user", config) > 0
    assert table_id("simple", "user", config) != table_id("simple", "new_user", config)
    assert table_id("simple", "user", configured(config, table_id=148)) == 148


def test_values_render_as_ticdcs_simple_encoder_renders_them():
    import datetime as dt
    from decimal import Decimal

    types = schema(("_op", T.StringType()), ("_commit_ts", T.LongType()), ("id", T.IntegerType(), False),
                   ("ts", T.TimestampType()), ("bin", T.BinaryType()), ("big", T.DecimalType(20, 0)),
                   ("b", T.LongType()), ("e", T.StringType()), ("s", T.StringType()), ("d", T.DecimalType(5, 2)),
                   ("day", T.DateType()), ("t", T.StringType()), ("j", T.StringType()), ("txt", T.StringType()),
                   ("nothing", T.StringType()))
    row = {"_op": "INSERT", "_commit_ts": 1, "id": 1, "ts": dt.datetime(2024, 2, 26, 0, 32, 23, 120000),
           "bin": b"\x00\x01\x02", "big": Decimal(2**64 - 1), "b": 683, "e": "b", "s": "a,c", "d": Decimal("90.5"),
           "day": dt.date(2024, 2, 26), "t": "-01:02:03.5", "j": '{"a":1}', "txt": "x<y&\b\f\u2028", "nothing": None}
    config, layout, changes, _ = build(types, [row], database="d", table="t", primary_key="id",
                                       time_zone="Asia/Shanghai",
                                       column_types="ts TIMESTAMP(3), bin VARBINARY(8), big BIGINT UNSIGNED, "
                                       "b BIT(10), e ENUM('a','b','c'), s SET('a','b','c'), d DECIMAL(5,2), "
                                       "t TIME(1), j JSON, txt TEXT")
    config = configured(config, protocol="simple")
    [value] = SimpleEncoder(config, layout.table, clock=lambda: 0).encode_values(changes).to_pylist()
    data = value[value.index('"data":') + 7:-1]
    assert data == ('{"b":"683","big":"18446744073709551615","bin":"AAEC","d":"90.50","day":"2024-02-26",'
                    '"e":"2","id":"1","j":"{\\"a\\": 1}","nothing":null,"s":"5","t":"-01:02:03.5",'
                    '"ts":{"location":"Asia/Shanghai","value":"2024-02-26 08:32:23.120"},'
                    '"txt":"x\\u003cy\\u0026\\b\\f\\u2028"}')


def test_the_documents_bootstrap_after_a_rename():
    simple, _ = encoder([], 1708924603278)
    assert simple.encode_bootstrap("simple", "new_user") == golden("bootstrap")


ADD_CREATE_TIME = "ALTER TABLE `user` ADD COLUMN `createTime` TIMESTAMP"


def user_after_add_column():
    """The document's table after its ALTER: createTime TIMESTAMP added, at version 447987408682614791."""
    with_time = schema(*[(f.name, f.dataType, f.nullable) for f in USER.fields if f.name != "_before"],
                       ("createTime", T.TimestampType()))
    config, layout, _, _ = build(with_time, [], **{**USER_OPTIONS, "column_types": USER_OPTIONS["column_types"]
                                                   + ", createTime TIMESTAMP"})
    config = configured(config, protocol="simple", table_id=TABLE_ID, schema_version=447987408682614791)
    return SimpleEncoder(config, layout.table, clock=lambda: 1708936343598), layout.table


def test_the_documents_add_column_ddl_with_the_schema_before_it():
    from ticdc_sink.ddl.statements import DDLChange, classify

    simple, table = user_after_add_column()
    ddl = DDLChange("simple", "user", ADD_CREATE_TIME, 447987408682614795, classify(ADD_CREATE_TIME))
    messages = simple.encode_ddl(ddl, "t")
    assert messages.partitions.tolist() == [-1] and messages.keys is None  # every partition
    # The schema before is the table without the added column; its version is the one the sink derives for
    # that shape (the document's is TiDB's, 447984074911121426), the same the rows before the DDL carried.
    before = dataclasses.replace(table, columns=table.columns[:4])
    derived = simple_table(before, None).version
    expected = golden("ddl-alter-add-column").replace(f'"version":{VERSION}', f'"version":{derived}')
    assert messages.values.to_pylist() == [expected]
    rows_before = configured(simple.config, schema_version=0)
    assert derived == simple_table(before, rows_before).version


def test_ddl_schemas_by_kind_of_statement():
    from ticdc_sink.ddl.statements import DDLChange, classify

    simple, _ = user_after_add_column()

    def event(query, database="simple", table="user"):
        import json
        [value] = simple.encode_ddl(DDLChange(database, table, query, 1, classify(query)), "t").values.to_pylist()
        return json.loads(value)

    created = event("CREATE TABLE user (id INT PRIMARY KEY)")
    assert created["type"] == "CREATE" and "tableSchema" in created and "preTableSchema" not in created
    renamed = event("RENAME TABLE simple.old_user TO simple.user")
    assert renamed["type"] == "RENAME" and renamed["preTableSchema"]["table"] == "old_user"
    assert renamed["preTableSchema"]["version"] == renamed["tableSchema"]["version"]  # a rename keeps it
    assert event("TRUNCATE TABLE user")["preTableSchema"] == event("TRUNCATE TABLE user")["tableSchema"]
    assert "preTableSchema" not in event("ALTER TABLE user MODIFY COLUMN age BIGINT")  # unknown before
    assert event("ALTER TABLE user ADD INDEX idx_age (age)")["type"] == "CINDEX"
    database = event("CREATE DATABASE shop", "shop", "")
    assert database["type"] == "QUERY" and "tableSchema" not in database
    assert list(database) == ["version", "type", "sql", "commitTs", "buildTs"]


def test_the_documents_messages_decode_once_their_schema_arrived():
    """The document's consumer scenarios: rows wait for the DDL or BOOTSTRAP that brings their schema."""
    from ticdc_sink.codec.base import DDLEvent, RowEvent, WatermarkEvent
    from ticdc_sink.codec.simple.decoder import SimpleDecoder
    from ticdc_sink.table.mysql_types import MySQLType

    decoder = SimpleDecoder()
    # Joined in the middle: the INSERT and UPDATE come before any schema of user at their version.
    assert decoder.decode(None, golden("dml-insert").encode()) == []
    assert decoder.decode(None, golden("dml-update").encode()) == []
    assert decoder.waiting == 2
    [watermark] = decoder.decode(None, golden("watermark").encode())
    assert watermark == WatermarkEvent(447984124732375041)
    # The ALTER's preTableSchema is user at the rows' version: they come out after it, in arrival order.
    ddl, insert, update = decoder.decode(None, golden("ddl-alter-add-column").encode())
    assert ddl == DDLEvent("simple", "user", ADD_CREATE_TIME, "ALTER", 447987408682614795)
    int_11 = MySQLType("int", length=11)  # the types as the schema's dataType states them
    assert insert == RowEvent("INSERT", "simple", "user", 447984084414103554, JOHN, None, ["id"],
                              {"id": int_11, "name": MySQLType("varchar", length=255), "age": int_11,
                               "score": MySQLType("float", length=12)})
    assert (update.type, update.columns["score"], update.old["score"]) == ("UPDATE", 95.0, 90.5)
    [delete] = decoder.decode(None, golden("dml-delete").encode())  # known from now on
    assert (delete.type, delete.columns, delete.old) == ("DELETE", {**JOHN, "score": 95.0}, None)
    # A BOOTSTRAP is a DDL event without a query, and brings its table's schema too.
    renamed = json.loads(golden("dml-insert").replace('"table":"user"', '"table":"new_user"'))
    assert decoder.decode(None, json.dumps(renamed).encode()) == []
    bootstrap, row = decoder.decode(None, golden("bootstrap").encode())
    assert bootstrap == DDLEvent("simple", "new_user", "", "BOOTSTRAP", 0) and row.table == "new_user"
    assert decoder.waiting == 0


@pytest.mark.parametrize("encoding", ["json", "avro"])
def test_a_row_over_max_message_bytes_becomes_ticdcs_handle_key_only_message(encoding):
    row = {"_op": "INSERT", "_commit_ts": 447984084414103554, **JOHN}
    options = dict(large_message_handle_option="handle-key-only", encoding_format=encoding)
    [whole] = encode([row], 1708923662983, **options)
    [small] = encode([row], 1708923662983, max_message_bytes=len(whole) + 35, **options)
    if encoding == "json":
        assert small == golden("dml-insert").replace('"data":{"age":"25","id":"1","name":"John Doe","score":"90.5"}',
                                                      '"handleKeyOnly":true,"data":{"id":"1"}')
    simple, _ = encoder([row], encoding_format=encoding)
    decoder = decoder_for("simple")
    decoder.decode(None, to_bytes(simple.encode_bootstrap("simple", "user")))
    [event] = decoder.decode(None, to_bytes(small))
    assert event.handle_key_only and event.columns == {"id": 1} and event.type == "INSERT"


@pytest.mark.parametrize("encoding", ["json", "avro"])
def test_with_claim_check_a_row_over_max_message_bytes_points_at_its_whole_message(encoding, tmp_path):
    row = {"_op": "INSERT", "_commit_ts": 447984084414103554, **JOHN, "name": "John Doe " * 20}
    options = dict(large_message_handle_option="claim-check", encoding_format=encoding,
                   claim_check_storage_uri=f"file://{tmp_path}")
    [whole] = encode([row], 1708923662983, **options)
    [small] = encode([row], 1708923662983, max_message_bytes=len(to_bytes(whole)) + 35, **options)
    [kept] = tmp_path.iterdir()
    location = f"file://{tmp_path}/{kept.name}"
    assert json.loads(kept.read_bytes()) == {"key": None, "value": base64.b64encode(to_bytes(whole)).decode()}
    simple, _ = encoder([row], encoding_format=encoding)
    decoder = decoder_for("simple")
    decoder.decode(None, to_bytes(simple.encode_bootstrap("simple", "user")))
    if encoding == "json":  # TiCDC sets both: where the whole message is, and that this one has the key only
        assert small == whole.replace('"data":{"age":"25","id":"1","name":"' + "John Doe " * 20 + '","score":"90.5"}',
                                      f'"claimCheckLocation":"{location}","handleKeyOnly":true,"data":{{"id":"1"}}')
    else:
        document = SimpleAvro.read(small)
        assert (document["claimCheckLocation"], document["handleKeyOnly"]) == (location, True)
        assert document["data"].keys() == {"id"}
    [event] = decoder.decode(None, to_bytes(small))
    assert not event.handle_key_only and event.columns == {**JOHN, "name": "John Doe " * 20}


def to_bytes(value: str | bytes) -> bytes:
    return value.encode() if isinstance(value, str) else value
