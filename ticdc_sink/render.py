"""Rendering helpers shared by the codecs and the dispatchers, a column at a time.

TiCDC renders a value the same way in most places: integers in decimal,
floats as Go's shortest ``'f'`` text, decimals with their scale, date and time
values as TiDB prints them with the column's fsp, ENUM as its index, SET as
its bitmask, BIT as an unsigned number.  These functions take the canonical
Arrow arrays of a ``ChangeBatch`` (see ``changes.py``) and return Arrow string
arrays, so an encoder never loops over rows in Python for the common types.
JSON escaping follows Go's writers (easyjson/encoding/json): ``<``, ``>`` and
``&`` are escaped, as are control characters and U+2028/U+2029.
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .mysql_types import INTEGER_KINDS, MySQLType

# ---------------------------------------------------------------------------
# JSON strings

_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_OTHER_CONTROLS = [chr(c) for c in range(0x20) if chr(c) not in _SHORT_ESCAPES]
_ESCAPES = [("\\", "\\\\"), ('"', '\\"'), ("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
            ("\u2028", "\\u2028"), ("\u2029", "\\u2029"), *_SHORT_ESCAPES.items()]
_ESCAPES += [(c, f"\\u{ord(c):04x}") for c in _OTHER_CONTROLS]
_NEEDS_ESCAPE = "[\\x00-\\x1f\"\\\\<>&\u2028\u2029]"
_SCALAR_TABLE = str.maketrans(dict(_ESCAPES))


def quote_json(text: str) -> str:
    """One Go-style JSON string literal, quotes included."""
    return '"' + text.translate(_SCALAR_TABLE) + '"'


def quote_json_array(values: pa.Array) -> pa.Array:
    """Go-style JSON string literals of a string array; nulls stay null."""
    values = _as_string(values)
    if len(values) and pc.any(pc.match_substring_regex(values, _NEEDS_ESCAPE)).as_py():
        for raw, escaped in _ESCAPES:
            if pc.any(pc.match_substring(values, raw)).as_py():
                values = pc.replace_substring(values, raw, escaped)
    return pc.binary_join_element_wise('"', values, '"', "")


def json_fragments(text: pa.Array) -> pa.Array:
    """JSON values of a string array: quoted literals, ``null`` for nulls."""
    return pc.fill_null(quote_json_array(text), "null")


def _as_string(values: pa.Array) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if pa.types.is_large_string(values.type):
        return values.cast(pa.string())
    return values


def latin1_as_text(values: pa.Array) -> pa.Array:
    """Bytes read as ISO-8859-1 (each byte becomes U+0000..U+00FF), as UTF-8 text.

    Canal-JSON renders binary values this way (TiCDC's charmap.ISO8859_1
    decoder).  Bytes below 0x80 stay as they are; the others become two-byte
    UTF-8 sequences, computed over the whole buffer at once.
    """
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    values = values.cast(pa.large_binary()) if not pa.types.is_large_binary(values.type) else values
    if values.offset:
        values = pa.concat_arrays([values])  # a slice: rebuild it so that its buffers start at row 0
    if len(values) == 0:
        return pa.array([], pa.string())
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int64)[values.offset: values.offset + len(values) + 1]
    data = np.frombuffer(values.buffers()[2], dtype=np.uint8)[offsets[0]: offsets[-1]]
    offsets = offsets - offsets[0]
    high = data >= 0x80
    widths = 1 + high.astype(np.int64)
    out_positions = np.concatenate(([0], np.cumsum(widths)))
    out = np.empty(out_positions[-1], dtype=np.uint8)
    starts = out_positions[:-1]
    out[starts] = np.where(high, 0xC0 | (data >> 6), data)
    out[starts[high] + 1] = 0x80 | (data[high] & 0x3F)
    new_offsets = out_positions[offsets].astype(np.int64)
    result = pa.LargeStringArray.from_buffers(
        len(values), pa.py_buffer(new_offsets), pa.py_buffer(out), values.buffers()[0], values.null_count)
    return result.cast(pa.string())


def tidb_json_text(value) -> str:
    """A JSON document as TiDB prints a JSON column: keys sorted, ``", "`` and ``": "`` separators."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        if -(2**63) <= value < 2**64:
            return str(value)
        value = float(value)  # TiDB reads a number beyond 64 bits as a double
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"number {value} is out of range")
        return go_json_float_text(value)
    if isinstance(value, str):
        return _tidb_json_string(value)
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: kv[0].encode("utf-8"))
        return "{" + ", ".join(_tidb_json_string(k) + ": " + tidb_json_text(v) for k, v in items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(tidb_json_text(v) for v in value) + "]"
    raise TypeError(f"not a JSON value: {value!r}")


_TIDB_JSON_ESCAPES = str.maketrans(
    {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\u2028": "\\u2028",
     "\u2029": "\\u2029", **{chr(c): f"\\u{c:04x}" for c in range(0x20) if chr(c) not in "\n\r\t"}}
)
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _tidb_json_string(text: str) -> str:
    """A string in TiDB's JSON text; a lone surrogate becomes U+FFFD, as Go writes it."""
    return '"' + _LONE_SURROGATE.sub("\ufffd", text).translate(_TIDB_JSON_ESCAPES) + '"'


# ---------------------------------------------------------------------------
# Numbers

def go_json_float_text(value: float) -> str:
    """Go's ``encoding/json`` float text: shortest, exponent only below 1e-6 or from 1e21."""
    magnitude = abs(value)
    if magnitude != 0 and (magnitude < 1e-6 or magnitude >= 1e21):
        mantissa, _, exponent = repr(value).partition("e")
        digits = int(exponent.lstrip("+-"))
        return f"{mantissa}e-{digits}" if exponent.startswith("-") else f"{mantissa}e+{digits:02d}"
    return go_float_text(value, 64)


def go_float_text(value: float, bits: int) -> str:
    """Go's ``strconv.FormatFloat(v, 'f', -1, bits)``: shortest text, never an exponent."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    number = np.float32(value) if bits == 32 else np.float64(value)
    return np.format_float_positional(number, unique=True, trim="-")


def float_text(values: pa.Array, bits: int, nan_as_zero: bool = False) -> pa.Array:
    """Go ``'f'`` text of a float array; TiCDC's dispatchers hash NaN and infinities as 0."""
    floats = values.to_numpy(zero_copy_only=False)
    mask = values.is_null().to_numpy(zero_copy_only=False)
    if nan_as_zero:
        floats = np.where(np.isfinite(floats), floats, 0.0)
    texts = [None if m else go_float_text(v, bits) for v, m in zip(floats.tolist(), mask)]
    return pa.array(texts, pa.string())


def decimal_text(values: pa.Array) -> pa.Array:
    """TiDB's decimal text: all the scale's digits, never an exponent (Arrow writes 1E-8 for small scales)."""
    text = values.cast(pa.string())
    if len(text) and pc.any(pc.match_substring(text, "E")).as_py():
        text = pa.array([None if v is None else format(v, "f") for v in values.to_pylist()], pa.string())
    return text


# ---------------------------------------------------------------------------
# Date and time

def _int_parts(values: pa.Array) -> tuple[np.ndarray, np.ndarray | None]:
    """The int64 numbers of an array (nulls as 0) and its null mask."""
    numbers = pc.fill_null(values.cast(pa.int64()), 0).to_numpy(zero_copy_only=False)
    mask = values.is_null().to_numpy(zero_copy_only=False) if values.null_count else None
    return numbers, mask


def _fraction_text(fraction_us: np.ndarray, fsp: int, mask) -> pa.Array:
    digits = pa.array(fraction_us // 10 ** (6 - fsp), mask=mask).cast(pa.string())
    return pc.binary_join_element_wise(".", pc.utf8_lpad(digits, fsp, "0"), "")


def timestamp_text(values: pa.Array, fsp: int, time_zone: str | None) -> pa.Array:
    """``YYYY-MM-DD hh:mm:ss[.ffffff]`` with exactly ``fsp`` fraction digits.

    A zoned value is printed as wall-clock time in ``time_zone``; a naive one as it is.
    """
    micros, mask = _int_parts(values)
    seconds = np.floor_divide(micros, 1_000_000)
    zone = time_zone if values.type.tz is not None else None
    whole = pa.array(seconds, pa.int64(), mask=mask).cast(pa.timestamp("s", tz=zone))
    text = pc.strftime(whole, format="%Y-%m-%d %H:%M:%S")
    if fsp == 0:
        return text
    return pc.binary_join_element_wise(text, _fraction_text(micros - seconds * 1_000_000, fsp, mask), "")


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
    text = pc.binary_join_element_wise(sign, two(hours), ":", two(minutes), ":", two(secs), "")
    if fsp:
        fraction = magnitude - total_seconds * 1_000_000
        text = pc.binary_join_element_wise(text, _fraction_text(fraction, fsp, mask), "")
    return text


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
    return _as_string(values)
