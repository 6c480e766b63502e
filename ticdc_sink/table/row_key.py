"""TiKV's key of a row's record, as TiDB writes it: what TiCDC's ``output-row-key`` puts in a message.

The key is ``t``, the table id, ``_r`` and the row's handle (TiDB
``pkg/tablecodec/tablecodec.go``, ``EncodeRowKeyWithHandle``), the table id and
an int handle as int64 with the sign bit flipped, big-endian.  The handle is
the primary key, clustered as TiDB makes it by default
(``tidb_enable_clustered_index=ON``; ``pkg/ddl/create_table.go``,
``ShouldBuildClusteredIndex``): one column of an integer type is the int
handle, any other primary key a common handle, its values in TiDB's
memcomparable form (``pkg/util/codec/codec.go``, ``EncodeKey``) as TiDB holds
them after casting to the column's type (``pkg/table/tables/tables.go``,
``AddRecord``).  Strings go as their collation's key (``pkg/util/collate``): the
sink's text columns are utf8mb4_bin, whose key drops trailing spaces; binary
strings keep every byte.

A table without a primary key, or with a NONCLUSTERED one, is keyed by TiDB's
hidden ``_tidb_rowid`` (an int handle), which TiDB allocates: the input gives it
as its ``_tidb_rowid`` column (``SELECT _tidb_rowid, ...``), and where it has that
column every row is keyed by it.  Without it a table without a primary key is
refused, and a primary key is taken as clustered.  Keys are built a column at a time:
fixed-width values as byte matrices, strings by the byte-group encoding over
Arrow's buffers; DECIMAL, whose binary form needs big integers, value by value.
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import ConfigError
from .mysql_types import INTEGER_KINDS
from .schema import Column, TableSchema

# pkg/util/codec/codec.go: the flag byte before each value of a key.
_BYTES, _INT, _UINT, _FLOAT, _DECIMAL, _DURATION = 1, 3, 4, 5, 6, 7
_SIGN = np.uint64(1 << 63)
_SHORTEST_COMMON_HANDLE = 9
_GROUP = 8  # EncodeBytes: 8 bytes a group, then 0xFF less the group's padding
_WORD_DIGITS = 9  # MyDecimal's words hold 9 decimal digits in 4 bytes; a part word as few bytes as its digits need
_DIGIT_BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
_UNSIGNED_KINDS = frozenset({"enum", "set", "bit"})
_PREFIX_KEYED_KINDS = frozenset({"tinytext", "text", "mediumtext", "longtext"})  # TEXT, BLOB: a prefix is keyed


class RowKeyEncoder:
    """The row keys of one table (``table``: every column, not a selection) whose TiDB id is ``table_id``."""

    def __init__(self, table: TableSchema, table_id: int, table_name: str, row_id_column: str = "_tidb_rowid"):
        primary = next((index for index in table.indexes if index.primary), None)
        self._table_name, self._row_id_column = table_name, row_id_column
        self._columns = [table.column_named(name) for name in primary.columns] if primary is not None else []
        for column in self._columns:
            if column.type.kind in _PREFIX_KEYED_KINDS:
                raise ConfigError("output-row-key", "true", f"table {table_name}: primary key column "
                                  f"{column.name!r} is {column.type.short_name.upper()}, which TiDB keys by a "
                                  "prefix the sink does not know")
        self._int_handle = len(self._columns) == 1 and self._columns[0].type.kind in INTEGER_KINDS
        self._prefix = b"t" + _int_bytes(np.array([table_id], np.int64)).tobytes() + b"_r"

    def keys(self, columns: dict[str, pa.Array], row_ids: pa.Array | None = None) -> pa.Array:
        """Each row's key (binary), from its ``_tidb_rowid`` where the input gives them, else from the table's
        canonical columns (``changes/canonical.py``)."""
        if row_ids is not None:
            if row_ids.null_count:
                raise ConfigError(self._row_id_column, None, f"output-row-key keys the rows of {self._table_name} "
                                  "by their _tidb_rowid: a row has none")
            return _rows_of(_with_prefix(self._prefix, _int_bytes(_numbers(row_ids, np.int64))))
        if not self._columns:
            raise ConfigError("output-row-key", "true", f"table {self._table_name} has no primary key, so TiDB "
                              f"keys its rows by the hidden _tidb_rowid: give it as the input's "
                              f"{self._row_id_column} column (SELECT _tidb_rowid, ...), or declare the primary key "
                              "(primary-key) where the table has one")
        if self._int_handle:
            [column] = self._columns
            values = _numbers(columns[column.name], np.uint64 if column.type.unsigned else np.int64)
            return _rows_of(_with_prefix(self._prefix, _int_bytes(values.view(np.int64))))
        parts = [handle_datums(columns[c.name], c) for c in self._columns]
        keys = pc.binary_join_element_wise(pa.scalar(self._prefix, pa.binary()), *parts, pa.scalar(b"", pa.binary()))
        # kv.NewCommonHandle (pkg/kv/key.go) pads a handle under 9 bytes with zeros: small DECIMALs only.
        shortest = len(self._prefix) + _SHORTEST_COMMON_HANDLE
        if len(keys) and pc.min(pc.binary_length(keys)).as_py() < shortest:
            keys = pa.array([key.ljust(shortest, b"\0") for key in keys.to_pylist()], pa.binary())
        return keys


def handle_datums(values: pa.Array, column: Column) -> pa.Array:
    """A column's values as TiDB's ``EncodeKey`` writes them in a common handle: flag byte, then the value."""
    t = column.type
    if t.kind in INTEGER_KINDS:
        if t.unsigned:
            return _fixed(_UINT, _numbers(values, np.uint64))
        return _fixed(_INT, _int_cmp(_numbers(values, np.int64)))
    if t.kind == "year":  # TiDB holds a YEAR as an int64
        return _fixed(_INT, _int_cmp(_numbers(values, np.int64)))
    if t.kind in _UNSIGNED_KINDS:  # ENUM's index, SET's bitmask, BIT's number
        return _fixed(_UINT, _numbers(values, np.uint64))
    if t.kind in ("float", "double"):
        return _fixed(_FLOAT, _float_cmp(_numbers(values, np.float64)))
    if t.kind in ("date", "datetime", "timestamp"):
        return _fixed(_UINT, packed_time(values))
    if t.kind == "time":  # a Duration: nanoseconds, from the canonical microseconds
        return _fixed(_DURATION, _int_cmp(_numbers(values, np.int64) * 1000))
    if t.kind == "decimal":
        return pa.array([bytes([_DECIMAL, t.length, t.decimals]) + decimal_bin(v, t.length, t.decimals)
                         for v in values.to_pylist()], pa.binary())
    if t.is_string:
        data = values if t.binary else pc.utf8_rtrim(values, " ")  # utf8mb4_bin's key: no trailing spaces
        return memcomparable_bytes(data.cast(pa.binary()))
    raise ConfigError("output-row-key", "true", f"primary key column {column.name!r} is {t.short_name.upper()}, "
                      "which the sink cannot key")


def memcomparable_bytes(values: pa.Array) -> pa.Array:
    """``EncodeBytes`` with its flag (``pkg/util/codec/bytes.go``): 8-byte groups, the last padded with zeros,
    each followed by 0xFF less its padding; a value whose length is a multiple of 8 ends with an empty group."""
    offsets = np.frombuffer(values.buffers()[1], np.int32, len(values) + 1, values.offset * 4).astype(np.int64)
    data_buffer = values.buffers()[2]
    data = np.frombuffer(data_buffer, np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    data = np.append(data, np.uint8(0))  # so that an empty value's group has a byte to point at
    lengths = np.diff(offsets)
    groups = lengths // _GROUP + 1
    row = np.repeat(np.arange(len(values)), groups)
    index = np.arange(int(groups.sum())) - np.repeat(np.cumsum(groups) - groups, groups)
    taken = np.minimum(lengths[row] - index * _GROUP, _GROUP)
    at = offsets[:-1][row, None] + index[:, None] * _GROUP + np.arange(_GROUP)
    present = np.arange(_GROUP) < taken[:, None]
    matrix = np.zeros((len(row), _GROUP + 1), np.uint8)
    matrix[:, :_GROUP] = np.where(present, data[np.where(present, at, len(data) - 1)], 0)
    matrix[:, _GROUP] = 0xFF - (_GROUP - taken)
    # Each row: its flag, then its groups' rows of the matrix, in order.
    starts = np.concatenate([[0], np.cumsum(1 + groups * (_GROUP + 1))])
    out = np.empty(int(starts[-1]), np.uint8)
    is_flag = np.zeros(len(out), bool)
    is_flag[starts[:-1]] = True
    out[is_flag] = _BYTES
    out[~is_flag] = matrix.reshape(-1)
    return pa.Array.from_buffers(pa.binary(), len(values), [None, pa.py_buffer(starts.astype(np.int32)),
                                                            pa.py_buffer(out)])


def decimal_bin(value: Decimal, precision: int, frac: int) -> bytes:
    """MyDecimal's ``WriteBin`` (``pkg/types/mydecimal.go``) of a value at the column's precision and scale: the
    integer digits, then the fraction's, in 9-digit words of 4 bytes (a part word in as few bytes as its digits
    need); every byte inverted when negative, then the first byte's top bit flipped."""
    sign, digits, exponent = value.as_tuple()
    unscaled = int("".join(map(str, digits)) or "0") * 10 ** (exponent + frac)
    whole, fraction = divmod(unscaled, 10**frac)
    whole_words, lead = divmod(precision - frac, _WORD_DIGITS)
    frac_words, trail = divmod(frac, _WORD_DIGITS)
    out = bytearray()
    if lead:
        out += (whole // 10 ** (_WORD_DIGITS * whole_words) % 10**lead).to_bytes(_DIGIT_BYTES[lead], "big")
    for word in reversed(range(whole_words)):
        out += (whole // 10 ** (_WORD_DIGITS * word) % 10**_WORD_DIGITS).to_bytes(4, "big")
    for word in range(frac_words):
        out += (fraction // 10 ** (frac - _WORD_DIGITS * (word + 1)) % 10**_WORD_DIGITS).to_bytes(4, "big")
    if trail:
        out += (fraction % 10**trail).to_bytes(_DIGIT_BYTES[trail], "big")
    if sign and unscaled:  # TiDB writes a zero unsigned
        out = bytearray(b ^ 0xFF for b in out)
    out[0] ^= 0x80
    return bytes(out)


def packed_time(values: pa.Array) -> np.ndarray:
    """``Time.ToPackedUint`` (``pkg/types/time.go``) of DATE, DATETIME or TIMESTAMP values: TIMESTAMP's UTC
    fields (as TiDB stores them), the others' own."""
    def field(kernel) -> np.ndarray:
        return pc.fill_null(kernel(values), 0).to_numpy(zero_copy_only=False).astype(np.uint64)

    ymd = ((field(pc.year) * np.uint64(13) + field(pc.month)) << np.uint64(5)) | field(pc.day)
    if pa.types.is_date(values.type):
        hms = micro = np.zeros(len(values), np.uint64)
    else:
        hms = (field(pc.hour) << np.uint64(12)) | (field(pc.minute) << np.uint64(6)) | field(pc.second)
        micro = field(pc.millisecond) * np.uint64(1000) + field(pc.microsecond)
    return (((ymd << np.uint64(17)) | hms) << np.uint64(24)) | micro


def _numbers(values: pa.Array, dtype) -> np.ndarray:
    return pc.fill_null(values, 0).to_numpy(zero_copy_only=False).astype(dtype)


def _int_cmp(values: np.ndarray) -> np.ndarray:
    """``EncodeIntToCmpUint``: the sign bit flipped, so that negative numbers sort first."""
    return values.view(np.uint64) ^ _SIGN


def _float_cmp(values: np.ndarray) -> np.ndarray:
    """``encodeFloatToCmpUint64`` (``pkg/util/codec/float.go``): the sign bit set on non-negative numbers, every
    bit inverted on negative ones."""
    bits = values.view(np.uint64)
    return np.where(values >= 0, bits | _SIGN, ~bits)


def _int_bytes(values: np.ndarray) -> np.ndarray:
    """int64s with the sign bit flipped, big-endian: a row per value, 8 bytes."""
    return _int_cmp(values).astype(">u8").view(np.uint8).reshape(-1, 8)


def _fixed(flag: int, values: np.ndarray) -> pa.Array:
    """A flag byte and a uint64 big-endian per row."""
    matrix = np.concatenate([np.full((len(values), 1), flag, np.uint8),
                             values.astype(">u8").view(np.uint8).reshape(-1, 8)], axis=1)
    return _rows_of(matrix)


def _with_prefix(prefix: bytes, matrix: np.ndarray) -> np.ndarray:
    head = np.broadcast_to(np.frombuffer(prefix, np.uint8), (len(matrix), len(prefix)))
    return np.concatenate([head, matrix], axis=1)


def _rows_of(matrix: np.ndarray) -> pa.Array:
    """A binary array of a byte matrix's rows."""
    rows, width = matrix.shape
    offsets = np.arange(0, (rows + 1) * width, width, dtype=np.int32)
    return pa.Array.from_buffers(pa.binary(), rows, [None, pa.py_buffer(offsets),
                                                     pa.py_buffer(np.ascontiguousarray(matrix).tobytes())])

