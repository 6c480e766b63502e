"""A row's checksum as TiCDC sends it with ``integrity-check-level = "correctness"``.

TiDB writes each row with a checksum of its encoded bytes (``tidb_enable_row_level_checksum``, checksum version
2); TiCDC's mounter checks that one and then sends, in its place, the checksum of the row's columns
(pingcap/ticdc ``pkg/common/event/checksum.go``: ``verifyChecksum`` returns ``calculateColumnChecksum``), which its
consumers compute again from the values they decode (``pkg/sink/codec/common/verify_checksum.go``).  That is
TiDB's column checksum (``pkg/util/rowcodec/common.go``, ``RowData.Checksum``): CRC32-IEEE over the columns in
the table's order, each contributing

- integers, YEAR, ENUM (its index), SET (its bitmask), BIT: the value as 8 little-endian bytes (a signed one as
  its two's complement);
- FLOAT and DOUBLE: the float64 bits, little-endian (a FLOAT widened; NaN and infinities as 0);
- strings and binary strings: a 4-byte little-endian length, then the bytes;
- DECIMAL, DATE, DATETIME, TIMESTAMP (in UTC), TIME and JSON: TiDB's text of the value, length-prefixed;
- NULL: nothing.

It depends on neither the handle nor the column ids, only on the columns' order: the table's, which for a table
whose columns were never reordered is also the order of their ids.
"""

from __future__ import annotations

import zlib
from typing import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .schema import Column
from .value_text import value_text

CHECKSUM_VERSION = 2  # TiDB's rowcodec checksum version that TiCDC reports (checksumVersionRawHandle)
_NO_BYTES = pa.scalar(b"", pa.binary())


def _little_endian(numbers: np.ndarray, is_null: pa.Array) -> pa.Array:
    data = np.ascontiguousarray(numbers.astype("<u8"))
    fixed = pa.FixedSizeBinaryArray.from_buffers(pa.binary(8), len(data), [None, pa.py_buffer(data.tobytes())])
    return pc.if_else(is_null, _NO_BYTES, fixed.cast(pa.binary()))


def _length_prefixed(data: pa.Array) -> pa.Array:
    data = data.cast(pa.binary()) if not pa.types.is_binary(data.type) else data
    lengths = pc.fill_null(pc.binary_length(data), 0).to_numpy(zero_copy_only=False).astype("<u4")
    prefix = pa.FixedSizeBinaryArray.from_buffers(pa.binary(4), len(lengths), [None, pa.py_buffer(lengths.tobytes())])
    prefixed = pc.binary_join_element_wise(prefix.cast(pa.binary()), pc.fill_null(data, _NO_BYTES), _NO_BYTES)
    return pc.if_else(data.is_null(), _NO_BYTES, prefixed)


def column_bytes(values: pa.Array, column: Column) -> pa.Array:
    """What each row's value of ``column`` adds to the checksum (empty for NULL)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    t, is_null = column.type, values.is_null()
    if t.is_integer or t.kind in ("year", "bit", "enum", "set"):
        numbers = pc.fill_null(values, 0).to_numpy(zero_copy_only=False)
        if numbers.dtype.kind == "i":
            numbers = numbers.astype(np.int64).view(np.uint64)
        return _little_endian(numbers.astype(np.uint64), is_null)
    if t.kind in ("float", "double"):
        numbers = pc.fill_null(values, 0).to_numpy(zero_copy_only=False).astype(np.float64)
        numbers = np.where(np.isfinite(numbers), numbers, 0.0)
        return _little_endian(numbers.view(np.uint64), is_null)
    return _length_prefixed(value_text(values, t, "UTC"))


def row_checksums(columns: Mapping[str, pa.Array], table_columns: Sequence[Column], n: int) -> np.ndarray:
    """Each row's checksum (uint32) of the values ``columns`` holds for ``table_columns``, in that order."""
    parts = [column_bytes(columns[c.name], c) for c in table_columns]
    rows = pc.binary_join_element_wise(*parts, _NO_BYTES) if parts else pa.repeat(_NO_BYTES, n)
    offsets = np.frombuffer(rows.buffers()[1], dtype=np.int32)[rows.offset: rows.offset + n + 1]
    data = memoryview(rows.buffers()[2] or b"")
    return np.fromiter((zlib.crc32(data[offsets[i]:offsets[i + 1]]) for i in range(n)), dtype=np.uint32, count=n)
