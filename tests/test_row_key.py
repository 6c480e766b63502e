"""TiKV row keys (``ticdc_sink/table/row_key.py``) against the bytes TiDB's own code makes.

Every expected key here was printed by TiDB's code (the pingcap/tidb TiCDC b813e76 builds with), run by
``golden/ticdc/generator/row_keys_test.go``: each value cast to its column's type as an INSERT casts it, then
encoded as TiDB encodes a row's handle, for table id 114.  The sink's values go through its input contract first,
as a task's do (CHAR trimmed, BINARY padded, TIME parsed, ...).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest
from changefeed import build, schema
from pyspark.sql import types as T

from ticdc_sink.errors import ConfigError
from ticdc_sink.table.row_key import RowKeyEncoder

TABLE_ID = 114
PREFIX = "7480000000000000725f72"  # t, 114 with the sign bit flipped, _r


def keys(fields: list[tuple], rows: list[dict], primary_key: str, column_types: str, table_id: int = TABLE_ID):
    """Each row's key, hex, as the encoder makes it from the rows' canonical columns."""
    _, layout, changes, _ = build(schema(*fields), rows, database="test", table="t", primary_key=primary_key,
                                  column_types=column_types)
    return [key.hex() for key in RowKeyEncoder(layout.table, table_id, "test.t").keys(changes.columns).to_pylist()]


@pytest.mark.parametrize("value,handle", [
    (1, "8000000000000001"), (-1, "7fffffffffffffff"), (0, "8000000000000000"),
    (-2**63, "0000000000000000"), (2**63 - 1, "ffffffffffffffff"),
])
def test_an_integer_primary_key_is_the_int_handle(value, handle):
    assert keys([("id", T.LongType(), False)], [{"id": value}], "id", "id BIGINT") == [PREFIX + handle]


def test_an_unsigned_bigint_handle_is_its_bits_as_int64():
    assert keys([("id", T.DecimalType(20, 0), False)], [{"id": Decimal(2**64 - 1)}], "id",
                "id BIGINT UNSIGNED") == [PREFIX + "7fffffffffffffff"]


def test_the_table_id_is_an_int64_with_its_sign_bit_flipped():
    assert keys([("id", T.IntegerType(), False)], [{"id": 7}], "id", "id INT", table_id=2**40 + 3) == \
        ["7480000100000000035f728000000000000007"]


# (MySQL type, Spark type, input value, the common handle's bytes)
COMMON_HANDLES = [
    ("VARCHAR(10)", T.StringType(), "ab  ", "016162000000000000f9"),  # utf8mb4_bin: trailing spaces dropped
    ("VARCHAR(10)", T.StringType(), "", "010000000000000000f7"),
    ("VARCHAR(10)", T.StringType(), "abcdefgh", "016162636465666768ff0000000000000000f7"),
    ("VARCHAR(20)", T.StringType(), "héllo wörld!", "0168c3a96c6c6f2077ffc3b6726c64210000fd"),
    ("CHAR(5)", T.StringType(), "ab", "016162000000000000f9"),
    ("VARBINARY(10)", T.BinaryType(), b"ab  ", "016162202000000000fb"),  # binary: every byte
    ("BINARY(4)", T.BinaryType(), b"ab", "016162000000000000fb"),  # padded to 4 bytes with 0x00
    ("DECIMAL(12,3)", T.DecimalType(12, 3), Decimal("1234.567"), "060c03800004d20237"),
    ("DECIMAL(12,3)", T.DecimalType(12, 3), Decimal("-0.001"), "060c037ffffffffffe"),
    ("DECIMAL(12,3)", T.DecimalType(12, 3), Decimal("0"), "060c03800000000000"),
    ("DECIMAL(65,30)", T.StringType(), "99999999999999999999999999999999999.999999999999999999999999999999",
     "06411e85f5e0ff3b9ac9ff3b9ac9ff3b9ac9ff3b9ac9ff3b9ac9ff3b9ac9ff03e7"),
    ("DECIMAL(65,30)", T.StringType(), "-1.5",
     "06411e7ffffffffffffffffffffffffffffffee2329affffffffffffffffffffff"),
    ("DECIMAL(10,0)", T.DecimalType(10, 0), Decimal(42), "060a00800000002a00"),  # padded, too
    ("DECIMAL(10,0)", T.DecimalType(10, 0), Decimal(-42), "060a007fffffffd500"),
    ("DECIMAL(20,10)", T.DecimalType(20, 10), Decimal("12345.6789"), "06140a80000030392877312000"),
    ("DECIMAL(20,0)", T.DecimalType(20, 0), Decimal(12345678901), "061400800000000c149aa435"),
    ("DECIMAL(20,2)", T.DecimalType(20, 2), Decimal("-12345678901.5"), "0614027ffffff3eb655bcacd"),
    ("DECIMAL(5,5)", T.DecimalType(5, 5), Decimal("-0.12345"), "0605057fcfc6000000"),  # under 9 bytes: zero-padded
    ("DATE", T.DateType(), dt.date(1000, 1, 1), "040cb2420000000000"),
    ("DATE", T.DateType(), dt.date(9999, 12, 31), "047ef3fe0000000000"),
    ("DATETIME", T.TimestampNTZType(), dt.datetime(2024, 2, 29, 12, 34, 56), "0419b2bac8b8000000"),
    ("DATETIME(6)", T.TimestampNTZType(), dt.datetime(9999, 12, 31, 23, 59, 59, 999999), "047ef3ff7efb0f423f"),
    ("TIMESTAMP", T.TimestampType(), dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=dt.timezone.utc),
     "041902c20001000000"),
    ("TIMESTAMP(3)", T.TimestampType(), dt.datetime(2038, 1, 19, 3, 14, 7, 999000, tzinfo=dt.timezone.utc),
     "0419dfe633870f3e58"),
    ("TIME", T.StringType(), "-838:59:59", "077ff544f68e866a00"),
    ("TIME(6)", T.StringType(), "00:00:00.5", "07800000001dcd6500"),
    ("TIME(6)", T.StringType(), "-12:34:56.000001", "077fffd6cdb4029c18"),
    ("FLOAT", T.FloatType(), 0.1, "05bfb99999a0000000"),  # the float32's value, as a float64
    ("FLOAT", T.FloatType(), -1234.5, "053f6cb5ffffffffff"),
    ("DOUBLE", T.DoubleType(), 0.1, "05bfb999999999999a"),
    ("DOUBLE", T.DoubleType(), -1.7976931348623157e308, "050010000000000000"),
    ("DOUBLE", T.DoubleType(), 0.0, "058000000000000000"),
    ("YEAR", T.IntegerType(), 2024, "0380000000000007e8"),  # an int64, though TiDB flags YEAR unsigned
    ("ENUM('a','b','c')", T.StringType(), "b", "040000000000000002"),
    ("SET('a','b','c')", T.StringType(), "a,c", "040000000000000005"),
    ("BIT(10)", T.LongType(), 5, "040000000000000005"),
    ("BIT(64)", T.BinaryType(), b"\xff" * 8, "04ffffffffffffffff"),
]


@pytest.mark.parametrize("mysql_type,spark_type,value,handle", COMMON_HANDLES,
                         ids=[f"{c[0]}={c[2]!r}" for c in COMMON_HANDLES])
def test_a_one_column_primary_key_of_another_type_is_a_common_handle(mysql_type, spark_type, value, handle):
    assert keys([("k", spark_type, False)], [{"k": value}], "k", f"k {mysql_type}") == [PREFIX + handle]


def test_a_composite_primary_key_is_its_columns_in_the_keys_order():
    fields = [("v", T.StringType()), ("s", T.StringType(), False), ("n", T.LongType(), False)]
    rows = [{"v": "x", "s": "z", "n": 3}, {"v": None, "s": "k", "n": -2}]
    assert keys(fields, rows, "n,s", "n INT, s VARCHAR(10)") == \
        [PREFIX + "038000000000000003017a00000000000000f8", PREFIX + "037ffffffffffffffe016b00000000000000f8"]
    unsigned = [("n", T.DecimalType(20, 0), False), ("s", T.StringType(), False)]
    assert keys(unsigned, [{"n": Decimal(2**64 - 1), "s": "k"}], "n,s", "n BIGINT UNSIGNED, s VARCHAR(10)") == \
        [PREFIX + "04ffffffffffffffff016b00000000000000f8"]


def test_string_keys_of_a_sliced_batch_take_their_own_bytes():
    fields = [("s", T.StringType(), False)]
    _, layout, changes, _ = build(schema(*fields), [{"s": "first"}, {"s": ""}, {"s": "abcdefghij"}],
                                  database="test", table="t", primary_key="s", column_types="s VARCHAR(20)")
    encoder = RowKeyEncoder(layout.table, TABLE_ID, "test.t")
    whole = encoder.keys(changes.columns).to_pylist()
    sliced = encoder.keys({"s": changes.columns["s"].slice(1)}).to_pylist()
    assert sliced == whole[1:]
    assert whole[2].hex() == PREFIX + "016162636465666768ff696a000000000000f9"


@pytest.mark.parametrize("options", [dict(unique_keys="k"), dict()], ids=["unique key only", "no key"])
def test_a_table_without_a_primary_key_is_keyed_by_the_inputs_tidb_rowid_and_refused_without_it(options):
    fields = schema(("k", T.LongType(), False), ("_tidb_rowid", T.LongType()))
    _, layout, changes, _ = build(fields, [{"k": 1, "_tidb_rowid": 7}, {"k": 2, "_tidb_rowid": -2}],
                                  database="test", table="t", **options)
    encoder = RowKeyEncoder(layout.table, TABLE_ID, "test.t")
    assert [key.hex() for key in encoder.keys(changes.columns, changes.row_ids).to_pylist()] == \
        [PREFIX + "8000000000000007", PREFIX + "7ffffffffffffffe"]  # an int handle, TiDB's EncodeInt
    with pytest.raises(ConfigError, match="test.t has no primary key.*_tidb_rowid: give it as the input's "
                                          "_tidb_rowid column"):
        encoder.keys(changes.columns)
    with pytest.raises(ConfigError, match="by their _tidb_rowid: a row has none"):
        encoder.keys(changes.columns, pa.array([1, None], pa.int64()))


def test_the_inputs_tidb_rowid_keys_a_table_whose_primary_key_is_nonclustered():
    fields = schema(("k", T.StringType(), False), ("_tidb_rowid", T.LongType()))
    _, layout, changes, _ = build(fields, [{"k": "a", "_tidb_rowid": 1}], database="test", table="t",
                                  primary_key="k", column_types="k VARCHAR(8)")
    assert RowKeyEncoder(layout.table, TABLE_ID, "test.t").keys(changes.columns, changes.row_ids)[0].as_py().hex() \
        == PREFIX + "8000000000000001"


def test_a_text_primary_key_is_refused_naming_the_column():
    _, layout, _, _ = build(schema(("k", T.StringType(), False)), [{"k": "a"}], database="test", table="t",
                            primary_key="k", column_types="k TEXT")
    with pytest.raises(ConfigError, match="'k' is TEXT"):
        RowKeyEncoder(layout.table, TABLE_ID, "test.t")
