"""The Avro schemas against the ones TiCDC registers (golden/avro/), byte for byte."""

from __future__ import annotations

import json
import re
from pathlib import Path

import fastavro
import pytest
from changefeed import configured

from ticdc_sink.codec.avro.schema import EXTENSION_FIELDS, column_field, record, schema_text
from ticdc_sink.codec.shared.names import sanitize_name
from ticdc_sink.config.sink_options import parse_options
from ticdc_sink.table.schema import Column
from ticdc_sink.table.type_grammar import parse_mysql_type

GOLDEN = Path(__file__).resolve().parent / "golden" / "avro"
CONFIG = parse_options({"kafka.bootstrap.servers": "h:1", "protocol": "avro", "topic": "t_{schema}_{table}",
                        "schema-registry": "http://sr:8081"})
COLUMNS = json.loads((GOLDEN / "values.json").read_text())["columns"]


def golden(name: str) -> str:
    return (GOLDEN / name).read_bytes().decode("utf-8")


def column(name: str, declaration: str, **keys) -> Column:
    """A column from ``TYPE [NOT NULL|NULL]``."""
    not_null = re.search(r"\s+NOT NULL$", declaration)
    type_text = re.sub(r"\s+(NOT )?NULL$", "", declaration)
    return Column(name, parse_mysql_type(type_text), None, nullable=not not_null, **keys)


def config(**options) -> object:
    return configured(CONFIG, **{k.replace("-", "_"): v for k, v in options.items()})


@pytest.mark.parametrize("case", COLUMNS, ids=[f"{c['column']}-{c['mysql_type']}" for c in COLUMNS])
def test_each_column_type_block_is_ticdcs(case):
    field = column_field(column(case["column"], case["mysql_type"]), config(**(case.get("options") or {})))
    assert schema_text(field) == case["field_json"]


def test_enum_members_keep_go_escapes():
    enum = column("c_enum", "ENUM('x&y','<z>','é') NOT NULL")
    assert schema_text(column_field(enum, CONFIG)) == golden("field-enum-go-escapes.json")


def test_key_and_value_schemas_of_the_example_table():
    ident = column("id", "INT NOT NULL", primary_key=True, handle_key=True)
    name = column("name", "VARCHAR(32) NULL")
    assert schema_text(record("t", "test", [column_field(ident, CONFIG)], CONFIG)) == golden("schema-key.json")
    value = record("t", "test", [column_field(c, CONFIG) for c in (ident, name)], CONFIG)
    assert schema_text(value) == golden("schema-value.json")
    extended = record("t", "test", [column_field(c, CONFIG) for c in (ident, name)] + EXTENSION_FIELDS, CONFIG)
    assert schema_text(extended) == golden("schema-value-tidb-extension.json")
    fastavro.parse_schema(json.loads(schema_text(extended)))


@pytest.mark.parametrize("name, sanitized", [("orders", "orders"), ("1st", "_1st"), ("a-b.c", "a_b_c"),
                                             ("中文", "__"), ("_ok9", "_ok9"), ("$x", "_x"),
                                             ("٣abc", "_abc")])  # only 0-9 count as digits, as in Go
def test_names_are_sanitized_as_ticdc_does(name, sanitized):
    assert sanitize_name(name) == sanitized


def test_the_namespace_option_and_an_empty_database():
    assert record("t", "", [], config(avro_namespace="shop-prod"))["namespace"] == "shop_prod"
    assert record("9t", "db.1", [], CONFIG)["namespace"] == "default.db_1"
