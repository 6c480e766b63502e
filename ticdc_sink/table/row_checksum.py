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

import datetime as dt
import math
import struct
import zlib
from typing import Any, Iterable, Mapping, Sequence
from zoneinfo import ZoneInfo

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


# ---------------------------------------------------------------------------
# A decoded row, value by value (the reader's check of what it reads)

class ChecksumMismatch(ValueError):
    """A row whose values do not give the checksum its message carries."""


_INT_KINDS = frozenset({"tinyint", "smallint", "mediumint", "int", "bigint", "year", "bit", "enum", "set"})


def value_bytes(value: Any, kind: str) -> bytes:
    """What one decoded value adds to the checksum: ``value`` an int for the integer kinds, YEAR, BIT, ENUM
    (index) and SET (bitmask); a float for FLOAT and DOUBLE; bytes for a binary string; else TiDB's text (a
    TIMESTAMP's in UTC: ``utc_text``); None for NULL."""
    if value is None:
        return b""
    if kind in _INT_KINDS:
        return (int(value) & 0xFFFF_FFFF_FFFF_FFFF).to_bytes(8, "little")
    if kind in ("float", "double"):
        number = float(np.float32(value)) if kind == "float" else float(value)
        return struct.pack("<d", number if math.isfinite(number) else 0.0)
    data = value if isinstance(value, bytes) else str(value).encode("utf-8")
    return len(data).to_bytes(4, "little") + data


def checksum_of(values: Iterable[tuple[Any, str]]) -> int:
    """The checksum of a row's (value, kind) pairs, in the table's column order."""
    return zlib.crc32(b"".join(value_bytes(value, kind) for value, kind in values))


def utc_text(text: str, location: str) -> str:
    """A TIMESTAMP's text in ``location`` as the same instant's text in UTC, with its fraction as it is."""
    if location in ("UTC", "") or text.startswith("0000-00-00"):
        return text
    whole, dot, fraction = text.partition(".")
    try:
        local = dt.datetime.strptime(whole, "%Y-%m-%d %H:%M:%S").replace(tzinfo=ZoneInfo(location))
    except ValueError:
        return text
    return local.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S") + dot + fraction


def verify(expected: int, values: Iterable[tuple[Any, str]], what: str) -> None:
    """Fail with ``ChecksumMismatch`` where a row's values do not give the checksum ``expected`` (0: none)."""
    if expected == 0:
        return
    obtained = checksum_of(values)
    if obtained != expected:
        raise ChecksumMismatch(f"{what}: its values give the row checksum {obtained}, the message carries "
                               f"{expected} (integrity-check-level=correctness)")
