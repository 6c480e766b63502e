"""``column-selectors``: TiDB's filter rules, the option's syntax, which columns a table keeps, and the messages.

The rules are TiDB's ``pkg/util/table-filter`` as TiCDC's column selector uses
them (pingcap/ticdc ``downstreamadapter/sink/columnselector``): the first
selector whose matcher matches the table applies, the last column rule that
matches a column decides, a column no rule matches is left out, and names
match case-insensitively.
"""

from __future__ import annotations

import json

import pytest
from pyspark.sql import types as T

from changefeed import build, schema
from ticdc_sink.codec import encoder_for
from ticdc_sink.errors import ConfigError
from ticdc_sink.sink.task import SelectedEncoders
from ticdc_sink.table.filters import ColumnFilter, TableFilter
from ticdc_sink.table.selectors import ColumnSelection, parse_column_selectors

BUILD_MS = 1639633142960


@pytest.mark.parametrize("rules, schema_name, table, matched", [
    (["test.t1"], "test", "t1", True),
    (["test.t1"], "TEST", "T1", True),  # case-insensitive
    (["test.t1"], "test", "t10", False),
    (["test.*"], "test", "anything", True),
    (["test.*", "!test.secret"], "test", "secret", False),  # the last matching rule decides
    (["!test.secret", "test.*"], "test", "secret", True),
    (["db?.t[0-9]"], "db1", "t5", True),
    (["db?.t[!0-9]"], "db1", "t5", False),
    (['"a.b".c'], "a.b", "c", True),  # a quoted name holds the dot
    (["`x``y`.z"], "x`y", "z", True),  # a doubled quote is the quote
    (["/^t_[0-9]+$/.*"], "t_12", "z", True),  # a regular expression
    (["a\\*.b"], "a*", "b", True),  # an escaped wildcard is the character
    (["a\\*.b"], "ax", "b", False),
])
def test_table_rules_match_as_tidbs_table_filter(rules, schema_name, table, matched):
    assert TableFilter(rules).matches(schema_name, table) is matched


@pytest.mark.parametrize("rules, column, kept", [
    (["a", "b"], "A", True),
    (["a", "b"], "c", False),  # matched by no rule: left out
    (["!b"], "a", False),  # so '!b' alone keeps nothing
    (["*", "!b"], "b", False),
    (["*", "!b"], "c", True),
    (["column*", "!column1"], "column2", True),
    (["column*", "!column1"], "column1", False),
])
def test_column_rules_keep_as_tidbs_column_filter(rules, column, kept):
    assert ColumnFilter(rules).keeps(column) is kept


def test_the_option_takes_a_changefeeds_toml_as_written_and_json():
    toml = "[{matcher = ['test.t1'], columns = ['a', 'b']}, {matcher = ['test.*'], columns = ['*', '!b']}]"
    as_json = json.dumps([{"matcher": ["test.t1"], "columns": ["a", "b"]},
                          {"matcher": ["test.*"], "columns": ["*", "!b"]}])
    assert parse_column_selectors(toml) == parse_column_selectors(as_json)
    assert [s.columns for s in parse_column_selectors(toml)] == [("a", "b"), ("*", "!b")]


@pytest.mark.parametrize("text, says", [
    ("[{matcher = ['t1'], columns = ['a']}]", "'t1': a table rule is schema.table"),
    ("[{matcher = ['test.t1']}]", "exactly the keys matcher and columns"),
    ("[{matcher = ['test.t1'], columns = []}]", "non-empty lists of strings"),
    ("[{matcher = ['test.[ab'], columns = ['a']}]", "without its ']'"),
    ("matcher = test", "not a TOML (or JSON) array"),
    ("[]", "at least one"),
])
def test_a_bad_selector_is_refused_naming_the_option_and_why(text, says):
    with pytest.raises(ConfigError, match="column-selectors") as info:
        parse_column_selectors(text)
    assert says in str(info.value)


TABLE = schema(("id", T.IntegerType(), False), ("name", T.StringType()), ("secret", T.StringType()),
               ("region", T.StringType()))
OPTIONS = dict(protocol="canal-json", database="shop", table="orders", primary_key="id")


def selection(selectors: str, **options):
    config, layout, _, _ = build(TABLE, [], **{**OPTIONS, **options})
    return ColumnSelection(parse_column_selectors(selectors), layout.table, config.partition_columns)


def test_the_first_matching_selector_applies_and_an_unmatched_table_keeps_every_column():
    chosen = selection("[{matcher = ['shop.orders'], columns = ['*', '!secret']}, {matcher = ['shop.*'], "
                       "columns = ['id']}]")
    assert chosen.table_for("shop", "orders").names == ("id", "name", "region")
    assert chosen.table_for("shop", "other").names == ("id",)
    assert chosen.table_for("crm", "orders").names == ("id", "name", "secret", "region")


def test_a_selection_must_keep_the_handle_key_and_the_columns_partitioning_uses():
    with pytest.raises(ConfigError, match="handle-key column.*id"):
        selection("[{matcher = ['shop.*'], columns = ['name']}]").table_for("shop", "orders")
    with pytest.raises(ConfigError, match="region, which partition-columns"):
        selection("[{matcher = ['shop.*'], columns = ['id', 'name']}]", partition="columns",
                  partition_columns="region").table_for("shop", "orders")
    with pytest.raises(ConfigError, match="without a handle key"):
        selection("[{matcher = ['shop.*'], columns = ['*']}]", primary_key="").table_for("shop", "orders")


def encoded(protocol: str, selectors: str, rows: list[dict], **options) -> list:
    config, layout, changes, _ = build(TABLE, rows, **{**OPTIONS, "protocol": protocol, "column_selectors": selectors,
                                                       **options})
    encoder = encoder_for(config, layout.table, clock=lambda: BUILD_MS)
    return SelectedEncoders(config, layout.table, encoder, None).of(changes).encode_values(changes).to_pylist()


def test_canal_json_leaves_the_columns_out_of_sqltype_mysqltype_and_data():
    [message] = encoded("canal-json", "[{matcher = ['shop.*'], columns = ['*', '!secret']}]",
                        [{"id": 1, "name": "a", "secret": "s", "region": "eu"}])
    assert ('"pkNames":["id"],"isDdl":false,"type":"INSERT"' in message and
            '"sqlType":{"id":4,"name":12,"region":12},"mysqlType":{"id":"int","name":"varchar","region":"varchar"},'
            '"old":null,"data":[{"id":"1","name":"a","region":"eu"}]}' in message)


def test_simple_rows_leave_the_columns_out_and_its_table_schema_keeps_the_whole_table():
    config, layout, changes, _ = build(TABLE, [{"id": 1, "name": "a", "secret": "s", "region": "eu"}],
                                       **{**OPTIONS, "protocol": "simple",
                                          "column_selectors": "[{matcher = ['shop.*'], columns = ['id', 'name']}]"})
    encoder = SelectedEncoders(config, layout.table, encoder_for(config, layout.table), None).of(changes)
    [message] = encoder.encode_values(changes).to_pylist()
    assert json.loads(message)["data"] == {"id": "1", "name": "a"}
    bootstrap = json.loads(encoder.encode_bootstrap("shop", "orders"))
    assert [c["name"] for c in bootstrap["tableSchema"]["columns"]] == ["id", "name", "secret", "region"]
