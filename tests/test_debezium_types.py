"""Debezium's column typing against golden/debezium/values.json: every field schema and value, byte for byte."""

from __future__ import annotations

import datetime as dt
import json
import re
from decimal import Decimal
from pathlib import Path

import pytest
from pyspark.sql import types as T

from changefeed import build, schema
from ticdc_sink.codec.debezium_types import field_schema, value_fragments
from ticdc_sink.errors import ContractError

GOLDEN = Path(__file__).resolve().parent / "golden" / "debezium"
CASES = json.loads((GOLDEN / "values.json").read_text())["cases"]
CASE_IDS = [f"{n}-{c['column']}-{c['input']!r}"[:60] for n, c in enumerate(CASES)]
SPARK_TYPES = {"binary": T.BinaryType(), "boolean": T.BooleanType(), "byte": T.ByteType(), "date": T.DateType(),
               "double": T.DoubleType(), "float": T.FloatType(), "int": T.IntegerType(), "long": T.LongType(),
               "short": T.ShortType(), "string": T.StringType(), "timestamp": T.TimestampType(),
               "timestamp_ntz": T.TimestampNTZType()}


def spark_input(case: dict):
    """The Spark type and value of a case's input (its input_spark_type)."""
    name, value = case["input_spark_type"], case["input"]
    decimal = re.fullmatch(r"decimal\((\d+),(\d+)\)", name)
    if decimal:
        return T.DecimalType(int(decimal[1]), int(decimal[2])), Decimal(value)
    if name == "binary":
        return T.BinaryType(), bytes.fromhex(value)
    if name == "date":
        return T.DateType(), dt.date.fromisoformat(value)
    if name == "timestamp_ntz":
        return T.TimestampNTZType(), dt.datetime.fromisoformat(value)
    if name == "timestamp":
        return T.TimestampType(), dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    return SPARK_TYPES[name], value


def column_of(case: dict):
    """(config, column, canonical values) of a one-row table holding the case's input."""
    spark_type, value = spark_input(case)
    table = schema(("_op", T.StringType()), (case["column"], spark_type, case["spark_nullable"]))
    options = dict(protocol="canal-json", database="test", table="t", column_types=case["column_types"],
                   time_zone=case.get("time_zone", "UTC"))
    config, layout, changes, _ = build(table, [{"_op": "INSERT", case["column"]: value}], **options)
    return config, layout.table.column(case["column"]), changes.columns[case["column"]]


# Values TiDB can hold that the sink's input contract refuses: Spark has no zero date, and a SET bitmask with
# bits beyond its members is not a set.
UNREPRESENTABLE = [c for c in CASES if c["input_spark_type"] == "string" and str(c["input"]).startswith("0000-")]
REFUSED = [c for c in CASES if c["column"] == "c_set" and c["input"] == 8]
ENCODED = [c for c in CASES if c not in UNREPRESENTABLE and c not in REFUSED]


@pytest.mark.parametrize("case", ENCODED, ids=[CASE_IDS[CASES.index(c)] for c in ENCODED])
def test_each_value_and_field_schema_is_ticdcs(case):
    config, column, values = column_of(case)
    assert field_schema(column, extension=False) == case["field_json"]
    assert field_schema(column, extension=True) == case["field_json_tidb_extension"]
    assert value_fragments(values, column, config.time_zone).to_pylist() == [case["payload_value_json"]]


def test_the_zero_dates_are_the_only_cases_spark_cannot_carry():
    assert {c["column"] for c in UNREPRESENTABLE} == {"c_date", "c_date_not_null", "c_timestamp"}


def test_a_set_bitmask_beyond_its_members_is_refused_as_the_input_contract_says():
    with pytest.raises(ContractError, match="a SET bitmask of 3 members is 0..7"):
        column_of(REFUSED[0])
