"""TiCDC's text of a value, shared by the codecs and the dispatchers, a column at a time.

TiCDC renders a value the same way in most places: integers in decimal,
floats as Go's shortest ``'f'`` text, decimals with their scale, date and time
values as TiDB prints them with the column's fsp, ENUM as its index, SET as
its bitmask, BIT as an unsigned number.  These functions take the canonical
Arrow arrays of a ``ChangeBatch`` (``changes/contract.py``) and return Arrow string
arrays, so an encoder never loops over rows in Python for the common types.
How a protocol then writes the text (JSON strings, ...) lives in ``codec/``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..tso import TSO_LOGICAL_BITS
from .mysql_types import INTEGER_KINDS, MySQLType
from .text_join import join, string_scalar

# ---------------------------------------------------------------------------
# Numbers

def go_float_text(value: float, bits: int) -> str:
    """Go's ``strconv.FormatFloat(v, 'f', -1, bits)``: shortest text, never an exponent."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    number = np.float32(value) if bits == 32 else np.float64(value)
    return np.format_float_positional(number, unique=True, trim="-")


def float_text(values: pa.Array, bits: int, nan_as_zero: bool = False) -> pa.Array:
    """Go ``'f'`` text of a float array; TiCDC's dispatchers hash NaN and infinities as 0.

    Arrow prints the shortest round-trip digits as Go does; only its exponent
    forms, ``nan`` and ``inf`` need Go's spelling, row by row.
    """
    if nan_as_zero:
        values = pc.if_else(pc.is_finite(values), values, pa.scalar(0, values.type))
    return _respell_arrow_exponents(values, lambda v: go_float_text(v, bits))


# Go's JSON writers switch to the exponent form for magnitudes outside [1e-6, 1e21).
_JSON_PLAIN_FROM, _JSON_PLAIN_BELOW = 1e-6, 1e21


def go_json_float_text(value: float, bits: int) -> str:
    """A finite float as Go's JSON writers print it: ``'f'`` text, but the shortest exponent
    form below 1e-6 and from 1e21, with ``e-07`` cut to ``e-7``."""
    number = np.float32(value) if bits == 32 else np.float64(value)
    low, high = (np.float32(_JSON_PLAIN_FROM), np.float32(_JSON_PLAIN_BELOW)) if bits == 32 \
        else (_JSON_PLAIN_FROM, _JSON_PLAIN_BELOW)
    if number == 0 or low <= abs(number) < high:
        return go_float_text(value, bits)
    text = np.format_float_scientific(number, unique=True, trim="-", exp_digits=2)
    if text[-4:-1] == "e-0":
        text = text[:-2] + text[-1]
    return text


def float_json_numbers(values: pa.Array, bits: int) -> pa.Array:
    """JSON numbers of a float array as Go prints them (``go_json_float_text``); NaN and infinities as 0,
    which TiCDC writes in their place.  Every magnitude Go's JSON writes with an exponent, Arrow does too,
    so the rows to respell are the same as ``float_text``'s."""
    finite = pc.if_else(pc.is_finite(values), values, pa.scalar(0, values.type))
    return _respell_arrow_exponents(finite, lambda v: go_json_float_text(v, bits))


# Arrow prints plain digits for magnitudes in [1e-6, 1e10); rows inside this narrower range are not looked at.
_ARROW_PLAIN_FROM, _ARROW_PLAIN_BELOW = 1e-5, 1e9


def _respell_arrow_exponents(values: pa.Array, spell) -> pa.Array:
    """Arrow's text of a float array, with ``spell(value)`` in place of its exponent forms, ``nan`` and ``inf``."""
    text = values.cast(pa.string())
    magnitude = np.abs(values.to_numpy(zero_copy_only=False).astype(np.float64))  # NaN for nulls
    with np.errstate(invalid="ignore"):
        rows = np.flatnonzero((magnitude != 0) & ~((magnitude >= _ARROW_PLAIN_FROM) & (magnitude < _ARROW_PLAIN_BELOW)))
    if rows.size:
        spelled = pc.fill_null(pc.match_substring_regex(text.take(pa.array(rows)), "[en]"), False)
        rows = rows[spelled.to_numpy(zero_copy_only=False)]
    if not rows.size:
        return text
    fixed = [spell(v) for v in values.take(pa.array(rows)).to_pylist()]
    mask = np.zeros(len(text), dtype=bool)
    mask[rows] = True
    return pc.replace_with_mask(text, pa.array(mask), pa.array(fixed, pa.string()))


def decimal_text(values: pa.Array) -> pa.Array:
    """TiDB's decimal text: all the scale's digits, never an exponent (Arrow writes 1E-8 for small scales)."""
    text = values.cast(pa.string())
    if len(text) and pc.any(pc.match_substring(text, "E")).as_py():
        text = pa.array([None if v is None else format(v, "f") for v in values.to_pylist()], pa.string())
    return text


def null_mask(values: pa.Array) -> np.ndarray | None:
    """True where an array is null, for ``pa.array(..., mask=)``; None when it has no nulls."""
    return values.is_null().to_numpy(zero_copy_only=False) if values.null_count else None


# ---------------------------------------------------------------------------
# Date and time

def _int_parts(values: pa.Array) -> tuple[np.ndarray, np.ndarray | None]:
    """The int64 numbers of an array (nulls as 0) and its null mask."""
    return pc.fill_null(values.cast(pa.int64()), 0).to_numpy(zero_copy_only=False), null_mask(values)


def _fraction_text(fraction_us: np.ndarray, fsp: int, mask) -> pa.Array:
    digits = pa.array(fraction_us // 10 ** (6 - fsp), mask=mask).cast(pa.string())
    return join(".", pc.utf8_lpad(digits, fsp, "0"))


def timestamp_text(values: pa.Array, fsp: int, time_zone: str | None, separator: str = " ",
                   suffix: str = "") -> pa.Array:
    """``YYYY-MM-DD hh:mm:ss[.ffffff]`` with exactly ``fsp`` fraction digits (then ``suffix``).

    A zoned value is printed as wall-clock time in ``time_zone``; a naive one as it is.  ``separator``
    parts the date from the time (ISO 8601's ``T`` for Debezium).
    """
    if values.type.tz is not None:
        values = pc.local_timestamp(values.cast(pa.timestamp("us", tz=time_zone)))
    micros, mask = _int_parts(values)
    seconds = np.floor_divide(micros, 1_000_000)
    whole = pa.array(seconds, pa.int64(), mask=mask).cast(pa.timestamp("s")).cast(pa.string())
    if len(whole) == 0 or (fsp == 0 and separator == " " and not suffix):
        return whole
    fraction = micros - seconds * 1_000_000
    valid = ~mask if mask is not None else np.ones(len(whole), dtype=bool)
    offsets = np.frombuffer(whole.buffers()[1], dtype=np.int32)[: len(whole) + 1]
    if np.array_equal(np.diff(offsets), np.where(valid, _WHOLE_SECONDS_WIDTH, 0)):
        return _fixed_width_timestamps(whole, valid, fraction[valid], fsp, separator, suffix)
    text = join(whole, _fraction_text(fraction, fsp, mask), suffix) if fsp else join(whole, suffix)
    return pc.replace_substring(text, " ", separator, max_replacements=1) if separator != " " else text


_WHOLE_SECONDS_WIDTH = len("YYYY-MM-DD hh:mm:ss")


def _fixed_width_timestamps(whole: pa.Array, valid: np.ndarray, fraction: np.ndarray, fsp: int, separator: str,
                            suffix: str) -> pa.Array:
    """``whole[.fraction]suffix`` per valid row, when every whole-second text has the same width (years 1 to
    9999): the rows are then a matrix of bytes filled a column at a time, not strings joined."""
    tail = ("." if fsp else "") + "0" * fsp + suffix
    width = _WHOLE_SECONDS_WIDTH + len(tail)
    text = np.empty((len(fraction), width), dtype=np.uint8)
    if len(fraction):
        text[:, :_WHOLE_SECONDS_WIDTH] = np.frombuffer(whole.buffers()[2], dtype=np.uint8)[
            : len(fraction) * _WHOLE_SECONDS_WIDTH].reshape(-1, _WHOLE_SECONDS_WIDTH)
    text[:, _WHOLE_SECONDS_WIDTH:] = np.frombuffer(tail.encode(), dtype=np.uint8)
    text[:, len("YYYY-MM-DD")] = ord(separator)
    digits = fraction // 10 ** (6 - fsp)
    for place in range(fsp):
        text[:, width - len(suffix) - 1 - place] = ord("0") + digits % 10
        digits = digits // 10
    offsets = np.concatenate(([0], np.cumsum(np.where(valid, width, 0)))).astype(np.int32)
    return pa.StringArray.from_buffers(len(whole), pa.py_buffer(offsets), pa.py_buffer(text), whole.buffers()[0],
                                       whole.null_count)


def duration_text(values: pa.Array, fsp: int) -> pa.Array:
    """TiDB's TIME text ``[-]hh:mm:ss[.fff]`` from signed microseconds."""
    micros, mask = _int_parts(values)
    magnitude = np.abs(micros)
    total_seconds = magnitude // 1_000_000
    hours, rest = np.divmod(total_seconds, 3600)
    minutes, secs = np.divmod(rest, 60)

    def two(numbers):
        return pc.utf8_lpad(pa.array(numbers, mask=mask).cast(pa.string()), 2, "0")

    sign = pa.array(np.where(micros < 0, "-", ""), pa.string())
    clock = join(sign, two(hours), ":", two(minutes), ":", two(secs))
    if fsp:
        fraction = magnitude - total_seconds * 1_000_000
        clock = join(clock, _fraction_text(fraction, fsp, mask))
    return clock


def at_rows(base: pa.Array | str, rows: np.ndarray, values: pa.Array, n: int) -> pa.Array:
    """``values`` (one per True of the mask ``rows``) in place of ``base`` (an array, or a constant for all
    ``n`` rows): how codecs put what only some rows have (an update's old values) into per-row fragments."""
    if isinstance(base, str):
        base = pa.repeat(string_scalar(base), n)
    return pc.replace_with_mask(base, pa.array(rows), values)


def physical_ms_text(commit_ts: np.ndarray) -> pa.Array:
    """The physical milliseconds of each TSO (``commit ts >> 18``) as text."""
    return pa.array(commit_ts >> np.uint64(TSO_LOGICAL_BITS)).cast(pa.string())


def as_string(values: pa.Array) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if pa.types.is_large_string(values.type):
        return values.cast(pa.string())
    return values



# ---------------------------------------------------------------------------
# BIT values as bytes

def bit_bytes(values: pa.Array, width: int, byte_order: str) -> pa.Array:
    """BIT values (uint64) as exactly ``width`` bytes each, in ``byte_order`` ``"big"`` (Avro) or
    ``"little"`` (Debezium); nulls stay null."""
    numbers = pc.fill_null(values, 0).to_numpy(zero_copy_only=False).astype(">u8" if byte_order == "big" else "<u8")
    data = numbers.view(np.uint8).reshape(len(numbers), 8)
    data = data[:, 8 - width:] if byte_order == "big" else data[:, :width]
    fixed = pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), len(numbers), [None, pa.py_buffer(data.tobytes())])
    return pc.if_else(values.is_null(), pa.scalar(None, pa.binary()), fixed.cast(pa.binary()))


# ---------------------------------------------------------------------------
# ENUM and SET by name

def enum_names(values: pa.Array, elements: tuple[str, ...]) -> pa.Array:
    """The member name of each ENUM index (index 0, MySQL's error value, is ``''``)."""
    return pa.array(("", *elements), pa.string()).take(values)


def set_names(values: pa.Array, elements: tuple[str, ...]) -> pa.Array:
    """The member names of each SET bitmask, in definition order, joined by commas."""
    bits = pc.fill_null(values, 0).to_numpy(zero_copy_only=False).astype(np.uint64)
    members = [pa.array(np.where(bits >> np.uint64(i) & np.uint64(1), f"{name},", ""), pa.string())
               for i, name in enumerate(elements)]
    listed = join(*members) if members else pa.repeat(string_scalar(""), len(values))
    names = pc.utf8_slice_codeunits(listed, 0, -1)  # the last member's comma
    return pc.if_else(values.is_null(), pa.scalar(None, pa.string()), names)


# ---------------------------------------------------------------------------
# Any column

def value_text(values: pa.Array, mysql_type: MySQLType, time_zone: str = "UTC",
               nan_as_zero: bool = False) -> pa.Array:
    """TiCDC's text of every value of a canonical column (nulls stay null).

    Binary-charset strings come back as a binary array of the raw bytes: how
    they are shown (ISO-8859-1, base64, quoted) is each protocol's choice.
    """
    kind = mysql_type.kind
    if kind in INTEGER_KINDS or kind in ("year", "bit", "enum", "set"):
        return values.cast(pa.string())
    if kind in ("float", "double"):
        return float_text(values, 32 if kind == "float" else 64, nan_as_zero)
    if kind == "decimal":
        return decimal_text(values)
    if kind == "date":
        return values.cast(pa.string())
    if kind in ("datetime", "timestamp"):
        return timestamp_text(values, mysql_type.fsp, time_zone)
    if kind == "time":
        return duration_text(values, mysql_type.fsp)
    if mysql_type.binary:
        return values
    return as_string(values)
