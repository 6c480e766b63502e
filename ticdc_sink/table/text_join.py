"""Element-wise concatenation of string arrays and constant strings: how every encoder builds its text.

A JSON message is tens of fragments per row, and Arrow's ``binary_join_element_wise`` makes a pass over its
output per call.  Where ticdc-sink-native is installed (``native/``), its ``_text_join`` writes each row once,
from the parts' buffers; it gives the same array, byte for byte and null for null (a row with a null part is
null), and Arrow does whatever it does not take (other types than ``string``, chunked arrays, only constants,
over 2 GiB), with Arrow's result or error.  ``json_literals`` (a column's JSON strings: escaped, quoted, ``null``
for nulls) and ``go_quoted`` (binary values as Go quotes them) are its one-pass renderings of a column for
``codec/shared/json_text.py``, which renders them itself where they give None; ``plain_tidb_json`` is its one-pass
recognition of the JSON documents that ``changes/tidb_json.py`` can keep as they are.
"""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..arrow_buffers import buffer_addresses

try:
    from ticdc_sink_native import _text_join as _native
except ImportError:  # the package is optional; without it, Arrow joins
    _native = None


@functools.lru_cache(maxsize=1024)
def string_scalar(constant: str) -> pa.Scalar:
    """An Arrow string scalar: a Python str handed to a compute function costs a type inference
    (about 0.2 ms each, pyarrow trying an optional import), which adds up over a batch's many calls."""
    return pa.scalar(constant, pa.string())


def join(*parts) -> pa.Array:
    """Element-wise concatenation of string arrays and constant strings."""
    if _native is not None:
        joined = _native_join(parts)
        if joined is not None:
            return joined
    return arrow_join(*parts)


def arrow_join(*parts) -> pa.Array:
    """``join`` by Arrow's kernel alone (what runs without ticdc-sink-native)."""
    return pc.binary_join_element_wise(*(string_scalar(p) if isinstance(p, str) else p for p in parts),
                                       string_scalar(""))


def json_literals(values: pa.Array, style: str | None) -> pa.Array | None:
    """Each value as a JSON string, ``null`` for a null: escaped in ``style`` (``json_text``'s HTML, GO_JSON or
    PLAIN; None: as it is) between double quotes; by the native part in one pass, or None where it is not
    installed or does not take ``values`` (the caller builds them with Arrow)."""
    if _native is None or not isinstance(values, pa.Array) or values.type != pa.string():
        return None
    return _string_array(len(values), _native.json_literals(buffer_addresses(values, large=False), len(values),
                                                            style, pa.allocate_buffer))


def go_quoted(values: pa.Array) -> pa.Array | None:
    """Each binary value as Go's ``strconv.Quote`` writes it, without the quotes (``json_text.go_quote_body``), a
    null staying null; by the native part in one pass, or None where it is not installed or does not take
    ``values`` (the caller quotes them in Python)."""
    if _native is None or not isinstance(values, pa.Array) or values.type not in (pa.binary(), pa.large_binary()):
        return None
    return _string_array(len(values), _native.go_quoted(
        buffer_addresses(values, large=values.type == pa.large_binary()), len(values), pa.allocate_buffer))


def plain_tidb_json(documents: pa.Array) -> np.ndarray | None:
    """True where a document of a string array is of a plain shape and in TiDB's JSON text already (false for
    nulls), as ``tidb_json``'s regular expressions decide; by the native part in one pass, or None where it is not
    installed or does not take ``documents``."""
    if _native is None or not isinstance(documents, pa.Array) or documents.type != pa.string():
        return None
    plain = _native.plain_tidb_json(buffer_addresses(documents, large=False), len(documents))
    return np.frombuffer(plain, dtype=np.bool_).copy()


@functools.lru_cache(maxsize=4096)
def _constant(text: str) -> bytes:
    return text.encode()


def _native_join(parts: tuple) -> pa.Array | None:
    """The native join's string array, or None for what it does not take."""
    arguments, length = [], None
    for part in parts:
        if isinstance(part, str):
            arguments.append(_constant(part))
            continue
        if not isinstance(part, pa.Array) or part.type != pa.string():
            return None
        if length is None:
            length = len(part)
        elif len(part) != length:
            return None  # Arrow's error
        arguments.append(buffer_addresses(part, large=False))
    if length is None:
        return None
    # ``parts`` holds the arrays meanwhile
    return _string_array(length, _native.join(tuple(arguments), length, pa.allocate_buffer))


def _string_array(length: int, made: tuple | None) -> pa.Array | None:
    """The string array of a native function's (offsets, data, validity, null_count); None stays None (past
    2 GiB: the caller's other way does it)."""
    if made is None:
        return None
    offsets, data, validity, null_count = made
    return pa.StringArray.from_buffers(length, offsets, data, validity, null_count)
