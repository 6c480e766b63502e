"""protocol=debezium: TiCDC's DML, DDL and WATERMARK messages byte for byte (golden/debezium/).

The encoding clock is frozen at the goldens' placeholder, so ``payload.ts_ms``
is compared too.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path

import numpy as np
import pytest
from changefeed import build, configured, schema
from pyspark.sql import types as T
from test_debezium_types import ENCODED, spark_input

from ticdc_sink.changes.dispatch import Routing
from ticdc_sink.codec import decoder_for
from ticdc_sink.codec.debezium.encoder import DebeziumEncoder
from ticdc_sink.config.reader import parse_read_options
from ticdc_sink.ddl.statements import DDLChange, classify
from ticdc_sink.errors import ContractError
from ticdc_sink.kafka.messages import BROADCAST
from ticdc_sink.table.type_grammar import parse_mysql_type

GOLDEN = Path(__file__).resolve().parent / "golden" / "debezium"
CLOCK_MS = 1701326309000  # the goldens' payload.ts_ms
TABLE1 = schema(("_op", T.StringType()), ("_commit_ts", T.LongType()), ("tiny", T.ByteType(), False),
                ("_before", T.StructType([T.StructField("tiny", T.ByteType(), False)])))
TABLE1_NO_OLD = schema(("_op", T.StringType()), ("_commit_ts", T.LongType()), ("tiny", T.ByteType(), False))


def golden(name: str) -> str:
    return (GOLDEN / name).read_text(encoding="utf-8")


def encoder(spark_schema, rows: list[dict], **options):
    config, layout, changes, _ = build(spark_schema, rows, database="test", table="table1", primary_key="tiny",
                                       column_types="tiny TINYINT")
    config = configured(config, protocol="debezium", cluster_id="test_cluster",
                                 **{k: v for k, v in options.items()})
    return DebeziumEncoder(config, layout.table, clock=lambda: CLOCK_MS), changes


def encode(spark_schema, rows: list[dict], **options) -> list[tuple[str, str]]:
    debezium, changes = encoder(spark_schema, rows, **options)
    n = changes.num_rows
    messages = debezium.encode_rows(changes, Routing(["t"], np.zeros(n, np.int32), np.zeros(n, np.int32), {"t": 1}))
    return list(zip(messages.keys.to_pylist(), messages.values.to_pylist()))


UPDATE = {"_op": "UPDATE", "_commit_ts": 1, "tiny": 1, "_before": {"tiny": 2}}


@pytest.mark.parametrize("name, options", [
    ("dml-update", {}),
    ("dml-update-disable-schema", {"debezium_disable_schema": True}),
    ("dml-update-tidb-extension", {"enable_tidb_extension": True}),
])
def test_the_documents_update_is_ticdcs_bytes(name, options):
    [(key, value)] = encode(TABLE1, [UPDATE], **options)
    assert key == golden(f"{name}.key.json")
    assert value == golden(f"{name}.value.json")


def test_an_update_without_old_values_has_no_before():
    [(key, value)] = encode(TABLE1_NO_OLD, [{k: v for k, v in UPDATE.items() if k != "_before"}])
    assert (key, value) == (golden("dml-update-no-old-value.key.json"), golden("dml-update-no-old-value.value.json"))


def test_insert_and_delete_are_ticdcs_bytes():
    rows = [{"_op": "INSERT", "_commit_ts": 429918007904436226, "tiny": 1, "_before": None},
            {"_op": "DELETE", "_commit_ts": 429918008166580225, "tiny": 2, "_before": None}]
    (insert_key, insert_value), (delete_key, delete_value) = encode(TABLE1, rows)
    assert (insert_key, insert_value) == (golden("dml-insert.key.json"), golden("dml-insert.value.json"))
    assert (delete_key, delete_value) == (golden("dml-delete.key.json"), golden("dml-delete.value.json"))


def test_the_watermark_is_ticdcs_bytes_and_needs_the_extension():
    debezium, _ = encoder(TABLE1, [UPDATE], enable_tidb_extension=True)
    messages = debezium.encode_watermark(3, ["t1", "t2"])
    assert messages.keys.to_pylist() == [golden("watermark.key.json")] * 2
    assert messages.values.to_pylist() == [golden("watermark.value.json")] * 2
    assert messages.topics == ["t1", "t2"] and messages.partitions.tolist() == [-1, -1]  # every partition
    plain, _ = encoder(TABLE1, [UPDATE])
    assert plain.encode_watermark(3, ["t1"]) is None


def test_each_table_of_a_batch_gets_its_own_schema_names():
    table = schema(("_op", T.StringType()), ("_commit_ts", T.LongType()), ("_schema", T.StringType()),
                   ("_table", T.StringType()), ("id", T.IntegerType(), False))
    rows = [{"_op": "INSERT", "_commit_ts": 1, "_schema": db, "_table": t, "id": i}
            for i, (db, t) in enumerate([("a", "x"), ("b", "y.z"), ("a", "x")])]
    config, layout, changes, _ = build(table, rows, primary_key="id")
    debezium = DebeziumEncoder(configured(config, protocol="debezium", cluster_id="c-1"), layout.table,
                               clock=lambda: CLOCK_MS)
    messages = debezium.encode_rows(changes, Routing(["t"], np.zeros(3, np.int32), np.zeros(3, np.int32), {"t": 1}))
    names = [json.loads(v)["schema"]["name"] for v in messages.values.to_pylist()]
    assert names == ["c_1.a.x.Envelope", "c_1.b.y.z.Envelope", "c_1.a.x.Envelope"]
    assert [json.loads(k)["schema"]["name"] for k in messages.keys.to_pylist()] == [
        "c_1.a.x.Key", "c_1.b.y.z.Key", "c_1.a.x.Key"]


# -- DDL events

DDL_COLUMNS = json.loads((GOLDEN / "ddl-columns.json").read_text())
ID_TABLE = schema(("_op", T.StringType()), ("id", T.IntegerType(), False))


def ddl_encoder(spark_schema, column_types: str, **options) -> DebeziumEncoder:
    config, layout, _, _ = build(spark_schema, [], database="test", table="table1", primary_key="id",
                                 column_types=column_types)
    config = configured(config, protocol="debezium", cluster_id="test_cluster", **options)
    return DebeziumEncoder(config, layout.table, clock=lambda: CLOCK_MS)


def encode_ddl(debezium: DebeziumEncoder, table: str, statement: str, commit_ts: int, **change) -> tuple[str, str]:
    messages = debezium.encode_ddl(DDLChange("test", table, statement, commit_ts, classify(statement), **change), "t")
    assert messages.topics == ["t"] and messages.partitions.tolist() == [BROADCAST]  # every partition
    [key], [value] = messages.keys.to_pylist(), messages.values.to_pylist()
    return key, value


@pytest.mark.parametrize("name, table, statement, commit_ts", [
    ("ddl-rename-table", "table2", "RENAME TABLE test.table1 to test.table2", 1),
    ("ddl-create-table", "table1", "CREATE TABLE test.table1(id int(10) primary key)", 429918006804480000),
    ("ddl-drop-table", "table2", "DROP TABLE test.table2", 429918010736640000),
])
def test_the_documents_ddl_events_are_ticdcs_bytes(name, table, statement, commit_ts):
    key, value = encode_ddl(ddl_encoder(ID_TABLE, "id INT(10)"), table, statement, commit_ts)
    assert (key, value) == (golden(f"{name}.key.json"), golden(f"{name}.value.json"))


@pytest.mark.parametrize("name, options", [("ddl-alter-table-add-column", {}),
                                           ("ddl-alter-table-add-column-tidb-extension",
                                            {"enable_tidb_extension": True})])
def test_add_column_describes_the_whole_table_after_it(name, options):
    table = schema(("_op", T.StringType()), ("id", T.IntegerType(), False), ("name", T.StringType()))
    debezium = ddl_encoder(table, "id INT(10), name VARCHAR(32)", **options)
    key, value = encode_ddl(debezium, "table2", "ALTER TABLE test.table2 ADD COLUMN name VARCHAR(32)",
                            429918007328768001)
    assert (key, value) == (golden(f"{name}.key.json"), golden(f"{name}.value.json"))


def types_table_encoder() -> DebeziumEncoder:
    """The encoder of golden table test.types: id, then a column per values.json column."""
    spark_types = {c["column"]: spark_input(c)[0] for c in reversed(ENCODED)}  # each column's first case
    nullable = {c["column"]: c["spark_nullable"] for c in ENCODED}
    fields = [("id", T.IntegerType(), False)] + [
        (c["column"], spark_types[c["column"]], nullable[c["column"]]) for c in DDL_COLUMNS["columns"][1:]]
    column_types = ", ".join(f'{c["column"]} {c["mysql_type"].removesuffix(" NOT NULL")}'
                             for c in DDL_COLUMNS["columns"][1:])
    return ddl_encoder(schema(("_op", T.StringType()), *fields), column_types)


def test_a_create_table_with_every_type_is_ticdcs_bytes():
    key, value = encode_ddl(types_table_encoder(), "types", DDL_COLUMNS["table_statement"], 429918007066624000)
    assert (key, value) == (golden("ddl-create-table-types.key.json"), golden("ddl-create-table-types.value.json"))


@pytest.mark.parametrize("entry", DDL_COLUMNS["columns"], ids=[c["column"] for c in DDL_COLUMNS["columns"]])
def test_each_columns_metadata_in_a_ddl_that_does_not_define_it(entry):
    _, value = encode_ddl(types_table_encoder(), "types", "ALTER TABLE test.types COMMENT 'x'", 1)
    columns = json.loads(value)["payload"]["tableChanges"][0]["table"]["columns"]
    [column] = [c for c in columns if c["name"] == entry["column"]]
    assert json.dumps(column, separators=(",", ":"), ensure_ascii=False) == entry["column_json"]
    assert column["length"] == entry["length"] and column["position"] == entry["position"]


def test_a_statement_that_defines_a_temporal_column_without_precision_gives_no_length():
    debezium = types_table_encoder()
    _, value = encode_ddl(debezium, "types", "ALTER TABLE test.types MODIFY COLUMN IF EXISTS c_datetime DATETIME "
                                             "COMMENT 'it\\'s (x', CHANGE c_year c_year YEAR, "
                                             "ADD COLUMN (c_time TIME, c_time2 TIME(2))", 1)
    columns = {c["name"]: c for c in json.loads(value)["payload"]["tableChanges"][0]["table"]["columns"]}
    assert [columns[n]["length"] for n in ("c_datetime", "c_year", "c_time", "c_time2", "c_timestamp")] == [
        None, None, None, 2, 0]  # c_timestamp is not defined by the statement: its stored fsp


@pytest.mark.parametrize("statement, table, change_type, table_id", [
    ("ALTER TABLE test.t ADD INDEX i (a)", "t", "ALTER", '"test"."t"'),
    ("CREATE INDEX i ON t (a)", "t", "ALTER", '"test"."t"'),
    ("DROP INDEX i ON t", "t", "DROP", '"test"."t"'),
    ("ALTER TABLE `old` RENAME TO test.t", "t", "ALTER", '"test"."old","test"."t"'),
    ("RENAME TABLE a TO b, x.c TO t", "t", "ALTER", '"x"."c","test"."t"'),
    ("ALTER TABLE pt EXCHANGE PARTITION p0 WITH TABLE t", "t", "ALTER", '"test"."pt"'),
    ("ALTER TABLE db.old RENAME TO t", "t", "ALTER", '"db"."old","test"."t"'),
    ("ALTER TABLE db.`t` ADD COLUMN c DATETIME", "t", "ALTER", '"test"."t"'),
])
def test_table_changes_type_and_id_follow_the_action(statement, table, change_type, table_id):
    _, value = encode_ddl(ddl_encoder(ID_TABLE, "id INT"), table, statement, 1)
    [change] = json.loads(value)["payload"]["tableChanges"]
    assert (change["type"], change["id"], change["table"]["primaryKeyColumnNames"]) == (change_type, table_id, ["id"])


@pytest.mark.parametrize("statement, table", [("TRUNCATE TABLE t", "t"), ("CREATE DATABASE test", ""),
                                              ("DROP DATABASE test", "")])
def test_database_ddl_and_truncate_have_no_table_changes(statement, table):
    key, value = encode_ddl(ddl_encoder(ID_TABLE, "id INT"), table, statement, 1)
    payload = json.loads(value)["payload"]
    assert (payload["tableChanges"], payload["ddl"], json.loads(key)["payload"]) == (
        [], statement, {"databaseName": "test"})


def test_an_action_ticdc_sends_no_event_for_is_skipped_with_one_warning(caplog):
    debezium = ddl_encoder(ID_TABLE, "id INT")
    statement = "ALTER TABLE t ADD CONSTRAINT fk FOREIGN KEY (id) REFERENCES u (id)"
    ddl = DDLChange("test", "t", statement, 1, classify(statement))
    with caplog.at_level("WARNING"):
        assert debezium.encode_ddl(ddl, "t") is None and debezium.encode_ddl(ddl, "t") is None
    assert len(caplog.records) == 1 and "add foreign key" in caplog.text and "_ddl_type" in caplog.text
    forced = debezium.encode_ddl(dataclasses.replace(ddl, type_override="alter"), "t")
    assert json.loads(forced.values.to_pylist()[0])["payload"]["tableChanges"][0]["type"] == "ALTER"


def test_bad_ddl_input_is_refused_naming_it():
    debezium = ddl_encoder(ID_TABLE, "id INT")
    with pytest.raises(ContractError, match="'_ddl_type'.*'bogus'.*CREATE, ALTER, DROP"):
        debezium.check_ddl(DDLChange("test", "t", "ALTER TABLE t ADD c INT", 1, "add column", type_override="bogus"))
    with pytest.raises(ContractError, match="'_ddl'.*renames no table"):
        encode_ddl(debezium, "t", "RENAME TABLE a TO b", 1)
    control_only = DebeziumEncoder(debezium.config, None, clock=lambda: CLOCK_MS)
    with pytest.raises(ContractError, match="emit_ddl"):
        control_only.encode_ddl(DDLChange("test", "t", "ALTER TABLE t ADD c INT", 1, "add column"), "t")
    dropped = control_only.encode_ddl(DDLChange("test", "t", "DROP TABLE t", 1, "drop table"), "t")
    assert json.loads(dropped.values.to_pylist()[0])["payload"]["tableChanges"][0]["table"] is None


def test_ddl_without_schemas():
    key, value = encode_ddl(ddl_encoder(ID_TABLE, "id INT", debezium_disable_schema=True), "t", "DROP TABLE t", 1)
    assert key == '{"payload":{"databaseName":"test"}}'
    assert list(json.loads(value)) == ["payload"]


# -- decoding

def decoded(name: str):
    from ticdc_sink.codec.debezium.decoder import DebeziumDecoder

    return DebeziumDecoder().decode(golden(f"{name}.key.json").encode(), golden(f"{name}.value.json").encode())


@pytest.mark.parametrize("name", ["dml-update", "dml-update-disable-schema", "dml-update-tidb-extension"])
def test_the_documents_update_decodes_with_or_without_schemas(name):
    [event] = decoded(name)
    assert (event.type, event.database, event.table, event.commit_ts) == ("UPDATE", "test", "table1", 1)
    assert (event.columns, event.old, event.primary_keys) == ({"tiny": 1}, {"tiny": 2}, ["tiny"])
    # The extension's tidb_type names the column's type; without it the Connect type (int16) tells less.
    kinds = {"dml-update": {"tiny": "smallint"}, "dml-update-disable-schema": {},
             "dml-update-tidb-extension": {"tiny": "tinyint"}}[name]
    assert {column: t.kind for column, t in event.column_types.items()} == kinds


def test_insert_delete_and_update_without_old_values_decode():
    [insert], [delete], [update] = decoded("dml-insert"), decoded("dml-delete"), decoded("dml-update-no-old-value")
    assert (insert.type, insert.columns, insert.old, insert.commit_ts) == ("INSERT", {"tiny": 1}, None,
                                                                          429918007904436226)
    assert (delete.type, delete.columns, delete.old) == ("DELETE", {"tiny": 2}, None)
    assert (update.type, update.columns, update.old) == ("UPDATE", {"tiny": 1}, None)


def test_ddl_and_watermark_decode():
    from ticdc_sink.codec.base import DDLEvent, WatermarkEvent

    assert decoded("ddl-rename-table") == [DDLEvent("test", "table2", "RENAME TABLE test.table1 to test.table2",
                                                    "ALTER", 1)]
    assert decoded("ddl-drop-table")[0].type == "DROP"
    assert decoded("watermark") == [WatermarkEvent(3)]


def row_without_schemas(database: str, table: str, after: dict) -> bytes:
    """An INSERT as Debezium writes it with debezium-disable-schema and without the TiDB extension."""
    return json.dumps({"payload": {"before": None, "after": after, "op": "c",
                                   "source": {"db": database, "table": table}}}).encode()


@pytest.mark.parametrize("database, table", [("shop", "orders"), (None, "orders"), (None, None)])
def test_the_types_a_read_declares_type_the_rows_of_its_table_alone(database, table):
    """A read's declared types (its schema's) type its own table's rows (a name it leaves None: any table's), and
    column-types every table's; another table's like-named column keeps its JSON value."""
    decoder = decoder_for(parse_read_options({"kafka.bootstrap.servers": "127.0.0.1:1", "topic": "t",
                                              "protocol": "debezium", "column-types": "n BIGINT UNSIGNED"}).sink)
    decoder.declare_types(database, table, {"b": parse_mysql_type("VARBINARY(8)")})
    read = {(d, t): decoder.decode(None, row_without_schemas(d, t, {"b": "AAE=", "n": -1}))[0].columns
            for d, t in [("shop", "orders"), ("shop", "other"), ("sales", "orders")]}
    declared = {(d, t) for d, t in read if database in (None, d) and table in (None, t)}
    assert read == {name: {"b": b"\x00\x01" if name in declared else "AAE=", "n": 2**64 - 1} for name in read}


def test_names_and_types_ticdc_writes_differently_from_the_obvious():
    """Schema names keep only letters, digits, _ and . of a table name; FLOAT(M,0) is a double; an ENUM
    member's doubled quote is written once in allowed (TiCDC's SanitizeTopicName, EscapeEnumAndSetOptions)."""
    table = schema(("_op", T.StringType()), ("_commit_ts", T.LongType()), ("id", T.IntegerType(), False),
                   ("f", T.FloatType()), ("e", T.StringType()))
    config, layout, changes, _ = build(table, [{"_op": "INSERT", "_commit_ts": 1, "id": 1, "f": 1.5, "e": "x'y"}],
                                       database="my-db", table="my-table.v2", primary_key="id",
                                       column_types="f FLOAT(7,0), e ENUM('x''y')")
    debezium = DebeziumEncoder(configured(config, protocol="debezium", cluster_id="c-1"), layout.table,
                               clock=lambda: CLOCK_MS)
    messages = debezium.encode_rows(changes, Routing(["t"], np.zeros(1, np.int32), np.zeros(1, np.int32), {"t": 1}))
    value = json.loads(messages.values.to_pylist()[0])
    assert value["schema"]["name"] == "c_1.my_db.my_table.v2.Envelope"
    fields = {f["field"]: f for f in value["schema"]["fields"][1]["fields"]}
    assert fields["f"]["type"] == "double" and fields["e"]["parameters"] == {"allowed": "x'y"}


def test_primary_key_names_follow_the_key_not_the_table():
    table = schema(("_op", T.StringType()), ("a", T.IntegerType(), False), ("b", T.IntegerType(), False))
    config, layout, _, _ = build(table, [], database="test", table="t", primary_key="b,a")
    debezium = DebeziumEncoder(configured(config, protocol="debezium"), layout.table, clock=lambda: CLOCK_MS)
    _, value = encode_ddl(debezium, "t", "CREATE TABLE t (a INT, b INT, PRIMARY KEY (b, a))", 1)
    assert json.loads(value)["payload"]["tableChanges"][0]["table"]["primaryKeyColumnNames"] == ["b", "a"]


def test_exchange_partition_is_the_plain_tables_event_naming_the_partitioned_one():
    debezium = ddl_encoder(ID_TABLE, "id INT")
    statement = "ALTER TABLE db.pt EXCHANGE PARTITION p0 WITH TABLE t"
    for named in ("t", "pt"):  # whichever table the DDL row names
        key, value = encode_ddl(debezium, named, statement, 1)
        payload = json.loads(value)["payload"]
        assert (payload["source"]["table"], payload["tableChanges"][0]["id"]) == ("t", '"db"."pt"')
    with pytest.raises(ContractError, match="EXCHANGE PARTITION event names both tables"):
        debezium.check_ddl(DDLChange("test", "t", "ALTER TABLE pt EXCHANGE PARTITION p0", 1,
                                     "exchange table partition"))


# -- DEFAULTs

DEFAULTS = schema(("_op", T.StringType()), ("_commit_ts", T.LongType()), ("id", T.IntegerType(), False),
                  ("n", T.LongType()), ("t", T.StringType()), ("ts", T.TimestampType()), ("d", T.DateType()),
                  ("_before", T.StructType([T.StructField(c, t) for c, t in [
                      ("id", T.IntegerType()), ("n", T.LongType()), ("t", T.StringType()),
                      ("ts", T.TimestampType()), ("d", T.DateType())]])))
DEFAULT_TYPES = ("n INT DEFAULT 5, t TIME DEFAULT '01:02:03', ts TIMESTAMP DEFAULT '2021-02-03 04:05:06', "
                 "d DATE DEFAULT '2020-01-02'")
A_DATE = dt.date(2001, 2, 3)


def defaults_encoder(rows: list[dict], **options):
    config, layout, changes, _ = build(DEFAULTS, rows, database="test", table="t", primary_key="id",
                                       column_types=DEFAULT_TYPES, **options)
    return DebeziumEncoder(configured(config, protocol="debezium"), layout.table, clock=lambda: CLOCK_MS), changes


def test_a_null_of_a_column_with_a_default_is_written_as_ticdc_writes_it():
    """The field schema carries the DEFAULT; a NULL, in the new row and the old one alike, is written as the
    default's value, a TIME's as 0, a TIMESTAMP's read in the time zone (as TiCDC reads the stored UTC text)."""
    update = {"_op": "UPDATE", "_commit_ts": 1, "id": 1, "n": None, "t": None, "ts": None, "d": A_DATE,
              "_before": {"id": 1, "n": None, "t": "04:05:06", "ts": None, "d": A_DATE}}
    debezium, changes = defaults_encoder([update], time_zone="Asia/Shanghai")
    routing = Routing(["t"], np.zeros(1, np.int32), np.zeros(1, np.int32), {"t": 1})
    value = json.loads(debezium.encode_rows(changes, routing).values[0].as_py())
    assert value["payload"]["before"] == {"id": 1, "n": 5, "t": 14706000000, "ts": "2021-02-02T20:05:06Z",
                                          "d": 11356}
    assert value["payload"]["after"] == {"id": 1, "n": 5, "t": 0, "ts": "2021-02-02T20:05:06Z", "d": 11356}
    fields = value["schema"]["fields"][1]["fields"]
    assert [f.get("default") for f in fields] == [None, 5, 3723000000, "2021-02-03T04:05:06Z", 18263]


def test_a_null_date_with_a_default_is_refused_as_ticdc_cannot_write_it():
    debezium, changes = defaults_encoder([{"_op": "INSERT", "_commit_ts": 1, "id": 7, "d": None}])
    routing = Routing(["t"], np.zeros(1, np.int32), np.zeros(1, np.int32), {"t": 1})
    with pytest.raises(ContractError, match=r"'d'.*id=7.*panics"):
        debezium.encode_rows(changes, routing)


def test_a_topic_with_defaults_reads_back_with_the_default_in_place_of_a_null():
    """The reader cannot tell a NULL TiCDC wrote as the default from the default itself: it reads the default."""
    from ticdc_sink.codec.debezium.decoder import DebeziumDecoder

    debezium, changes = defaults_encoder([{"_op": "INSERT", "_commit_ts": 1, "id": 1, "d": A_DATE},
                                          {"_op": "INSERT", "_commit_ts": 2, "id": 2, "n": 5, "d": A_DATE}])
    routing = Routing(["t"], np.zeros(2, np.int32), np.zeros(2, np.int32), {"t": 1})
    messages = debezium.encode_rows(changes, routing)
    read = [DebeziumDecoder().decode(k, v)[0].columns for k, v in zip(messages.keys.to_pylist(),
                                                                       messages.values.to_pylist())]
    assert read[0]["n"] == read[1]["n"] == 5


@pytest.mark.parametrize("statement, expressions", [
    # Not defined by the statement: TiDB's stored text, a BIT(8)'s bits (no padding: 8 % 8 is 0), CURRENT_TIMESTAMP(n) as stored.
    ("ALTER TABLE test.t COMMENT 'x'",
     ["2024", "2020-01-02 03:04:05.000", "2021-02-03 04:05:06", "CURRENT_TIMESTAMP(2)", "101", "1.5"]),
    # Defined: a temporal type's or YEAR's literal as TiDB's parser reads it, whatever options follow.
    ("ALTER TABLE test.t MODIFY y YEAR DEFAULT 24, MODIFY dt DATETIME(3) DEFAULT '2020-01-02' NOT NULL, "
     "MODIFY ts TIMESTAMP DEFAULT NOW() ON UPDATE CURRENT_TIMESTAMP, MODIFY now2 TIMESTAMP(2) DEFAULT NULL, "
     "MODIFY b BIT(8) DEFAULT 5, MODIFY dec DECIMAL(5,2) DEFAULT 1.50",
     ["24", "2020-01-02", "1970-01-01 00:00:00", None, "101", "1.5"]),
])
def test_a_ddl_describes_each_columns_default_as_ticdc_does(statement, expressions):
    table = schema(("_op", T.StringType()), ("id", T.IntegerType(), False), ("y", T.IntegerType()),
                   ("dt", T.TimestampNTZType()), ("ts", T.TimestampType()), ("now2", T.TimestampType()),
                   ("b", T.LongType()), ("dec", T.DecimalType(5, 2)))
    debezium = ddl_encoder(table, "y YEAR DEFAULT 2024, dt DATETIME(3) DEFAULT '2020-01-02 03:04:05', "
                                  "ts TIMESTAMP DEFAULT '2021-02-03 04:05:06', "
                                  "now2 TIMESTAMP(2) DEFAULT CURRENT_TIMESTAMP(2), b BIT(8) DEFAULT b'101', "
                                  "dec DECIMAL(5,2) DEFAULT 1.5")
    _, value = encode_ddl(debezium, "t", statement, 1)
    columns = json.loads(value)["payload"]["tableChanges"][0]["table"]["columns"]
    assert [c["defaultValueExpression"] for c in columns[1:]] == expressions
