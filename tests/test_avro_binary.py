"""Column-wise Avro binary against fastavro's own writer, value for value."""

from __future__ import annotations

import io
from decimal import Context, Decimal

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from ticdc_sink.codec.shared.avro_binary import (booleans, decimal_bytes, fixed_width, length_prefixed, nullable,
                                                 varints)


def fastavro_bytes(schema, value) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), value)
    return out.getvalue()


EDGE_LONGS = [0, 1, -1, 63, -64, 64, -65, 127, 128, 8191, 8192, 2**31 - 1, -2**31, 2**62, 2**63 - 1, -2**63]


def test_varints_are_avro_longs():
    rng = np.random.default_rng(3)
    numbers = np.array(EDGE_LONGS + rng.integers(-2**63, 2**63 - 1, 2000, dtype=np.int64).tolist(), dtype=np.int64)
    assert varints(numbers).to_pylist() == [fastavro_bytes("long", int(n)) for n in numbers]
    assert varints(np.zeros(0, dtype=np.int64)).to_pylist() == []


def test_strings_and_bytes_are_length_prefixed():
    texts = ["", "a", "héllo 测试", "x" * 300, None]
    assert length_prefixed(pa.array(texts)).to_pylist()[:4] == [fastavro_bytes("string", t) for t in texts[:4]]
    data = [b"", b"\x00\xff", bytes(range(256)) * 3]
    assert length_prefixed(pa.array(data)).to_pylist() == [fastavro_bytes("bytes", d) for d in data]


@pytest.mark.parametrize("avro_type, dtype", [("double", "<f8"), ("float", "<f4")])
def test_floats_are_little_endian_ieee(avro_type, dtype):
    values = [0.0, -0.0, 1.5, -3.25e-300 if dtype == "<f8" else -3.25e-30, float("inf"), 3.14]
    assert fixed_width(pa.array(values), dtype).to_pylist() == [fastavro_bytes(avro_type, v) for v in values]


def test_booleans_are_one_byte():
    assert booleans(pa.array([True, False])).to_pylist() == [fastavro_bytes("boolean", b) for b in (True, False)]


@pytest.mark.parametrize("value", ["0", "1", "-1", "127", "128", "-128", "-129", "129012.1230", "-0.0001",
                                   "99999999999999999999999999999.9999"])
def test_decimals_are_minimal_twos_complement(value):
    schema = {"type": "bytes", "logicalType": "decimal", "precision": 38, "scale": 4}
    decimal = Decimal(value).quantize(Decimal("0.0001"), context=Context(prec=60))
    assert decimal_bytes(pa.array([decimal], pa.decimal128(38, 4)), 4).to_pylist() == \
        [fastavro_bytes(schema, decimal)]


@pytest.mark.parametrize("value, scale, hex_bytes", [("-1.28", 2, "80"), ("-327.68", 2, "8000"),
                                                    ("-83886.08", 2, "800000"), ("-12.8", 1, "80")])
def test_a_negative_power_of_two_takes_the_fewest_bytes_as_goavro_writes_it(value, scale, hex_bytes):
    """goavro (TiCDC's writer, toSignedBytes) strips the 0xff before a byte whose top bit is set: -128 is one
    byte, 80; fastavro writes ff80 there, which reads back to the same number."""
    for array_type in (pa.decimal128(10, scale), pa.decimal256(40, scale)):
        encoded = decimal_bytes(pa.array([Decimal(value)], array_type), scale).to_pylist()[0]
        assert encoded[1:].hex() == hex_bytes  # after the length prefix
        schema = {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": scale}
        assert fastavro.schemaless_reader(io.BytesIO(encoded), fastavro.parse_schema(schema), None) == Decimal(value)


def test_nullable_union_branches():
    values = pa.array([5, None, -3], pa.int64())
    encoded = nullable(varints(pc.fill_null(values, 0).to_numpy()), values.is_null())
    schema = ["null", "long"]
    assert encoded.to_pylist() == [fastavro_bytes(schema, v) for v in values.to_pylist()]


def test_a_record_is_its_fields_concatenated_and_fastavro_reads_it():
    schema = fastavro.parse_schema({"type": "record", "name": "t", "fields": [
        {"name": "id", "type": "long"}, {"name": "name", "type": ["null", "string"], "default": None},
        {"name": "score", "type": "double"}]})
    ids, names, scores = pa.array([1, 2]), pa.array(["a", None]), pa.array([0.5, 2.0])
    records = pc.binary_join_element_wise(
        varints(ids.to_numpy()), nullable(length_prefixed(names), names.is_null()), fixed_width(scores, "<f8"),
        pa.scalar(b"", pa.binary()))
    read = [fastavro.schemaless_reader(io.BytesIO(r), schema) for r in records.to_pylist()]
    assert read == [{"id": 1, "name": "a", "score": 0.5}, {"id": 2, "name": None, "score": 2.0}]
