"""Avro binary encoding, a column at a time.

A record's Avro encoding is its fields' encodings one after another, so a
batch's records are built as its JSON messages are: each column becomes an
array of per-row byte fragments (numpy over the whole column: zig-zag
varints, little-endian floats, length-prefixed strings), and the records are
the element-wise concatenation of the fragments.  fastavro would need a
Python dict per row to do the same; its reader checks these bytes in the tests.
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...table.value_text import bit_bytes

_MAX_VARINT_BYTES = 10
_NULL_BRANCH = pa.scalar(b"\x00", pa.binary())  # union branch 0 (null) as a zig-zag varint
_VALUE_BRANCH = pa.scalar(b"\x02", pa.binary())  # union branch 1
_NO_BYTES = pa.scalar(b"", pa.binary())


def varints(numbers: np.ndarray) -> pa.Array:
    """Avro ``long`` (and ``int``) encodings: zig-zag, then base-128 varint, per number."""
    numbers = np.asarray(numbers, dtype=np.int64)
    zigzag = ((numbers << 1) ^ (numbers >> 63)).view(np.uint64)
    widths = np.ones(len(zigzag), dtype=np.int64)
    rest = zigzag >> np.uint64(7)
    while rest.any():
        widths += rest > 0
        rest >>= np.uint64(7)
    offsets = np.zeros(len(zigzag) + 1, dtype=np.int64)
    np.cumsum(widths, out=offsets[1:])
    out = np.empty(offsets[-1], dtype=np.uint8)
    for k in range(int(widths.max(initial=0))):
        present = np.flatnonzero(widths > k)
        group = (zigzag[present] >> np.uint64(7 * k)) & np.uint64(0x7F)
        more = (widths[present] > k + 1).astype(np.uint64) << np.uint64(7)
        out[offsets[present] + k] = (group | more).astype(np.uint8)
    return pa.LargeBinaryArray.from_buffers(pa.large_binary(), len(zigzag),
                                            [None, pa.py_buffer(offsets), pa.py_buffer(out)]).cast(pa.binary())


def long_bytes(number: int) -> bytes:
    """One Avro ``long`` (or ``int``), for a constant part of every record."""
    return varints(np.array([number])).to_pylist()[0]


def string_bytes(text: str) -> bytes:
    """One Avro ``string``, for a constant part of every record."""
    data = text.encode()
    return long_bytes(len(data)) + data


def length_prefixed(values: pa.Array) -> pa.Array:
    """Avro ``string``/``bytes`` encodings: the byte length as a varint, then the bytes (nulls as empty)."""
    data = values.cast(pa.binary()) if not pa.types.is_binary(values.type) else values
    data = pc.fill_null(data, _NO_BYTES)
    lengths = pc.binary_length(data).to_numpy(zero_copy_only=False)
    return pc.binary_join_element_wise(varints(lengths), data, _NO_BYTES)


def fixed_width(values: pa.Array, dtype: str) -> pa.Array:
    """Avro ``float`` (``<f4``) and ``double`` (``<f8``) encodings: IEEE 754, little-endian (nulls as 0)."""
    numbers = pc.fill_null(values, 0).to_numpy(zero_copy_only=False).astype(dtype)
    width = numbers.dtype.itemsize
    return pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), len(numbers),
                                                [None, pa.py_buffer(numbers.tobytes())]).cast(pa.binary())


def booleans(values: pa.Array) -> pa.Array:
    """Avro ``boolean`` encodings: one byte, 0 or 1 (nulls as 0)."""
    return fixed_width(pc.fill_null(values, False).cast(pa.uint8()), "u1")


def decimal_bytes(values: pa.Array, scale: int) -> pa.Array:
    """Avro ``bytes`` with logicalType ``decimal``: the unscaled value, big-endian two's complement, minimal.

    A ``decimal128`` column of that scale already holds the unscaled values as
    16-byte little-endian two's complement, so its bytes are cut, not computed;
    wider decimals go through Python integers.
    """
    if pa.types.is_decimal128(values.type) and values.type.scale == scale:
        return length_prefixed(_minimal_twos_complement(values))
    unscaled = [0 if v is None else _unscaled(v, scale) for v in values.to_pylist()]
    raw = [n.to_bytes((n + (n < 0)).bit_length() // 8 + 1, "big", signed=True) for n in unscaled]
    return length_prefixed(pa.array(raw, pa.binary()))


def _minimal_twos_complement(values: pa.Array) -> pa.Array:
    """The fewest big-endian bytes of each 128-bit unscaled value that keep its sign (nulls as 0)."""
    count = len(values)
    words = np.frombuffer(values.buffers()[1], dtype=np.uint8)[values.offset * 16:(values.offset + count) * 16]
    big_endian = words.reshape(count, 16)[:, ::-1]
    if values.null_count:
        big_endian = np.where(values.is_null().to_numpy(zero_copy_only=False)[:, None], 0, big_endian)
    sign = np.where(big_endian[:, :1] >= 0x80, 0xFF, 0x00).astype(np.uint8)
    # Leading bytes that only repeat the sign can go, as long as the next byte still shows the sign.
    repeats = np.minimum(np.argmin(np.c_[big_endian == sign, np.zeros((count, 1), bool)], axis=1), 15)
    next_byte = big_endian[np.arange(count), repeats]
    repeats -= (repeats > 0) & ((next_byte & 0x80) != (sign[:, 0] & 0x80))
    keep = np.arange(16) >= repeats[:, None]
    offsets = np.zeros(count + 1, dtype=np.int32)
    np.cumsum(16 - repeats, out=offsets[1:])
    return pa.BinaryArray.from_buffers(pa.binary(), count,
                                       [None, pa.py_buffer(offsets), pa.py_buffer(big_endian[keep].tobytes())])


def unsigned_bytes(values: pa.Array, width: int) -> pa.Array:
    """Avro ``bytes`` of unsigned integers, each exactly ``width`` big-endian bytes (nulls as empty)."""
    return length_prefixed(bit_bytes(values, width, "big"))


def _unscaled(value: Decimal, scale: int) -> int:
    """``value * 10**scale`` exactly (no decimal context, whose 28 digits would round DECIMAL(65))."""
    sign, digits, exponent = value.as_tuple()
    number = int("".join(map(str, digits)) or "0")
    shift = exponent + scale
    number = number * 10 ** shift if shift >= 0 else number // 10 ** -shift
    return -number if sign else number


def concat(fragments: list, length: int) -> pa.Array:
    """Per-row fragments (arrays, or byte scalars for every row) joined row by row: records from their
    fields, messages from a header and a record."""
    if not fragments:
        return pa.repeat(_NO_BYTES, length)
    return pc.binary_join_element_wise(*fragments, _NO_BYTES)


def nullable(encoded: pa.Array, is_null: pa.Array, branch: int = 1) -> pa.Array:
    """A union whose branch 0 is ``null``: branch 0 for a null, else ``branch`` and the value's encoding."""
    present = pc.binary_join_element_wise(_union_branch(branch), encoded, _NO_BYTES)
    return pc.if_else(is_null, _NULL_BRANCH, present)


def null_last(encoded: pa.Array, is_null: pa.Array) -> pa.Array:
    """A ``[T, "null"]`` union (a field with a non-null default): branch 0 and the value, or branch 1 for a null."""
    present = pc.binary_join_element_wise(_union_branch(0), encoded, _NO_BYTES)
    return pc.if_else(is_null, _VALUE_BRANCH, present)


def _union_branch(index: int) -> pa.Scalar:
    return _VALUE_BRANCH if index == 1 else pa.scalar(long_bytes(index), pa.binary())
