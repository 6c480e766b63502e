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

import json
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
    """Go-style JSON string literals of a string array; nulls stay null.

    The characters to escape are looked up once in the array's data buffer;
    each one present costs one Arrow pass, and when many are present (binary
    data) the rows that need escaping are escaped one by one instead.
    """
    values = _as_string(values)
    present = _escapes_present(values)
    if len(present) > _MAX_ESCAPE_PASSES:
        needs = pc.fill_null(pc.match_substring_regex(values, _NEEDS_ESCAPE), False)
        escaped = [v.translate(_SCALAR_TABLE) for v in values.filter(needs).to_pylist()]
        values = pc.replace_with_mask(values, needs, pa.array(escaped, pa.string()))
    else:
        for raw, escaped in present:
            values = pc.replace_substring(values, raw, escaped)
    return pc.binary_join_element_wise('"', values, '"', "")


_MAX_ESCAPE_PASSES = 4
_ESCAPE_BYTES = [(raw.encode(), raw, escaped) for raw, escaped in _ESCAPES]


def _escapes_present(values: pa.Array) -> list[tuple[str, str]]:
    """The (character, escape) pairs whose character occurs in the array, in escaping order."""
    if len(values) == 0 or values.null_count == len(values):
        return []
    offsets = values.buffers()[1]
    first, last = np.frombuffer(offsets, dtype=np.int32)[[values.offset, values.offset + len(values)]]
    data = values.buffers()[2][first:last].to_pybytes() if last > first else b""
    return [(raw, escaped) for encoded, raw, escaped in _ESCAPE_BYTES if encoded in data]


def json_fragments(text: pa.Array, escape: bool = True) -> pa.Array:
    """JSON values of a string array: quoted literals, ``null`` for nulls.

    ``escape=False`` skips looking for characters to escape, for text known to have none.
    """
    quoted = quote_json_array(text) if escape else pc.binary_join_element_wise('"', _as_string(text), '"', "")
    return pc.fill_null(quoted, "null")


def _as_string(values: pa.Array) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if pa.types.is_large_string(values.type):
        return values.cast(pa.string())
    return values


def _byte_table(sequence_of) -> tuple[np.ndarray, np.ndarray]:
    """A 256-entry substitution table: the bytes each byte becomes, and their counts."""
    sequences = [sequence_of(b) for b in range(256)]
    width = max(len(x) for x in sequences)
    table = np.zeros((256, width), dtype=np.uint8)
    for b, x in enumerate(sequences):
        table[b, :len(x)] = np.frombuffer(x, dtype=np.uint8)
    return table, np.array([len(x) for x in sequences], dtype=np.int64)


def _latin1_json_byte(b: int) -> bytes:
    text = chr(b)
    return text.translate(_SCALAR_TABLE).encode("utf-8")


# Each byte as ISO-8859-1 text, escaped for the inside of a Go JSON string, in UTF-8.
_LATIN1_JSON = _byte_table(_latin1_json_byte)


def _substitute_bytes(values: pa.Array, table: tuple[np.ndarray, np.ndarray]) -> pa.Array:
    """Replace every byte of a binary array by its sequence in ``table``, over the whole buffer at once."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    values = values.cast(pa.large_binary()) if not pa.types.is_large_binary(values.type) else values
    if values.offset:
        values = pa.concat_arrays([values])  # a slice: rebuild it so that its buffers start at row 0
    if len(values) == 0:
        return pa.array([], pa.string())
    sequences, lengths = table
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int64)[: len(values) + 1]
    data = np.frombuffer(values.buffers()[2], dtype=np.uint8)[offsets[0]: offsets[-1]] \
        if values.buffers()[2] is not None else np.zeros(0, dtype=np.uint8)
    widths = lengths[data]
    positions = np.concatenate(([0], np.cumsum(widths)))
    out = np.empty(positions[-1], dtype=np.uint8)
    starts = positions[:-1]
    for k in range(sequences.shape[1]):
        chosen = widths > k
        out[starts[chosen] + k] = sequences[data[chosen], k]
    new_offsets = positions[offsets - offsets[0]].astype(np.int64)
    result = pa.LargeStringArray.from_buffers(
        len(values), pa.py_buffer(new_offsets), pa.py_buffer(out), values.buffers()[0], values.null_count)
    return result.cast(pa.string())


def latin1_json_fragments(values: pa.Array) -> pa.Array:
    """JSON string literals of bytes read as ISO-8859-1, escaped as Go does; ``null`` for nulls.

    Canal-JSON renders binary values this way (TiCDC's charmap.ISO8859_1 decoder).
    """
    inside = _substitute_bytes(values, _LATIN1_JSON)
    return pc.fill_null(pc.binary_join_element_wise('"', inside, '"', ""), "null")


def tidb_json_texts(documents: list[str]) -> list[str]:
    """JSON texts as TiDB prints them; raises ValueError for text that is not JSON.

    Python's C parser and printer (sorted keys, TiDB's separators) print most
    documents exactly as TiDB does, and parse a whole column in one call; a
    float that Python would print differently, a number beyond 64 bits, or a
    character the two escape differently sends the document through the exact
    (slower) path of ``tidb_json_text``.
    """
    check = _FastPathCheck()
    decoder = json.JSONDecoder(parse_float=check.float, parse_constant=_no_constant)
    source = "[" + ",".join(documents) + "]"
    try:
        values = decoder.decode(source)
    except ValueError:
        values = None  # some document is not JSON: find it below
    # A run of 19 digits may be a number beyond 64 bits, which TiDB reads as a double.
    long_number = _DIGIT_RUN in source.translate(_DIGITS)
    if values is None or len(values) != len(documents) or not check.ok or long_number:
        return [_tidb_json_text_of(document) for document in documents]
    texts = [_FAST_ENCODE(v) for v in values]
    printed = "".join(texts)
    if "\u2028" in printed or "\u2029" in printed:
        texts = [t.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029") for t in texts]
    if "\\b" in printed or "\\f" in printed or not _is_encodable(printed):
        texts = [tidb_json_text(v) for v in values]
    return texts


def _is_encodable(text: str) -> bool:
    """False when ``text`` holds a lone surrogate (which Go writes as U+FFFD)."""
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _tidb_json_text_of(document: str) -> str:
    return tidb_json_text(json.loads(document, parse_constant=_no_constant))


def _fast_encoder():
    """Python's C JSON printer with TiDB's separators and sorted keys (the Python one if C is missing)."""
    from json.encoder import c_make_encoder, encode_basestring

    if c_make_encoder is None:
        encoder = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(", ", ": "))
        return encoder.encode
    make = c_make_encoder(None, None, encode_basestring, None, ": ", ", ", True, False, True)
    return lambda value: "".join(make(value, 0))


_FAST_ENCODE = _fast_encoder()


class _FastPathCheck:
    """The float hook of json.loads: notes whether Python prints every float as TiDB does."""

    def __init__(self):
        self.ok = True

    def float(self, text: str) -> float:
        value = float(text)
        # Python's repr and Go's 'f' format agree on non-integral values in [1e-4, 1e16).
        if not (1e-4 <= abs(value) < 1e16) or value.is_integer():
            self.ok = False
        return value



_DIGITS = str.maketrans("0123456789", "1111111111")
_DIGIT_RUN = "1" * 19


def _no_constant(name: str):
    raise ValueError(f"JSON has no {name}")


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
    """Go ``'f'`` text of a float array; TiCDC's dispatchers hash NaN and infinities as 0.

    Arrow prints the shortest round-trip digits as Go does; only its exponent
    forms, ``nan`` and ``inf`` need Go's spelling, row by row.
    """
    if nan_as_zero:
        values = pc.if_else(pc.is_finite(values), values, pa.scalar(0, values.type))
    text = values.cast(pa.string())
    unusual = pc.fill_null(pc.match_substring_regex(text, "[en]"), False)
    if pc.any(unusual).as_py():
        fixed = [go_float_text(v, bits) for v in values.filter(unusual).to_pylist()]
        text = pc.replace_with_mask(text, unusual, pa.array(fixed, pa.string()))
    return text


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
    if values.type.tz is not None:
        values = pc.local_timestamp(values.cast(pa.timestamp("us", tz=time_zone)))
    micros, mask = _int_parts(values)
    seconds = np.floor_divide(micros, 1_000_000)
    text = pa.array(seconds, pa.int64(), mask=mask).cast(pa.timestamp("s")).cast(pa.string())
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
