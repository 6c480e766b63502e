"""JSON text of values and messages, as Go's writers print it (easyjson, encoding/json).

``<``, ``>`` and ``&`` are escaped, as are control characters and
U+2028/U+2029.  Values are rendered a column at a time into JSON fragments
(a quoted literal or ``null`` per row), and a message is the element-wise
concatenation of fragments and constant text, in one Arrow call.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..render import as_string

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
    values = as_string(values)
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
    quoted = quote_json_array(text) if escape else pc.binary_join_element_wise('"', as_string(text), '"', "")
    return pc.fill_null(quoted, "null")


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


# ---------------------------------------------------------------------------
# Assembly


def concat(parts: list, length: int) -> pa.Array:
    """Element-wise concatenation of string arrays and constant strings, in one Arrow call."""
    merged: list[Any] = []
    for part in parts:
        if isinstance(part, str) and merged and isinstance(merged[-1], str):
            merged[-1] += part  # adjacent constants become one argument
        else:
            merged.append(part)
    if len(merged) == 1 and isinstance(merged[0], str):
        return pa.repeat(pa.scalar(merged[0]), length)
    return pc.binary_join_element_wise(*merged, "")


def quoted_names_of(names: pa.Array) -> pa.Array | str:
    """JSON literals of per-row names (database, table): one constant when the batch has one name."""
    distinct = pc.unique(names)
    return quote_json(distinct[0].as_py()) if len(distinct) == 1 else quote_json_array(names)


def object_parts(quoted_names: list[str], fragments: list[pa.Array], opening: str = "{",
                 closing: str = "}") -> list:
    """The pieces of ``{"c1":v1,"c2":v2}`` per row, for ``concat``."""
    parts: list[Any] = []
    for i, (name, fragment) in enumerate(zip(quoted_names, fragments)):
        parts += [(opening if i == 0 else ",") + name + ":", fragment]
    parts.append(closing)
    return parts


def changed_members_object(quoted_names: list[str], new: list[pa.Array], old: list[pa.Array],
                           opening: str = "{", closing: str = "}") -> pa.Array:
    """``{"c":old,...}`` per row with only the members whose rendered value changed (TiCDC compares text)."""
    pieces = []
    for name, new_fragment, old_fragment in zip(quoted_names, new, old):
        piece = pc.binary_join_element_wise("," + name + ":", old_fragment, "")
        pieces.append(pc.if_else(pc.equal(new_fragment, old_fragment), "", piece))
    body = pc.utf8_slice_codeunits(pc.binary_join_element_wise(*pieces, ""), 1)
    return pc.binary_join_element_wise(opening, body, closing, "")
