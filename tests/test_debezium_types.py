"""Debezium's column typing against golden/debezium/values.json: every field schema and value, byte for byte."""

from __future__ import annotations

import datetime as dt
import json
import re
from decimal import Decimal
from pathlib import Path

import pytest
from changefeed import build, schema
from pyspark.sql import types as T

from ticdc_sink.codec.debezium.field_types import field_schema, value_fragments
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
    return config, layout.table.column_named(case["column"]), changes.columns[case["column"]]


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


# The column-at-a-time shortcuts against their per-value definitions, on the edges where the shortcut stops.

def test_decimals_become_the_double_nearest_their_text_on_both_sides_of_the_exact_division():
    import pyarrow as pa

    from ticdc_sink.codec.debezium.field_types import decimal_doubles

    for precision, scale in [(12, 2), (20, 0), (38, 10), (38, 22), (38, 23), (38, 30)]:
        unscaled = [0, 1, -1, 2**53 - 1, 2**53, 2**53 + 1, -(2**53) - 1, 10**17 + 3, -(10**precision - 1),
                    10**precision - 1, 123456789, None, 2**63, -(2**63) - 1]
        values = [None if u is None else Decimal(f"{u}E-{scale}") for u in unscaled
                  if u is None or abs(u) < 10**precision]
        array = pa.array(values, pa.decimal128(precision, scale))
        for sliced in (array, array.slice(2)):
            expected = [None if v is None else float(str(v)) for v in sliced.to_pylist()]
            assert decimal_doubles(sliced).to_pylist() == expected, (precision, scale)


def test_binary_values_become_the_padded_base64_of_each_value_alone():
    import base64

    import pyarrow as pa

    from ticdc_sink.codec.shared.json_text import base64_fragments

    values = [bytes(range(n)) for n in range(8)] + [None, b"\xff" * 64, b""]
    array = pa.array(values, pa.binary())
    for sliced in (array, array.slice(3), pa.chunked_array([array.slice(0, 4), array.slice(4)]),
                   array.cast(pa.large_binary()), pa.array([], pa.binary()), pa.array([None], pa.binary())):
        expected = ["null" if v is None else f'"{base64.b64encode(v).decode()}"' for v in sliced.to_pylist()]
        assert base64_fragments(sliced).to_pylist() == expected


@pytest.mark.parametrize("fsp", range(7))
def test_timestamp_texts_built_as_byte_columns_equal_each_value_printed_alone(fsp):
    import numpy as np
    import pyarrow as pa

    from ticdc_sink.table.value_text import timestamp_text

    rng = np.random.default_rng(fsp)
    micros = [*rng.integers(-62135596800000000, 253402300800000000, 500), None, 253402300800000000]
    for zone in (None, "UTC"):
        array = pa.array(np.array([0 if m is None else m for m in micros], "datetime64[us]"),
                         pa.timestamp("us", tz=zone), mask=np.array([m is None for m in micros]))
        for sliced in (array, array.slice(7, 50), array.slice(0, 0)):
            for separator, suffix in ((" ", ""), ("T", "Z")):
                expected = []
                for m in sliced.cast(pa.int64()).to_pylist():
                    if m is None:
                        expected.append(None)
                        continue
                    when = np.datetime64(m, "us").astype(object)
                    year = 10000 if when is None or isinstance(when, int) else when.year
                    if year == 10000:  # past datetime's range: the one row in year 10000 (fallback path)
                        expected.append(f"10000-01-01{separator}00:00:00" + ("." + "0" * fsp if fsp else "")
                                        + suffix)
                        continue
                    text = f"{when.year:04d}-{when:%m-%d}{separator}{when:%H:%M:%S}"
                    expected.append(text + (f".{when.microsecond:06d}"[:fsp + 1] if fsp else "") + suffix)
                got = timestamp_text(sliced, fsp, "UTC", separator=separator, suffix=suffix).to_pylist()
                assert got == expected
