"""Canonical column values: one Arrow form per MySQL type, the values TiDB itself would hold.

ENUM as its index, SET as its bitmask, BIT and BIGINT UNSIGNED as uint64,
DECIMAL at the column's scale, DATETIME as wall-clock time and TIMESTAMP as an
instant (``time-zone`` between them), TIME as microseconds, CHAR without its
trailing spaces, BINARY padded, JSON as TiDB's text (``tidb_json.py``).  A value
the type cannot hold fails naming the column, the value and the row.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import ContractError
from ..table.mysql_types import INTEGER_KINDS, STRING_KINDS, MySQLType
from ..table.schema import Column, TableSchema
from ..table.text_join import string_scalar
from .tidb_json import InvalidJSON, json_column


class BadValue(Exception):
    """A value its type cannot hold: the row, the value and why."""

    def __init__(self, row: int, value, problem: str):
        super().__init__(problem)
        self.row, self.value, self.problem = row, value, problem


def canonical_columns(table: TableSchema, columns: dict[str, pa.Array], before: dict[str, pa.Array] | None,
                      describe_row: Callable[[int], str], before_column: str,
                      time_zone: str) -> tuple[dict[str, pa.Array], dict[str, pa.Array] | None]:
    """The table columns, and the old row's (``before``), in canonical form.

    A value the column's MySQL type cannot hold fails with ``ContractError``
    naming the column, the value and the row (``describe_row``).
    """
    converted = {c.name: _canonical(columns[c.name], c, c.name, describe_row, time_zone) for c in table.columns}
    if before is not None:
        before = {c.name: _canonical(before[c.name], c, f"{before_column}.{c.name}", describe_row, time_zone)
                  for c in table.columns}
    return converted, before


def _canonical(values: pa.Array, column: Column, label: str, describe_row: Callable[[int], str],
               time_zone: str) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    try:
        return canonical_values(values, column, time_zone)
    except BadValue as bad:
        raise ContractError(label, bad.value, describe_row(bad.row), bad.problem) from None


def _first_failing(values: pa.Array, check) -> tuple[int, object]:
    """The first row whose Python value fails ``check`` (the slow path of an error)."""
    for i, v in enumerate(values.to_pylist()):
        if v is not None and not check(v):
            return i, v
    return 0, values[0].as_py() if len(values) else None


def _first_true(mask: pa.Array) -> int | None:
    rows = np.flatnonzero(pc.fill_null(mask, False).to_numpy(zero_copy_only=False))
    return int(rows[0]) if len(rows) else None


def canonical_values(values: pa.Array, column: Column, time_zone: str) -> pa.Array:
    """Convert one input column to the canonical form of its MySQL type (raises BadValue)."""
    return canonical_type_values(values, column.type, time_zone)


def canonical_type_values(values: pa.Array, t: MySQLType, time_zone: str) -> pa.Array:
    """Values of MySQL type ``t`` in canonical form (raises BadValue): a column's, or a column's DEFAULT."""
    kind = t.kind
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        _check_utf8(values)
    if kind in INTEGER_KINDS or kind == "year":
        return _integers(values, t)
    if kind in ("float", "double"):
        target = pa.float32() if kind == "float" else pa.float64()
        if pa.types.is_decimal(values.type):
            # Through the decimal text: Arrow's decimal-to-float cast is not correctly rounded.
            values = values.cast(pa.string())
        return values.cast(target, safe=False)
    if kind == "decimal":
        target = pa.decimal128(t.length, t.decimals) if t.length <= 38 else pa.decimal256(t.length, t.decimals)
        try:
            return values.cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            row, value = _first_failing(values, lambda v: _fits_decimal(v, t.length, t.decimals))
            raise BadValue(row, value, f"does not fit DECIMAL({t.length},{t.decimals})")
    if kind == "bit":
        return _bits(values, t.length)
    if kind == "enum":
        return _enum(values, t.elements)
    if kind == "set":
        return _set(values, t.elements)
    if kind == "date":
        return values
    if kind in ("datetime", "timestamp"):
        return _round_fsp(_wall_clock(values, kind, time_zone), t.fsp)
    if kind == "time":
        return _duration(values, t.fsp)
    if kind in STRING_KINDS:
        if t.binary:
            values = values.cast(pa.binary()) if not pa.types.is_binary(values.type) else values
            return _pad_binary(values, t.length) if kind == "char" else values
        if pa.types.is_binary(values.type) or pa.types.is_large_binary(values.type):
            try:
                values = values.cast(pa.string())
            except pa.ArrowInvalid:
                row, value = _first_failing(values, _is_utf8)
                raise BadValue(row, value, f"{t.short_name} needs UTF-8 text; declare it BINARY/VARBINARY/BLOB")
        # TiDB drops CHAR's trailing spaces when it reads a value.
        return pc.utf8_rtrim(values, " ") if kind == "char" else values
    if kind == "json":
        try:
            return json_column(values)
        except InvalidJSON as e:
            raise BadValue(e.row, e.document, e.problem) from None
    raise BadValue(0, None, f"unsupported MySQL type {t.full_name}")


def _pad_binary(values: pa.Array, length: int) -> pa.Array:
    """BINARY(n) holds exactly n bytes: TiDB pads shorter values with 0x00."""
    too_long = _first_true(pc.greater(pc.binary_length(values), length))
    if too_long is not None:
        raise BadValue(too_long, values[too_long].as_py(), f"is longer than BINARY({length})")
    if not pc.any(pc.less(pc.binary_length(values), length)).as_py():
        return values
    return pa.array([None if v is None else v.ljust(length, b"\0") for v in values.to_pylist()], pa.binary())


def _check_utf8(values: pa.Array) -> None:
    """Spark does not check that strings are UTF-8 (CAST(X'FF' AS STRING)); TiDB would refuse them."""
    try:
        values.validate(full=True)
    except pa.ArrowInvalid:
        row, value = _first_failing(values.cast(pa.binary()), _is_utf8)
        raise BadValue(row, value, "is not valid UTF-8 text") from None


def _is_utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def _fits_decimal(value, precision: int, scale: int) -> bool:
    exact = Decimal(value)
    return exact == round(exact, scale) and abs(exact) < Decimal(10) ** (precision - scale)


def _integers(values: pa.Array, t) -> pa.Array:
    low, high = t.int_bounds if t.kind != "year" else (0, 2155)
    target = pa.uint64() if t.unsigned else pa.int64()
    out_of_range = f"is out of range for {t.short_name} [{low}, {high}]"
    if pa.types.is_boolean(values.type):
        values = values.cast(pa.int8())
    if pa.types.is_decimal(values.type):
        try:
            values = values.cast(target)
        except pa.ArrowInvalid:
            row, value = _first_failing(values, lambda v: low <= v <= high and v == int(v))
            raise BadValue(row, value, out_of_range)
    elif t.unsigned:
        negative = _first_true(pc.less(values, 0))
        if negative is not None:
            raise BadValue(negative, values[negative].as_py(), out_of_range)
    values = values.cast(target)
    bad = _first_true(pc.or_(pc.less(values, pa.scalar(low, target)), pc.greater(values, pa.scalar(high, target))))
    if bad is not None:
        raise BadValue(bad, values[bad].as_py(), out_of_range)
    if t.kind == "year":
        bad = _first_true(pc.and_(pc.greater(values, 0), pc.less(values, 1901)))
        if bad is not None:
            raise BadValue(bad, values[bad].as_py(), "a YEAR is 0 or 1901..2155")
    return values


def _bits(values: pa.Array, width: int) -> pa.Array:
    limit = 2**width - 1
    if pa.types.is_binary(values.type):
        numbers = [None if v is None else int.from_bytes(v, "big") for v in values.to_pylist()]
        for i, v in enumerate(numbers):
            if v is not None and v > limit:
                raise BadValue(i, values[i].as_py(), f"has more than {width} bits for BIT({width})")
        return pa.array(numbers, pa.uint64())
    if pa.types.is_boolean(values.type):
        return values.cast(pa.uint64())
    if width == 64 and pa.types.is_int64(values.type):
        # A BIT(64) value with the top bit set arrives as a negative long.
        return pa.array(pc.fill_null(values, 0).to_numpy().view(np.uint64),
                        pa.uint64(), mask=values.is_null().to_numpy(zero_copy_only=False))
    return _unsigned_within(values, limit, f"does not fit BIT({width}) [0, {limit}]")


def _unsigned_within(values: pa.Array, limit: int, problem: str) -> pa.Array:
    """Integral values as uint64, each in [0, limit] (``problem`` names the rule otherwise)."""
    if not pa.types.is_unsigned_integer(values.type):
        negative = _first_true(pc.less(values, 0))
        if negative is not None:
            raise BadValue(negative, values[negative].as_py(), problem)
    try:
        unsigned = values.cast(pa.uint64())
    except pa.ArrowInvalid:
        row, value = _first_failing(values, lambda v: v == int(v) and 0 <= v <= limit)
        raise BadValue(row, value, problem)
    bad = _first_true(pc.greater(unsigned, pa.scalar(limit, pa.uint64())))
    if bad is not None:
        raise BadValue(bad, values[bad].as_py(), problem)
    return unsigned


def _member_indexes(values: pa.Array, elements: tuple[str, ...]) -> pa.Array:
    """0-based member positions of strings (case-insensitive, as MySQL compares them)."""
    return pc.index_in(pc.utf8_lower(values), value_set=pa.array([e.lower() for e in elements], pa.string()))


def _enum(values: pa.Array, elements: tuple[str, ...]) -> pa.Array:
    if pa.types.is_integer(values.type):
        return _unsigned_within(values, len(elements), f"an ENUM index is 0..{len(elements)}")
    # Trailing spaces do not count, as under MySQL's PAD SPACE collations (JDBC pads ENUMs read as CHAR(n)).
    values = pc.utf8_rtrim(values, " ")
    found = _member_indexes(values, elements)
    # '' is MySQL's error value (index 0) unless the ENUM declares it as a member.
    empty = pc.and_(pc.equal(values, string_scalar("")), pa.scalar("" not in elements, pa.bool_()))
    bad = _first_true(pc.and_(pc.is_null(found), pc.and_(pc.is_valid(values), pc.invert(empty))))
    if bad is not None:
        raise BadValue(bad, values[bad].as_py(), f"is not a member of ENUM{elements}")
    index = pc.add(found.cast(pa.uint64()), pa.scalar(1, pa.uint64()))
    return pc.if_else(empty, pa.scalar(0, pa.uint64()), index)


def _set(values: pa.Array, elements: tuple[str, ...]) -> pa.Array:
    if pa.types.is_integer(values.type):
        limit = 2 ** len(elements) - 1
        return _unsigned_within(values, limit, f"a SET bitmask of {len(elements)} members is 0..{limit}")
    members = pc.split_pattern(pc.fill_null(values, string_scalar("")), ",")
    flat = pc.utf8_trim_whitespace(pc.list_flatten(members))
    found = _member_indexes(flat, elements)
    unknown = pc.and_(pc.is_null(found), pc.not_equal(flat, string_scalar("")))
    bad_member = _first_true(unknown)
    if bad_member is not None:
        parents = pc.list_parent_indices(members).to_numpy()
        row = int(parents[bad_member])
        raise BadValue(row, values[row].as_py(), f"{flat[bad_member].as_py()!r} is not a member of SET{elements}")
    bits = np.where(found.is_null().to_numpy(zero_copy_only=False), 0,
                    np.left_shift(np.uint64(1), pc.fill_null(found, 0).to_numpy().astype(np.uint64)))
    offsets = members.offsets.to_numpy()
    sums = np.zeros(len(values), dtype=np.uint64)
    lengths = np.diff(offsets)
    nonempty = lengths > 0
    if len(bits):
        sums[nonempty] = np.bitwise_or.reduceat(bits.astype(np.uint64), offsets[:-1][nonempty])
    return pa.array(sums, pa.uint64(), mask=values.is_null().to_numpy(zero_copy_only=False))


def _wall_clock(values: pa.Array, kind: str, time_zone: str) -> pa.Array:
    """DATETIME: naive wall-clock time; TIMESTAMP: an instant in UTC.

    Zoned input becomes DATETIME as wall-clock time in ``time-zone``; naive input
    becomes TIMESTAMP by reading it as wall-clock time in ``time-zone``.
    """
    if pa.types.is_date(values.type):
        values = values.cast(pa.timestamp("us"))
    values = values.cast(pa.timestamp("us", tz=values.type.tz))
    zoned = values.type.tz is not None
    if kind == "datetime":
        return pc.local_timestamp(values.cast(pa.timestamp("us", tz=time_zone))) if zoned else values
    if not zoned:
        values = pc.assume_timezone(values, time_zone, ambiguous="earliest", nonexistent="earliest")
    return values.cast(pa.timestamp("us", tz="UTC"))


def _round_fsp(values: pa.Array, fsp: int) -> pa.Array:
    """Round to the column's fractional seconds, as MySQL does when it stores a value."""
    if fsp >= 6:
        return values
    unit = 10 ** (6 - fsp)
    micros = pc.fill_null(values.cast(pa.int64()), 0).to_numpy(zero_copy_only=False)
    rounded = np.floor_divide(micros + unit // 2, unit) * unit
    mask = values.is_null().to_numpy(zero_copy_only=False) if values.null_count else None
    return pa.array(rounded, pa.int64(), mask=mask).cast(values.type)


_TIME = r"^\s*(?P<sign>-?)(?P<h>\d{1,3}):(?P<m>\d{1,2}):(?P<s>\d{1,2})(?:\.(?P<f>\d{0,6}))?\s*$"
_MAX_TIME_US = (838 * 3600 + 59 * 60 + 59) * 1_000_000


def _duration(values: pa.Array, fsp: int) -> pa.Array:
    parts = pc.extract_regex(values, _TIME)
    bad = _first_true(pc.and_(pc.is_valid(values), pc.is_null(parts)))
    if bad is not None:
        raise BadValue(bad, values[bad].as_py(), "a TIME is [-]hh:mm:ss[.ffffff]")

    def number(name):
        return pc.fill_null(pc.struct_field(parts, name), string_scalar("0")).to_numpy(zero_copy_only=False)

    h, m, s = (np.array([int(x or 0) for x in number(n)], dtype=np.int64) for n in ("h", "m", "s"))
    fraction = np.array([int((x or "").ljust(6, "0")) for x in number("f")], dtype=np.int64)
    micros = ((h * 3600 + m * 60 + s) * 1_000_000) + fraction
    unit = 10 ** (6 - fsp)
    micros = (micros + unit // 2) // unit * unit
    bad_rows = np.flatnonzero((m > 59) | (s > 59) | (micros > _MAX_TIME_US))
    mask = values.is_null().to_numpy(zero_copy_only=False)
    bad_rows = bad_rows[~mask[bad_rows]]
    if len(bad_rows):
        row = int(bad_rows[0])
        raise BadValue(row, values[row].as_py(), "a TIME is within -838:59:59..838:59:59 with minutes and "
                                                   "seconds under 60")
    negative = pc.fill_null(pc.equal(pc.struct_field(parts, "sign"), string_scalar("-")), False)
    negative = negative.to_numpy(zero_copy_only=False)
    return pa.array(np.where(negative, -micros, micros), pa.int64(), mask=mask)
