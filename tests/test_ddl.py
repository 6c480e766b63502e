"""Unit tests for ticdc_sink.ddl.statements: statement -> TiDB action -> Canal DDL type.

Canal types follow TiCDC's canal ``convertDdlEventType``:
CREATE (create table), RENAME (rename table/tables), CINDEX (add index/FK/PK),
DINDEX (drop index/FK/PK), ALTER (column changes, rebase autoid, set default,
comment, rename index, partition ops, charset, index visibility, multi-schema
change), ERASE (drop table), TRUNCATE (truncate table), QUERY (everything else).
Action names and codes are TiDB's (pkg/meta/model ActionType).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ticdc_sink.codec import encoder_for
from ticdc_sink.codec.simple.encoder import simple_ddl_type
from ticdc_sink.config.sink_options import parse_options
from ticdc_sink.ddl.protocol_types import CANAL_DDL_TYPES, canal_ddl_type
from ticdc_sink.ddl.statements import ACTION_CODES, DDLChange, classify
from ticdc_sink.errors import ContractError

# (statement, TiDB action, Canal type)
CASES = [
    # schemas
    ("CREATE DATABASE test", "create schema", "QUERY"),
    ("create database `my-db`", "create schema", "QUERY"),
    ("CREATE SCHEMA IF NOT EXISTS s", "create schema", "QUERY"),
    ("CREATE DATABASE IF NOT EXISTS x DEFAULT CHARACTER SET utf8mb4", "create schema", "QUERY"),
    ("DROP DATABASE test", "drop schema", "QUERY"),
    ("drop schema if exists s", "drop schema", "QUERY"),
    ("ALTER DATABASE d CHARACTER SET utf8mb4", "modify schema charset and collate", "QUERY"),
    ("alter schema d default collate utf8mb4_bin", "modify schema charset and collate", "QUERY"),
    # tables
    ("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))", "create table", "CREATE"),
    ("create table if not exists t (id int)", "create table", "CREATE"),
    ("CREATE TABLE IF NOT EXISTS `db`.`t` (`id` int)", "create table", "CREATE"),
    ("CREATE TABLE t2 LIKE t1", "create table", "CREATE"),
    ("create temporary table t (a int)", "create table", "CREATE"),
    ("CREATE GLOBAL TEMPORARY TABLE t (a int) ON COMMIT DELETE ROWS", "create table", "CREATE"),
    ("CREATE TABLE `t` (`a` INT COMMENT 'a, b', `b` DECIMAL(10,2))", "create table", "CREATE"),
    ("  create table t (a int);  ", "create table", "CREATE"),
    ("DROP TABLE t", "drop table", "ERASE"),
    ("drop table if exists t1, t2", "drop table", "ERASE"),
    ("DROP TABLE `db`.`t`", "drop table", "ERASE"),
    ("TRUNCATE TABLE t", "truncate table", "TRUNCATE"),
    ("truncate t", "truncate table", "TRUNCATE"),
    ("RENAME TABLE a TO b", "rename table", "RENAME"),
    ("rename table db1.a to db2.a", "rename table", "RENAME"),
    ("RENAME TABLE `x,y` TO b", "rename table", "RENAME"),
    ("rename table a to b, c to d", "rename tables", "RENAME"),
    ("RENAME TABLE a TO b, c TO d, e TO f", "rename tables", "RENAME"),
    ("RECOVER TABLE t", "recover table", "QUERY"),
    ("FLASHBACK TABLE t TO t2", "recover table", "QUERY"),
    ("LOCK TABLES t READ", "lock table", "QUERY"),
    ("UNLOCK TABLES", "unlock table", "QUERY"),
    ("ADMIN REPAIR TABLE t CREATE TABLE t (a int)", "repair table", "QUERY"),
    # indexes as statements
    ("CREATE INDEX idx ON t (a)", "add index", "CINDEX"),
    ("create unique index uk on t (a, b)", "add index", "CINDEX"),
    ("CREATE UNIQUE INDEX IF NOT EXISTS i ON t(a)", "add index", "CINDEX"),
    ("CREATE FULLTEXT INDEX f ON t(c)", "add index", "CINDEX"),
    ("DROP INDEX idx ON t", "drop index", "DINDEX"),
    ("drop index if exists i on t", "drop index", "DINDEX"),
    # ALTER TABLE: columns
    ("ALTER TABLE t ADD COLUMN c INT", "add column", "ALTER"),
    ("alter table t add c int", "add column", "ALTER"),
    ("alter table t add column c int after b", "add column", "ALTER"),
    ("alter table t add column if not exists c int", "add column", "ALTER"),
    ("ALTER TABLE t ADD COLUMN c VARCHAR(10) DEFAULT 'a,b'", "add column", "ALTER"),
    ("ALTER TABLE t ADD COLUMN c DECIMAL(10,2)", "add column", "ALTER"),
    ("alter table t add column c int comment 'x, y'", "add column", "ALTER"),
    ("ALTER TABLE t ADD COLUMN `add` INT", "add column", "ALTER"),
    ("ALTER TABLE t ADD COLUMN c INT;", "add column", "ALTER"),
    ("alter table `my table` add column c int", "add column", "ALTER"),
    ("alter table db.t add column c int", "add column", "ALTER"),
    ("ALTER TABLE t DROP COLUMN c", "drop column", "ALTER"),
    ("alter table t drop c", "drop column", "ALTER"),
    ("alter table t drop column if exists c", "drop column", "ALTER"),
    ("alter table `db`.`t` drop column c", "drop column", "ALTER"),
    ("ALTER TABLE t MODIFY COLUMN c BIGINT", "modify column", "ALTER"),
    ("alter table t modify c bigint not null", "modify column", "ALTER"),
    ("ALTER TABLE t CHANGE COLUMN c d BIGINT", "modify column", "ALTER"),
    ("alter table t change c d int", "modify column", "ALTER"),
    ("ALTER TABLE t ALTER COLUMN c SET DEFAULT 1", "set default value", "ALTER"),
    ("alter table t alter c drop default", "set default value", "ALTER"),
    # ALTER TABLE: indexes and keys
    ("ALTER TABLE t ADD INDEX idx (c)", "add index", "CINDEX"),
    ("alter table t add index idx(a, b)", "add index", "CINDEX"),
    ("alter table t add key k (c)", "add index", "CINDEX"),
    ("alter table t add unique uk (c)", "add index", "CINDEX"),
    ("alter table t add unique key uk (c)", "add index", "CINDEX"),
    ("ALTER TABLE t ADD UNIQUE INDEX uk (a)", "add index", "CINDEX"),
    ("ALTER TABLE t ADD CONSTRAINT uk UNIQUE (c)", "add index", "CINDEX"),
    ("alter table t add fulltext index ft (c)", "add index", "CINDEX"),
    ("ALTER TABLE t ADD PRIMARY KEY (id)", "add primary key", "CINDEX"),
    ("alter table t add constraint pk primary key (id)", "add primary key", "CINDEX"),
    ("ALTER TABLE t ADD FOREIGN KEY (a) REFERENCES p(id)", "add foreign key", "CINDEX"),
    ("alter table t add constraint fk foreign key (a) references p(id)", "add foreign key", "CINDEX"),
    ("ALTER TABLE t DROP INDEX idx", "drop index", "DINDEX"),
    ("alter table t drop key idx", "drop index", "DINDEX"),
    ("ALTER TABLE t DROP PRIMARY KEY", "drop primary key", "DINDEX"),
    ("ALTER TABLE t DROP FOREIGN KEY fk", "drop foreign key", "DINDEX"),
    ("ALTER TABLE t RENAME INDEX a TO b", "rename index", "ALTER"),
    ("alter table t rename key a to b", "rename index", "ALTER"),
    ("ALTER TABLE t ALTER INDEX idx INVISIBLE", "alter index visibility", "ALTER"),
    ("ALTER TABLE t ALTER INDEX idx VISIBLE", "alter index visibility", "ALTER"),
    # ALTER TABLE: table options
    ("ALTER TABLE t RENAME TO t2", "rename table", "RENAME"),
    ("alter table t rename t2", "rename table", "RENAME"),
    ("alter table t rename as db2.t2", "rename table", "RENAME"),
    ("ALTER TABLE t COMMENT = 'hi'", "modify table comment", "ALTER"),
    ("alter table t comment 'x'", "modify table comment", "ALTER"),
    ("alter table t comment='a, b'", "modify table comment", "ALTER"),
    ("ALTER TABLE t AUTO_INCREMENT = 100", "rebase auto id", "ALTER"),
    ("alter table t auto_increment=5", "rebase auto id", "ALTER"),
    ("ALTER TABLE t CHARACTER SET utf8mb4", "modify table charset and collate", "ALTER"),
    ("alter table t charset = utf8mb4", "modify table charset and collate", "ALTER"),
    ("alter table t default charset = utf8mb4 collate utf8mb4_bin", "modify table charset and collate", "ALTER"),
    ("ALTER TABLE t COLLATE utf8mb4_bin", "modify table charset and collate", "ALTER"),
    ("alter table t convert to character set utf8mb4", "modify table charset and collate", "ALTER"),
    ("alter table t shard_row_id_bits = 4", "shard row id", "QUERY"),
    ("ALTER TABLE t SET TIFLASH REPLICA 1", "set tiflash replica", "QUERY"),
    # ALTER TABLE: partitions
    ("ALTER TABLE t ADD PARTITION (PARTITION p3 VALUES LESS THAN (30))", "add table partition", "ALTER"),
    ("alter table t add partition partitions 2", "add table partition", "ALTER"),
    ("ALTER TABLE t DROP PARTITION p1", "drop table partition", "ALTER"),
    ("ALTER TABLE t TRUNCATE PARTITION p1", "truncate table partition", "ALTER"),
    # exchange partition is not in Canal's list: QUERY (TiCDC convertDdlEventType default)
    ("ALTER TABLE t EXCHANGE PARTITION p1 WITH TABLE t2", "exchange table partition", "QUERY"),
    ("ALTER TABLE t REORGANIZE PARTITION p1 INTO (PARTITION a VALUES LESS THAN (5), "
     "PARTITION b VALUES LESS THAN (10))", "reorganize partition", "ALTER"),
    ("alter table t remove partitioning", "remove partitioning", "ALTER"),
    ("alter table t partition by hash(id) partitions 4", "alter table partitioning", "ALTER"),
    # multi-schema change
    ("ALTER TABLE t ADD COLUMN a INT, ADD INDEX ia (a)", "multi-schema change", "ALTER"),
    ("alter table t add column a int, drop column b", "multi-schema change", "ALTER"),
    ("alter table t modify a int, modify b int", "multi-schema change", "ALTER"),
    ("alter table t modify column a int comment 'a, b', modify column b int", "multi-schema change", "ALTER"),
    ("ALTER TABLE t DROP INDEX a, ADD INDEX b (c)", "multi-schema change", "ALTER"),
    # views and sequences
    ("CREATE VIEW v AS SELECT 1", "create view", "QUERY"),
    ("create or replace view v as select a, b from t", "create view", "QUERY"),
    ("CREATE ALGORITHM=MERGE DEFINER=`root`@`%` SQL SECURITY DEFINER VIEW v AS SELECT 1", "create view", "QUERY"),
    ("DROP VIEW v", "drop view", "QUERY"),
    ("drop view if exists v", "drop view", "QUERY"),
    ("CREATE SEQUENCE s", "create sequence", "QUERY"),
    ("create sequence if not exists s start with 1 increment by 2", "create sequence", "QUERY"),
    ("ALTER SEQUENCE s INCREMENT BY 2", "alter sequence", "QUERY"),
    ("DROP SEQUENCE s", "drop sequence", "QUERY"),
    # block comments are ignored; executable /*T! ... */ comments of TiDB too
    ("/* hello */ CREATE TABLE t (a int)", "create table", "CREATE"),
    ("/* a */ /* b */ drop table t", "drop table", "ERASE"),
    ("CREATE /* x */ TABLE t (a int)", "create table", "CREATE"),
    ("/*\nmulti\nline\n*/ TRUNCATE TABLE t", "truncate table", "TRUNCATE"),
    ("ALTER TABLE t ADD COLUMN c INT /* x, y */", "add column", "ALTER"),
    ("alter table t add column c int -- trailing comment", "add column", "ALTER"),
    ("/*T! SHARD_ROW_ID_BITS=4 */ create table t(a int)", "create table", "CREATE"),
    # not DDL we know
    ("SELECT 1", "unknown", "QUERY"),
    ("INSERT INTO t VALUES (1)", "unknown", "QUERY"),
    ("GRANT ALL ON *.* TO u", "unknown", "QUERY"),
    ("", "unknown", "QUERY"),
    ("   ", "unknown", "QUERY"),
    ("alter table t", "unknown", "QUERY"),
    ("CREATE USER u", "unknown", "QUERY"),
    ("ALTER TABLE t AUTO_RANDOM_BASE = 100", "rebase auto random base", "QUERY"),
]


@pytest.mark.parametrize("statement,action,canal", CASES, ids=[repr(c[0])[:60] for c in CASES])
def test_classify_and_canal_type(statement, action, canal):
    assert classify(statement) == action
    assert canal_ddl_type(classify(statement)) == canal
    # Simple's types are Canal's but for an exchanged partition (TiCDC's simple getDDLType).
    simple = "ALTER" if action == "exchange table partition" else canal
    assert simple_ddl_type(classify(statement)) == simple


def test_classify_is_case_insensitive():
    for statement in ("create table t (a int)", "CREATE TABLE T (A INT)", "CrEaTe TaBlE t (a int)"):
        assert classify(statement) == "create table"
    assert classify("ALTER table T Add Column C int") == "add column"


def test_classify_tolerates_newlines_and_tabs():
    assert classify("ALTER\tTABLE\n t\n  ADD\n COLUMN c INT") == "add column"
    assert classify("CREATE\nTABLE\tt (a int)") == "create table"
    assert classify("RENAME\nTABLE a TO b,\n c TO d") == "rename tables"


def test_every_classified_action_has_a_code():
    for statement, action, _ in CASES:
        if action != "unknown":
            assert action in ACTION_CODES, action


# ---------------------------------------------------------------------------
# Statements TiDB types differently from what classify says (TiDB ddl executor)


@pytest.mark.parametrize(
    "statement,action",
    [
        ("-- create it\nCREATE TABLE t (a int)", "create table"),
        ("# drop it\nDROP TABLE t", "drop table"),
        ("-- one\n-- two\nALTER TABLE t ADD COLUMN c INT", "add column"),
        ("ALTER TABLE t ADD COLUMN c INT -- trailing, comment", "add column"),
        ("ALTER TABLE t ADD INDEX i (a) # ticket 12, rename later", "add index"),
    ],
)
def test_line_comments_are_ignored(statement, action):
    assert classify(statement) == action


@pytest.mark.parametrize("statement", ["ALTER TABLE t RENAME COLUMN a TO b", "alter table t rename column `a` to `b`"])
def test_rename_column_is_modify_column(statement):
    assert classify(statement) == "modify column"
    assert canal_ddl_type(classify(statement)) == "ALTER"


@pytest.mark.parametrize(
    "statement",
    [
        "ALTER TABLE t ADD COLUMN a INT, ADD COLUMN b INT",
        "ALTER TABLE t ADD COLUMN c INT DEFAULT 0, ADD COLUMN d INT",
        "ALTER TABLE t DROP COLUMN a, DROP COLUMN b",
        "ALTER TABLE t ADD COLUMN (c INT, d INT)",
    ],
)
def test_several_column_specs_are_a_multi_schema_change(statement):
    assert classify(statement) == "multi-schema change"


def test_algorithm_and_lock_clauses_do_not_make_a_multi_schema_change():
    statement = "ALTER TABLE t ADD INDEX i (a), ALGORITHM=INPLACE, LOCK=NONE"
    assert classify(statement) == "add index"
    assert canal_ddl_type(classify(statement)) == "CINDEX"


def test_algorithm_clause_after_a_single_add_column():
    assert classify("ALTER TABLE t ADD COLUMN c INT, ALGORITHM=INSTANT") == "add column"


def test_drop_partition_list_is_one_drop_partition():
    assert classify("ALTER TABLE t DROP PARTITION p1, p2") == "drop table partition"


def test_auto_id_cache_is_a_query_in_canal():
    assert canal_ddl_type(classify("ALTER TABLE t AUTO_ID_CACHE = 100")) == "QUERY"


# ---------------------------------------------------------------------------
# canal_ddl_type over every action (TiCDC canal convertDdlEventType)

EXPECTED_CANAL = {
    "create schema": "QUERY",
    "drop schema": "QUERY",
    "create table": "CREATE",
    "drop table": "ERASE",
    "add column": "ALTER",
    "drop column": "ALTER",
    "add index": "CINDEX",
    "drop index": "DINDEX",
    "add foreign key": "CINDEX",
    "drop foreign key": "DINDEX",
    "truncate table": "TRUNCATE",
    "modify column": "ALTER",
    "rebase auto id": "ALTER",
    "rename table": "RENAME",
    "set default value": "ALTER",
    "shard row id": "QUERY",
    "modify table comment": "ALTER",
    "rename index": "ALTER",
    "add table partition": "ALTER",
    "drop table partition": "ALTER",
    "create view": "QUERY",
    "modify table charset and collate": "ALTER",
    "truncate table partition": "ALTER",
    "drop view": "QUERY",
    "recover table": "QUERY",
    "modify schema charset and collate": "QUERY",
    "lock table": "QUERY",
    "unlock table": "QUERY",
    "repair table": "QUERY",
    "set tiflash replica": "QUERY",
    "update tiflash replica status": "QUERY",
    "modify table auto id cache": "QUERY",
    "rebase auto random base": "QUERY",
    "add primary key": "CINDEX",
    "drop primary key": "DINDEX",
    "create sequence": "QUERY",
    "alter sequence": "QUERY",
    "drop sequence": "QUERY",
    "alter index visibility": "ALTER",
    "exchange table partition": "QUERY",
    "rename tables": "RENAME",
    "multi-schema change": "ALTER",
    "reorganize partition": "ALTER",
    "alter table partitioning": "ALTER",
    "remove partitioning": "ALTER",
}


def test_expected_table_covers_every_action():
    assert set(EXPECTED_CANAL) == set(ACTION_CODES)


@pytest.mark.parametrize("action,canal", sorted(EXPECTED_CANAL.items()))
def test_canal_ddl_type_per_action(action, canal):
    assert canal_ddl_type(action) == canal


@pytest.mark.parametrize("action", ["unknown", "", "something else", "create tables", "flashback cluster"])
def test_canal_ddl_type_defaults_to_query(action):
    assert canal_ddl_type(action) == "QUERY"


def test_canal_ddl_types_are_the_canal_event_types():
    assert set(CANAL_DDL_TYPES) == {"CREATE", "ALTER", "ERASE", "RENAME", "TRUNCATE", "CINDEX", "DINDEX", "QUERY"}
    assert {canal_ddl_type(a) for a in ACTION_CODES} == set(CANAL_DDL_TYPES)


# ---------------------------------------------------------------------------
# ActionType codes (TiDB pkg/meta/model/job.go)

DDL_TYPES_OF_THE_DOCUMENT = json.loads(
    (Path(__file__).resolve().parent / "golden" / "open-protocol" / "ddl-types.json").read_text())["codes"]
# Actions newer than the Open Protocol document's table (TiDB pkg/meta/model/job.go).
NEWER_ACTION_CODES = {
    "modify table auto id cache": 39,
    "rebase auto random base": 40,
    "alter index visibility": 41,
    "exchange table partition": 42,
    "rename tables": 47,
    "multi-schema change": 61,
    "reorganize partition": 64,
    "alter table partitioning": 71,
    "remove partitioning": 72,
}


@pytest.mark.parametrize("name,code", sorted(DDL_TYPES_OF_THE_DOCUMENT.items()))
def test_action_codes_are_the_documents(name, code):
    assert ACTION_CODES[name.lower().replace("rowid", "row id")] == code


@pytest.mark.parametrize("action,code", sorted(NEWER_ACTION_CODES.items()))
def test_newer_action_codes(action, code):
    assert ACTION_CODES[action] == code


def test_every_action_code_is_checked():
    documented = {name.lower().replace("rowid", "row id") for name in DDL_TYPES_OF_THE_DOCUMENT}
    assert set(ACTION_CODES) == documented | set(NEWER_ACTION_CODES)


def test_action_codes_are_distinct():
    assert len(set(ACTION_CODES.values())) == len(ACTION_CODES)


# ---------------------------------------------------------------------------
# DDLChange


def test_ddl_change_is_a_frozen_value():
    change = DDLChange("shop", "orders", "TRUNCATE TABLE orders", 123 << 18, classify("TRUNCATE TABLE orders"))
    assert change.action == "truncate table"
    assert change.type_override is None
    assert change == DDLChange("shop", "orders", "TRUNCATE TABLE orders", 123 << 18, "truncate table")
    with pytest.raises(Exception):
        change.query = "x"  # type: ignore[misc]


# ---------------------------------------------------------------------------
# The _ddl_type override, one check for every protocol


@pytest.mark.parametrize("protocol, override, expected", [
    ("canal-json", " create", "CREATE"), ("canal-json", "Create ", "CREATE"),
    ("simple", " create", "CREATE"), ("debezium", " create", "CREATE"),
    ("open-protocol", " create table", 3), ("open-protocol", " Shard RowID ", 16), ("open-protocol", " 3 ", 3),
])
def test_an_override_reads_the_same_whatever_its_space_and_case(protocol, override, expected):
    """Canal-JSON once took `` create`` as unknown where Simple and Debezium took it as CREATE."""
    config = parse_options({"kafka.bootstrap.servers": "h:1", "protocol": protocol, "topic": "t"})
    ddl = DDLChange("d", "t", "ALTER TABLE t COMMENT 'x'", 1, "modify table comment", override)
    assert encoder_for(config, None).ddl_type(ddl) == expected


@pytest.mark.parametrize("protocol", ["canal-json", "simple", "debezium", "open-protocol"])
def test_an_override_no_protocol_type_names_fails_the_row(protocol):
    config = parse_options({"kafka.bootstrap.servers": "h:1", "protocol": protocol, "topic": "t"})
    ddl = DDLChange("d", "t", "ALTER TABLE t COMMENT 'x'", 1, "modify table comment", "create tablex")
    with pytest.raises(ContractError, match="'_ddl_type': value 'create tablex'"):
        encoder_for(config, None).check_ddl(ddl)
