"""JSON text of values and messages, as TiCDC's Go writers print it.

Three escaping styles exist (``style``).  ``HTML``: easyjson and goccy/go-json
escape ``<``, ``>``, ``&`` and U+2028/U+2029 besides quotes, backslashes and
control characters, those other than ``\\n \\r \\t`` as ``\\u00XX`` (Canal-JSON).
``GO_JSON``: Go's encoding/json since Go 1.22 does the same but writes ``\\b``
and ``\\f`` short too (Simple).  ``PLAIN``: jsoniter with ``EscapeHTML: false``
escapes only quotes, backslashes and control characters (the newer TiCDC's Open
Protocol, Debezium).  Values are rendered a column at a time into JSON fragments
(a literal or ``null`` per row), and a message is the element-wise concatenation
of fragments and constant text, in one Arrow call.
"""

from __future__ import annotations

import base64
import codecs
import re
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...table.text_join import go_quoted, join, json_literals, string_scalar
from ...table.value_text import as_string

HTML, GO_JSON, PLAIN = "html", "go-json", "plain"
_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_GO_SHORT_ESCAPES = {**_SHORT_ESCAPES, "\b": "\\b", "\f": "\\f"}
_HTML_ESCAPES = [("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                 ("\u2029", "\\u2029")]


def _escape_pairs(style: str) -> list[tuple[str, str]]:
    """(character, escape) pairs of one Go writer, in the order they are applied (backslash first)."""
    short = _GO_SHORT_ESCAPES if style == GO_JSON else _SHORT_ESCAPES
    pairs = [("\\", "\\\\"), ('"', '\\"'), *(_HTML_ESCAPES if style != PLAIN else []), *short.items()]
    return pairs + [(chr(c), f"\\u{c:04x}") for c in range(0x20) if chr(c) not in short]


_PAIRS = {style: _escape_pairs(style) for style in (HTML, GO_JSON, PLAIN)}
_TABLES = {style: str.maketrans(dict(pairs)) for style, pairs in _PAIRS.items()}
_PATTERNS = {style: "[" + "".join(f"\\x{{{ord(c):x}}}" for c, _ in pairs) + "]" for style, pairs in _PAIRS.items()}
_ESCAPE_BYTES = {style: [(raw.encode(), raw, escaped) for raw, escaped in pairs] for style, pairs in _PAIRS.items()}
_MAX_ESCAPE_PASSES = 4
_NULL = string_scalar("null")


def quote_json(text: str, style: str = HTML) -> str:
    """One Go-style JSON string literal, quotes included."""
    return '"' + text.translate(_TABLES[style]) + '"'


def quote_json_array(values: pa.Array, style: str = HTML) -> pa.Array:
    """Go-style JSON string literals of a string array; nulls stay null.

    The characters to escape are looked up once in the array's data buffer;
    each one present costs one Arrow pass, and when many are present (binary
    data) the rows that need escaping are escaped one by one instead.
    """
    values = as_string(values)
    present = _escapes_present(values, style)
    if len(present) > _MAX_ESCAPE_PASSES:
        needs = pc.fill_null(pc.match_substring_regex(values, _PATTERNS[style]), False)
        table = _TABLES[style]
        escaped = [v.translate(table) for v in values.filter(needs).to_pylist()]
        values = pc.replace_with_mask(values, needs, pa.array(escaped, pa.string()))
    else:
        for raw, escaped in present:
            values = pc.replace_substring(values, raw, escaped)
    return join('"', values, '"')


def _escapes_present(values: pa.Array, style: str) -> list[tuple[str, str]]:
    """The (character, escape) pairs whose character occurs in the array, in escaping order."""
    if len(values) == 0 or values.null_count == len(values):
        return []
    offsets = values.buffers()[1]
    first, last = np.frombuffer(offsets, dtype=np.int32)[[values.offset, values.offset + len(values)]]
    data = values.buffers()[2][first:last].to_pybytes() if last > first else b""
    return [(raw, escaped) for encoded, raw, escaped in _ESCAPE_BYTES[style] if encoded in data]


def json_fragments(text: pa.Array, escape: bool = True, style: str = HTML) -> pa.Array:
    """JSON values of a string array: quoted literals, ``null`` for nulls.

    ``escape=False`` skips looking for characters to escape, for text known to have none.
    """
    text = as_string(text)
    literals = json_literals(text, style if escape else None)
    if literals is not None:
        return literals
    quoted = quote_json_array(text, style) if escape else join('"', text, '"')
    return pc.fill_null(quoted, _NULL)


def bare_fragments(text: pa.Array) -> pa.Array:
    """JSON numbers from their text, ``null`` for nulls."""
    return pc.fill_null(as_string(text), _NULL)


def base64_fragments(values: pa.Array) -> pa.Array:
    """JSON strings of the standard base64 (padded) of each value's bytes; ``null`` for nulls.

    Each value is laid out from a multiple of three bytes, zero-filled to the next one, so that one
    ``b64encode`` of the whole buffer encodes every value on its own; the characters of the fill then
    become the padding.
    """
    values = _large_binary(values)
    if len(values) == 0:
        return pa.array([], pa.string())
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int64)[: len(values) + 1]
    lengths = np.diff(offsets)
    groups = (lengths + 2) // 3
    laid_out = np.concatenate(([0], np.cumsum(groups))) * 3
    data = _data_bytes(values, offsets)
    spread = np.zeros(laid_out[-1], dtype=np.uint8)
    spread[np.arange(len(data)) + np.repeat(laid_out[:-1] - (offsets[:-1] - offsets[0]), lengths)] = data
    text = np.frombuffer(base64.b64encode(spread.tobytes()), dtype=np.uint8).copy()
    ends = laid_out[1:] // 3 * 4
    remainder = lengths % 3
    text[ends[remainder > 0] - 1] = ord("=")
    text[ends[remainder == 1] - 2] = ord("=")
    encoded = pa.LargeStringArray.from_buffers(len(values), pa.py_buffer(np.concatenate(([0], ends))),
                                               pa.py_buffer(text), values.buffers()[0], values.null_count)
    return json_fragments(encoded.cast(pa.string()), escape=False)


def _large_binary(values: pa.Array) -> pa.Array:
    """A binary array as large_binary with its buffers starting at row 0 (one chunk, no slice offset)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if not pa.types.is_large_binary(values.type):
        values = values.cast(pa.large_binary())
    if values.offset:
        values = pa.concat_arrays([values])  # a slice: rebuild it so that its buffers start at row 0
    return values


def _data_bytes(values: pa.Array, offsets: np.ndarray) -> np.ndarray:
    """The bytes of a large_binary array's values, back to back."""
    if values.buffers()[2] is None:
        return np.zeros(0, dtype=np.uint8)
    return np.frombuffer(values.buffers()[2], dtype=np.uint8)[offsets[0]: offsets[-1]]


def go_quote_body(data: bytes) -> str:
    """Go's ``strconv.Quote(string(data))`` without its outer quotes.

    Printable runes stay, ``"`` and ``\\`` get a backslash, ``\\a\\b\\f\\n\\r\\t\\v`` their
    short escapes, other control bytes and invalid UTF-8 bytes ``\\xNN``, other
    unprintable runes ``\\uNNNN``/``\\UNNNNNNNN`` (Python's ``isprintable`` and Go's
    ``IsPrint`` agree on what is printable).  One translation does all but the
    last kind, which is rare and goes rune by rune.
    """
    quoted = data.decode("utf-8", "surrogateescape").translate(_GO_QUOTE_TABLE)
    return quoted if quoted.isprintable() else _go_quote_runes(data)


def _go_quote_runes(data: bytes) -> str:
    out = []
    for ch in data.decode("utf-8", "surrogateescape"):
        code = ord(ch)
        if code in _GO_QUOTE_TABLE:
            out.append(_GO_QUOTE_TABLE[code])
        elif ch.isprintable():
            out.append(ch)
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return "".join(out)


# Characters that strconv.Quote escapes by a table: quotes, backslash, ASCII controls, and
# invalid UTF-8 bytes (decoded with surrogateescape as U+DC80..U+DCFF).
_GO_QUOTE_TABLE = {
    **{c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F]},
    **{ord(k): v for k, v in {'"': '\\"', "\\": "\\\\", "\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n",
                               "\r": "\\r", "\t": "\\t", "\v": "\\v"}.items()},
    **{0xDC00 + b: f"\\x{b:02x}" for b in range(0x80, 0x100)},
}


_GO_ESCAPE = re.compile(r'\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[abfnrtv\\"\'])')
_GO_SHORT = {"a": b"\a", "b": b"\b", "f": b"\f", "n": b"\n", "r": b"\r", "t": b"\t", "v": b"\v", "\\": b"\\",
             '"': b'"', "'": b"'"}


def go_unquote_body(text: str) -> bytes:
    """The bytes that Go's ``strconv.Quote`` body ``text`` stands for."""
    if "\\u" not in text and "\\U" not in text:
        # Only byte escapes (\xNN, \n, \\, ...), which Python's own byte-escape decoder reads the same, in C.
        return codecs.escape_decode(text.encode("utf-8"))[0]
    out, position = [], 0
    for match in _GO_ESCAPE.finditer(text):
        out.append(text[position:match.start()].encode("utf-8"))
        escape = match.group(1)
        if escape[0] == "x":
            out.append(bytes([int(escape[1:], 16)]))
        elif escape[0] in "uU":
            out.append(chr(int(escape[1:], 16)).encode("utf-8"))
        else:
            out.append(_GO_SHORT[escape])
        position = match.end()
    out.append(text[position:].encode("utf-8"))
    return b"".join(out)


def go_quoted_fragments(values: pa.Array, style: str = HTML) -> pa.Array:
    """JSON strings of ``go_quote_body`` of each binary value (Open Protocol's BINARY/VARBINARY).

    Values of printable ASCII without quotes or backslashes are their own body
    and are taken as they are; only the others are quoted row by row.
    """
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    text = go_quoted(values)
    if text is not None:
        return json_fragments(text, style=style)
    plain = pc.fill_null(pc.match_substring_regex(values, '^[\\x20-\\x21\\x23-\\x5b\\x5d-\\x7e]*$'), True)
    if pc.all(plain).as_py():
        text = values.cast(pa.string())
    else:
        quoted = pa.array([go_quote_body(v) for v in values.filter(pc.invert(plain)).to_pylist()], pa.string())
        text = pc.replace_with_mask(pc.if_else(plain, values, pa.scalar(b"", values.type)).cast(pa.string()),
                                    pc.invert(plain), quoted)
    return json_fragments(text, style=style)


def _byte_table(sequence_of) -> tuple[np.ndarray, np.ndarray]:
    """A 256-entry substitution table: the bytes each byte becomes, and their counts."""
    sequences = [sequence_of(b) for b in range(256)]
    width = max(len(x) for x in sequences)
    table = np.zeros((256, width), dtype=np.uint8)
    for b, x in enumerate(sequences):
        table[b, :len(x)] = np.frombuffer(x, dtype=np.uint8)
    return table, np.array([len(x) for x in sequences], dtype=np.int64)


def _latin1_json_byte(b: int) -> bytes:
    return chr(b).translate(_TABLES[HTML]).encode("utf-8")


# Each byte as ISO-8859-1 text, escaped for the inside of a Go JSON string, in UTF-8.
_LATIN1_JSON = _byte_table(_latin1_json_byte)


def _substitute_bytes(values: pa.Array, table: tuple[np.ndarray, np.ndarray]) -> pa.Array:
    """Replace every byte of a binary array by its sequence in ``table``, over the whole buffer at once."""
    values = _large_binary(values)
    if len(values) == 0:
        return pa.array([], pa.string())
    sequences, lengths = table
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int64)[: len(values) + 1]
    data = _data_bytes(values, offsets)
    widths = lengths[data]
    positions = np.zeros(len(data) + 1, dtype=np.int64)
    np.cumsum(widths, out=positions[1:])
    out = np.empty(positions[-1], dtype=np.uint8)
    starts = positions[:-1]
    out[starts] = sequences[data, 0]
    # Most bytes become one byte; each further pass only visits the bytes whose sequence is that long.
    wide = np.flatnonzero(widths > 1)
    for k in range(1, sequences.shape[1]):
        if k > 1:
            wide = wide[widths[wide] > k]
        out[starts[wide] + k] = sequences[data[wide], k]
    new_offsets = positions[offsets - offsets[0]]
    result = pa.LargeStringArray.from_buffers(
        len(values), pa.py_buffer(new_offsets), pa.py_buffer(out), values.buffers()[0], values.null_count)
    return result.cast(pa.string())


def latin1_json_fragments(values: pa.Array) -> pa.Array:
    """JSON string literals of bytes read as ISO-8859-1, escaped as Go does; ``null`` for nulls.

    Canal-JSON renders binary values this way (TiCDC's charmap.ISO8859_1 decoder).
    """
    inside = _substitute_bytes(values, _LATIN1_JSON)
    return pc.fill_null(join('"', inside, '"'), _NULL)


def concat(parts: list, length: int) -> pa.Array:
    """Element-wise concatenation of string arrays and constant strings, in one Arrow call."""
    merged: list[Any] = []
    for part in parts:
        if isinstance(part, str) and merged and isinstance(merged[-1], str):
            merged[-1] += part  # adjacent constants become one argument
        else:
            merged.append(part)
    if len(merged) == 1 and isinstance(merged[0], str):
        return pa.repeat(string_scalar(merged[0]), length)
    return join(*merged)


def quoted_names_of(names: pa.Array, style: str = HTML) -> pa.Array | str:
    """JSON literals of per-row names (database, table): one constant when the batch has one name."""
    distinct = pc.unique(names)
    return quote_json(distinct[0].as_py(), style) if len(distinct) == 1 else quote_json_array(names, style)


def object_parts(heads: list[str], fragments: list[pa.Array], opening: str = "{", closing: str = "}",
                 tail: str = "") -> list:
    """The pieces of ``{head1 v1 tail,head2 v2 tail}`` per row, for ``concat``.

    A head is a member's ``"name":`` and whatever its value follows
    (``"name":{"t":3,"v":`` with the tail ``}``, for Open Protocol's column objects).
    """
    parts: list[Any] = []
    for i, (head, fragment) in enumerate(zip(heads, fragments)):
        parts += [(tail + "," if i else opening) + head, fragment]
    parts.append(tail + closing if parts else opening + closing)
    return parts


def changed_members_object(heads: list[str], new: list[pa.Array], old: list[pa.Array], opening: str = "{",
                           closing: str = "}", tail: str = "") -> pa.Array:
    """``{head old tail,...}`` per row with only the members whose rendered value changed (TiCDC compares values)."""
    pieces = []
    for head, new_fragment, old_fragment in zip(heads, new, old):
        piece = join("," + head, old_fragment, tail)
        pieces.append(pc.if_else(pc.equal(new_fragment, old_fragment), string_scalar(""), piece))
    body = pc.utf8_slice_codeunits(join(*pieces), 1)
    return join(opening, body, closing)
