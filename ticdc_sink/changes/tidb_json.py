"""JSON column values as TiDB prints them: the canonical form of the input contract's JSON columns.

TiDB prints a JSON document with keys sorted (bytewise), ``", "`` and ``": "``
separators and Go's float text; the sink normalises every JSON value of its
input to that text once, so codecs and dispatchers see what TiCDC sees.
"""

from __future__ import annotations

import gc
import json
import re
from contextlib import contextmanager

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..table.text_join import plain_tidb_json
from ..table.value_text import go_float_text


class InvalidJSON(ValueError):
    """A document of a JSON column that is not one JSON value TiDB can hold; ``problem`` says so for a user."""

    def __init__(self, row: int, document: str | None, reason: str, problem: str | None = None):
        super().__init__(reason)
        self.row, self.document, self.reason = row, document, reason
        self.problem = problem or f"is not valid JSON ({reason})"


def json_column(values: pa.Array) -> pa.Array:
    """TiDB's JSON text of a JSON column given as JSON strings, or as Spark arrays, maps and structs."""
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        return tidb_json_column(values)
    convert = _json_converter(values.type)
    try:
        texts = [tidb_json_text(convert(v)) for v in values.drop_null().to_pylist()]
    except ValueError as e:
        raise InvalidJSON(0, None, str(e), f"holds a value JSON cannot ({e})") from None
    if not values.null_count:
        return pa.array(texts, pa.string())
    result = pa.array([None] * len(values), pa.string())
    return pc.replace_with_mask(result, values.is_valid(), pa.array(texts, pa.string()))


def tidb_json_column(documents: pa.Array) -> pa.Array:
    """A column of JSON texts as TiDB prints them, nulls kept; raises InvalidJSON naming the first bad row.

    Documents that Arrow's regular expressions prove to be in TiDB's text
    already (``_plain_in_tidb_text``) are kept without being parsed; the rest
    are parsed and printed by ``tidb_json_texts``.  When all are, the column
    comes back as it came in.
    """
    documents = documents.cast(pa.string())
    redo = ~_plain_in_tidb_text(documents) & documents.is_valid().to_numpy(zero_copy_only=False)
    if not redo.any():
        return documents
    rows = np.flatnonzero(redo)
    present = documents.take(rows).to_pylist()
    try:
        texts = tidb_json_texts(present)
        if texts is present:  # in TiDB's text too, just not of a plain shape
            return documents
    except ValueError:
        for row, document in zip(rows.tolist(), present):  # the slow path of an error: find the row
            try:
                tidb_json_texts([document])
            except ValueError as e:
                raise InvalidJSON(row, document, str(e)) from None
        raise
    return pc.replace_with_mask(documents, pa.array(redo), pa.array(texts, pa.string()))


# Documents of a few plain shapes can be proved to be in TiDB's text by a regular expression (Arrow's RE2,
# linear in the text) instead of a parse and a print: a scalar, an array of scalars, or an object whose
# members are scalars or arrays of scalars; strings without escapes and without U+2028 and U+2029 (which
# TiDB escapes), integers of at most 18 digits (so within 64 bits; "-0" is TiDB's 0) and no floats (whose text is
# Go's); TiDB's ", " and ": " separators and nothing else between tokens.  An object's keys must also be
# in strictly ascending byte order (TiDB sorts them; a key twice is one key).  Any other document is
# parsed and printed.
_STRING = r'"[^"\\\x00-\x1f\x{2028}\x{2029}]*"'
_INTEGER = "(?:0|-?[1-9][0-9]{0,17})"
_SCALAR = f"(?:{_STRING}|{_INTEGER}|true|false|null)"
_ARRAY = rf"\[(?:{_SCALAR}(?:, {_SCALAR})*)?\]"
_MEMBER_VALUE = f"(?:{_SCALAR}|{_ARRAY})"
_MEMBER = f"{_STRING}: {_MEMBER_VALUE}"
_PLAIN_DOCUMENT = rf"^(?:{_MEMBER_VALUE}|\{{(?:{_MEMBER}(?:, {_MEMBER})*)?\}})$"


def _plain_in_tidb_text(documents: pa.StringArray) -> np.ndarray:
    """True where a document is of a plain shape and provably in TiDB's text (false for nulls)."""
    plain = plain_tidb_json(documents)  # the same decision in one pass, where ticdc-sink-native is installed
    return plain if plain is not None else _arrow_plain_in_tidb_text(documents)


def _arrow_plain_in_tidb_text(documents: pa.StringArray) -> np.ndarray:
    """``_plain_in_tidb_text`` by Arrow's regular expressions (what runs without ticdc-sink-native)."""
    plain = pc.fill_null(pc.match_substring_regex(documents, _PLAIN_DOCUMENT), False).to_numpy(zero_copy_only=False)
    objects = np.flatnonzero(plain & pc.fill_null(pc.starts_with(documents, "{"), False).to_numpy(
        zero_copy_only=False))
    if len(objects):
        unsorted = _keys_out_of_order(documents.take(objects))
        plain[objects[unsorted]] = False
    return plain


def _keys_out_of_order(objects: pa.StringArray) -> np.ndarray:
    """The indices of plain objects whose keys are not in strictly ascending byte order.

    A plain string holds no quote, so split at quotes an object's odd parts are its strings, and a string
    is a key when the part after it starts with ": ".
    """
    parts = pc.split_pattern(objects, '"')
    texts = pc.list_flatten(parts)
    offsets = parts.offsets.to_numpy()
    owners = np.repeat(np.arange(len(objects)), np.diff(offsets))
    is_string = (np.arange(len(texts)) - offsets[:-1][owners]) % 2 == 1
    is_key = np.zeros(len(texts), dtype=bool)
    is_key[:-1] = is_string[:-1] & pc.starts_with(texts, ": ").to_numpy(zero_copy_only=False)[1:]
    at = np.flatnonzero(is_key)
    keys, key_owners = texts.take(at), owners[at]
    unsorted = pc.less_equal(keys[1:], keys[:-1]).to_numpy(zero_copy_only=False) & (key_owners[1:] == key_owners[:-1])
    return np.unique(key_owners[1:][unsorted])


def tidb_json_texts(documents: list[str]) -> list[str]:
    """JSON texts as TiDB prints them (``documents`` itself when all are); raises ValueError for text that
    is not JSON.

    Python's C parser and printer (sorted keys, TiDB's separators) print most
    documents exactly as TiDB does, and parse and print a whole column in one
    call each: a column already in TiDB's form (its printed column equals the
    input's) is kept as it is.  A float that Python would print differently, a
    number beyond 64 bits, or a character the two escape differently sends the
    document through the exact (slower) path of ``tidb_json_text``.
    """
    if not documents:
        return []
    # The collector waits until the parsed column is freed: it holds no cycles, and the collections its many
    # dicts and lists would trigger (and one more when it resumes) cost more than the parse itself.
    with _collector_paused():
        return _column_texts(documents)


def _column_texts(documents: list[str]) -> list[str]:
    check = _FastPathCheck()
    decoder = json.JSONDecoder(parse_float=check.float, parse_constant=_no_constant)
    # Each document in its own array, the arrays parted by a raw newline, which no JSON string holds: a text
    # that is not one JSON value changes the count or the length of some array (or fails the parse).
    source = "[[" + "]\n,[".join(documents) + "]]"
    try:
        wrapped = decoder.decode(source)
    except ValueError:
        wrapped = None  # some document is not JSON: find it below
    # A run of 19 digits may be a number beyond 64 bits, which TiDB reads as a double.
    long_number = _DIGIT_RUN in source.translate(_DIGITS)
    if (wrapped is None or len(wrapped) != len(documents) or set(map(len, wrapped)) != {1} or not check.ok
            or long_number):
        return [_tidb_json_text_of(document) for document in documents]
    values = [document[0] for document in wrapped]
    printed = _FAST_ENCODE(values)
    texts = documents if printed == "[" + ", ".join(documents) + "]" else [_FAST_ENCODE(v) for v in values]
    if "\u2028" in printed or "\u2029" in printed:
        texts = [t.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029") for t in texts]
    if "\\b" in printed or "\\f" in printed or not _is_encodable(printed):
        texts = [tidb_json_text(v) for v in values]
    return texts


@contextmanager
def _collector_paused():
    """Python's cyclic garbage collector off for the block."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


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


def go_json_float_text(value: float) -> str:
    """Go's ``encoding/json`` float text: shortest, exponent only below 1e-6 or from 1e21."""
    magnitude = abs(value)
    if magnitude != 0 and (magnitude < 1e-6 or magnitude >= 1e21):
        mantissa, _, exponent = repr(value).partition("e")
        digits = int(exponent.lstrip("+-"))
        return f"{mantissa}e-{digits}" if exponent.startswith("-") else f"{mantissa}e+{digits:02d}"
    return go_float_text(value, 64)


def _json_converter(arrow_type: pa.DataType):
    """A function from Arrow's Python form of a nested value to plain JSON data, led by the type."""
    if pa.types.is_map(arrow_type):
        item = _json_converter(arrow_type.item_type)
        return lambda v: None if v is None else {str(k): item(x) for k, x in v}
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type) or pa.types.is_fixed_size_list(arrow_type):
        item = _json_converter(arrow_type.value_type)
        return lambda v: None if v is None else [item(x) for x in v]
    if pa.types.is_struct(arrow_type):
        fields = [(f.name, _json_converter(f.type)) for f in arrow_type]
        return lambda v: None if v is None else {name: convert(v[name]) for name, convert in fields}
    if pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
        return lambda v: None if v is None else v.decode("latin-1")
    if pa.types.is_decimal(arrow_type):
        return lambda v: None if v is None else float(v)  # TiDB's JSON holds numbers as doubles
    if pa.types.is_timestamp(arrow_type):
        return lambda v: None if v is None else v.isoformat(sep=" ")
    if pa.types.is_date(arrow_type):
        return lambda v: None if v is None else v.isoformat()
    return lambda v: v
