"""Table routing, ``target-schema`` and ``target-table`` (``ticdc_sink/changes/table_route.py``): the names messages
carry change; topics and partitions keep the source names, as in TiCDC.  The bytes of every protocol's routed
messages are TiCDC's own in ``test_ticdc_goldens.py`` (the ``*-routed`` configurations)."""

from __future__ import annotations

import json

import pytest
from changefeed import build, schema
from pyspark.sql import types as T

from ticdc_sink.changes.dispatch import PartitionDispatcher, TopicRouter, route
from ticdc_sink.codec import decoder_for, encoder_for
from ticdc_sink.config.sink_options import parse_options
from ticdc_sink.ddl.statements import DDLChange, classify
from ticdc_sink.errors import ConfigError

TABLE = schema(("_op", T.StringType()), ("_commit_ts", T.LongType()), ("_schema", T.StringType()),
               ("_table", T.StringType()), ("id", T.LongType(), False))
ROWS = [{"_op": "INSERT", "_commit_ts": 1 << 18, "_schema": "shop", "_table": "orders_01", "id": 1},
        {"_op": "INSERT", "_commit_ts": 2 << 18, "_schema": "shop", "_table": "orders_02", "id": 2}]
ROUTED = {"protocol": "canal-json", "topic": "tidb_{schema}_{table}", "primary-key": "id",
          "target-schema": "{schema}_bak", "target-table": "orders"}


def test_messages_carry_the_routed_names_and_go_where_the_source_names_send_them():
    config, layout, changes, _ = build(TABLE, ROWS, **ROUTED)
    source = parse_options({**{k: v for k, v in ROUTED.items() if not k.startswith("target")},
                            "kafka.bootstrap.servers": "b:9092"})
    routing = route(changes, TopicRouter(config), PartitionDispatcher(config, layout.table), lambda _: 7)
    unrouted = route(changes, TopicRouter(source), PartitionDispatcher(source, layout.table), lambda _: 7)
    assert routing.topics == ["tidb_shop_orders_01", "tidb_shop_orders_02"] == unrouted.topics
    assert routing.partition_of_row.tolist() == unrouted.partition_of_row.tolist()
    messages = encoder_for(config, layout.table).encode_rows(changes, routing)
    assert [(m["database"], m["table"]) for m in map(json.loads, messages.values.to_pylist())] == \
        [("shop_bak", "orders")] * 2
    decoder = decoder_for(config)  # the reader sees the routed table
    assert {(e.database, e.table) for v in messages.values.to_pylist() for e in decoder.decode(None, v)} == \
        {("shop_bak", "orders")}


def test_a_ddl_keeps_its_statement_and_takes_the_routed_names():
    config, layout, _, _ = build(TABLE, ROWS[:1], **ROUTED)
    encoder = encoder_for(config, layout.table)
    statement = "TRUNCATE TABLE `shop_bak`.`orders`"
    ddl = encoder.route.ddl(DDLChange("shop", "orders_01", statement, 3 << 18, classify(statement)))
    [value] = encoder.encode_ddl(ddl, "tidb_shop_orders_01").values.to_pylist()
    assert (json.loads(value)["database"], json.loads(value)["table"], json.loads(value)["sql"]) == \
        ("shop_bak", "orders", statement)


@pytest.mark.parametrize("schema_expression, table_expression, expected", [
    ("{schema}_bak", "", ("shop_bak", "orders_01")),
    ("", "{schema}_{table}", ("shop", "shop_orders_01")),
    ("archive", "{table}", ("archive", "orders_01")),
])
def test_each_expression_substitutes_the_source_names_and_an_empty_one_keeps_them(schema_expression,
                                                                                   table_expression, expected):
    options = {k: v for k, v in ROUTED.items() if not k.startswith("target-")}
    options.update({k: v for k, v in (("target-schema", schema_expression), ("target-table", table_expression)) if v})
    config, layout, _, _ = build(TABLE, ROWS[:1], **options)
    encoder = encoder_for(config, layout.table)
    assert encoder.route.target("shop", "orders_01") == expected
    assert encoder.route.target("shop", "") == (expected[0], "")  # a database-level DDL routes its schema only


@pytest.mark.parametrize("option", ["target-schema", "target-table"])
def test_an_expression_with_another_placeholder_is_refused_in_ticdcs_words(option):
    with pytest.raises(ConfigError, match=f'{option} "{{db}}_x" must contain only literal text, '
                                          r"\{schema\}, and \{table\}"):
        parse_options({"kafka.bootstrap.servers": "b:9092", "protocol": "canal-json", "topic": "t",
                       option: "{db}_x"})


def test_the_changefeed_files_first_matching_routing_rule_routes(tmp_path):
    path = tmp_path / "changefeed.toml"
    path.write_text('[sink]\nprotocol = "canal-json"\n'
                    '[[sink.dispatchers]]\nmatcher = ["shop.*"]\ntopic = "{schema}_events"\npartition = "ts"\n'
                    '[[sink.dispatchers]]\nmatcher = ["other.*"]\ntarget-schema = "elsewhere"\n'
                    '[[sink.dispatchers]]\nmatcher = ["shop.orders*"]\ntarget-table = "orders"\n'
                    '[[sink.dispatchers]]\nmatcher = ["*.*"]\ntarget-schema = "never"\n')
    config = parse_options({"kafka.bootstrap.servers": "b:9092", "changefeed-config": str(path),
                            "database": "shop", "table": "orders_07"})
    assert (config.topic, config.partition, config.target_schema, config.target_table) == \
        ("{schema}_events", "ts", None, "orders")
