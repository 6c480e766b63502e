"""ticdc-sink-native's one-pass text join (``table/text_join.py``) against Arrow's ``binary_join_element_wise``.

Every encoder's text goes through ``join``; with the package installed it is the C join, so its arrays must be
Arrow's, byte for byte and null for null, over what the encoders hand it: sliced arrays, nulls, empty and
multi-byte values, one row and none; and what it does not take must reach Arrow, for Arrow's result or error.
Its JSON literals (``json_literals``, under ``json_text.json_fragments``) must be Arrow's
passes' too, in each Go writer's escaping style, and its recognition of the JSON documents already in TiDB's text
(``plain_tidb_json``) the regular expressions'.  The encoders' own goldens then run on both (CI's native step).
"""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from ticdc_sink.codec.shared import json_text
from ticdc_sink.table import text_join
from ticdc_sink.table.text_join import arrow_join, join

if text_join._native is None:
    pytest.skip("ticdc-sink-native is not installed (pip install ./native): the Arrow join is the only one",
                allow_module_level=True)

WORDS = ["", "a", "null", '"q"', "é", "日本語", "\U0001f600", "x" * 300, "<&>", "\\", "\n"]


def random_array(rng: random.Random, n: int) -> pa.Array:
    values = [None if rng.random() < 0.2 else rng.choice(WORDS) + str(rng.randrange(1000)) for _ in range(n + 3)]
    array = pa.array(values, pa.string())
    start = rng.randrange(3)
    return array.slice(start, n)  # a slice: its buffers start before its first row


def assert_same(parts: list) -> None:
    native, arrow = join(*parts), arrow_join(*parts)
    assert native.type == arrow.type
    assert native.null_count == arrow.null_count
    assert native.to_pylist() == arrow.to_pylist()
    assert native.equals(arrow)


@pytest.mark.parametrize("seed", range(40))
def test_random_parts_join_as_arrow_joins_them(seed):
    rng = random.Random(seed)
    n = rng.choice([0, 1, 7, 64, 1000])
    parts = []
    for _ in range(rng.randrange(1, 12)):
        parts.append(rng.choice(WORDS) if rng.random() < 0.4 else random_array(rng, n))
    if all(isinstance(p, str) for p in parts):
        parts.append(random_array(rng, n))
    assert_same(parts)


def test_a_row_with_a_null_part_is_null_and_takes_no_bytes():
    values = pa.array(["a", None, "c"])
    joined = join('"', values, '"')
    assert joined.to_pylist() == ['"a"', None, '"c"']
    assert np.frombuffer(joined.buffers()[1], np.int32).tolist() == [0, 3, 3, 6]


def test_the_native_join_is_the_one_that_runs():
    values = pa.array(["a", None])
    assert text_join._native_join(("[", values, "]")) is not None


def test_what_the_native_join_does_not_take_goes_to_arrow():
    binary, large = pa.array([b"a", b"b"]), pa.array(["a", "b"], pa.large_string())
    chunked = pa.chunked_array([["a"], ["b"]])
    for parts in [("[", binary, "]"), ("[", large, "]"), (binary, binary), ("[", chunked, "]"), ("[", "]"),
                  (pa.array(["a"]), pa.array(["a", "b"]))]:
        assert text_join._native_join(parts) is None
    assert join("[", chunked, "]").equals(arrow_join("[", chunked, "]"))
    with pytest.raises(pa.ArrowNotImplementedError):
        join("[", large, "]")
    with pytest.raises(pa.ArrowInvalid):
        join(pa.array(["a"]), pa.array(["a", "b"]))


# Every character some Go writer escapes (controls, quotes, backslash, HTML's, the line separators, whose UTF-8
# shares its first two bytes with other characters), and their neighbours that none escapes.
ESCAPED = [chr(c) for c in range(0x20)] + ['"', "\\", "<", ">", "&", "\u2028", "\u2029", "\u2027", "\u202a",
                                           "\u20ac", "\x7f", "/", "'", "é", "\U0001f600"]


def arrow_literals(values: pa.Array, style: str | None) -> pa.Array:
    """What json_text builds without the package: its Arrow passes."""
    native, text_join._native = text_join._native, None
    try:
        return json_text.json_fragments(values, escape=style is not None, style=style or json_text.HTML)
    finally:
        text_join._native = native


@pytest.mark.parametrize("style", [json_text.HTML, json_text.GO_JSON, json_text.PLAIN, None])
@pytest.mark.parametrize("seed", range(10))
def test_json_literals_equal_what_arrow_builds(style, seed):
    rng = random.Random(seed)
    n = rng.choice([0, 1, 7, 300])
    values = [None if rng.random() < 0.2 else "".join(rng.choice(ESCAPED + WORDS) for _ in range(rng.randrange(6)))
              for _ in range(n + 2)]
    array = pa.array(values, pa.string()).slice(rng.randrange(2), n)
    native = text_join.json_literals(array, style)
    assert native is not None
    assert native.equals(arrow_literals(array, style)), (style, array.to_pylist())
    assert native.null_count == 0


def test_json_literals_escape_as_each_go_writer():
    values = pa.array(['<a href="x">&\u2028\b\f\x01\\', None])
    assert text_join.json_literals(values, json_text.HTML).to_pylist() == [
        '"\\u003ca href=\\"x\\"\\u003e\\u0026\\u2028\\u0008\\u000c\\u0001\\\\"', "null"]
    assert text_join.json_literals(values, json_text.GO_JSON).to_pylist() == [
        '"\\u003ca href=\\"x\\"\\u003e\\u0026\\u2028\\b\\f\\u0001\\\\"', "null"]
    assert text_join.json_literals(values, json_text.PLAIN).to_pylist() == [
        '"<a href=\\"x\\">&\u2028\\u0008\\u000c\\u0001\\\\"', "null"]


def test_json_literals_leave_to_arrow_what_they_do_not_take():
    assert text_join.json_literals(pa.array(["a"], pa.large_string()), None) is None
    assert text_join.json_literals(pa.chunked_array([["a"]]), None) is None
    with pytest.raises(ValueError, match="no JSON escaping style"):
        text_join.json_literals(pa.array(["a"]), "xml")


# Go's strconv.Quote (Open Protocol's binary columns): printable runes kept, the rest escaped; invalid UTF-8 (bare
# continuation bytes, overlong forms, surrogates, truncated sequences, past U+10FFFF) byte by byte.
QUOTED_PIECES = [b"a", b'"', b"\\", b"\x00", b"\x07", b"\x0b", b"\x1f", b"\x7f", b"\x80", b"\xff", b"\xc0\xaf",
                 b"\xc2\xa0", b"\xc2\xad", b"\xc2\x85", "é".encode(), "\u200b".encode(), "\u2028".encode(),
                 "\ufffd".encode(), "\ue000".encode(), "\u0378".encode(), "日".encode(), "\U0001f600".encode(),
                 "\U0010ffff".encode(), b"\xed\xa0\x80", b"\xe0\x80\x80", b"\xf4\x90\x80\x80", b"\xf0\x9f\x98",
                 b"\xe2\x82", b" ", b"~", b"\n", b"\t"]


@pytest.mark.parametrize("seed", range(20))
def test_go_quoted_is_what_go_quote_body_writes(seed):
    rng = random.Random(seed)
    n = rng.choice([0, 1, 9, 400])
    values = [None if rng.random() < 0.15 else b"".join(rng.choice(QUOTED_PIECES) for _ in range(rng.randrange(7)))
              for _ in range(n + 2)]
    for kind in (pa.binary(), pa.large_binary()):
        array = pa.array(values, kind).slice(rng.randrange(2), n)
        quoted = text_join.go_quoted(array)
        assert quoted.type == pa.string() and quoted.null_count == array.null_count
        assert quoted.to_pylist() == [None if v is None else json_text.go_quote_body(v) for v in array.to_pylist()]
        native, text_join._native = text_join._native, None
        try:
            by_python = json_text.go_quoted_fragments(array, json_text.PLAIN)
        finally:
            text_join._native = native
        assert json_text.go_quoted_fragments(array, json_text.PLAIN).equals(by_python)


def test_go_quoted_escapes_as_strconv_quote():
    values = pa.array([b'a"\\\x07\x0b\x00\x7f\xff\xc2\xa0\xe2\x80\x8b\xf0\x9f\x98\x80\xef\x80\x80', None])
    assert text_join.go_quoted(values).to_pylist() == [
        'a\\"\\\\\\a\\v\\x00\\x7f\\xff\\u00a0\\u200b\U0001f600\\uf000', None]
    assert text_join.go_quoted(pa.array(["a"])) is None  # text, not bytes: quoted by json_text


# The documents TiDB's JSON recognition sees: every token kind, near misses of each (a separator without its space,
# 19 digits, "-0", a float, an escape, U+2028, keys out of order or twice, nesting), and cut short anywhere.
JSON_STRINGS = ['""', '"a"', '"é日\U0001f600"', '"\\n"', '"\u2028"', '"\u2029"', '"\x1f"', '"\x7f"', '"a b"', '"{"']
JSON_NUMBERS = ["0", "7", "-7", "-0", "01", "1.5", "1e3", "123456789012345678", "1234567890123456789",
                "-123456789012345678", "-", "+1"]
JSON_WORDS = ["true", "false", "null", "nul", "True", "truex"]


def random_scalar(rng: random.Random) -> str:
    return rng.choice(rng.choice([JSON_STRINGS, JSON_NUMBERS, JSON_WORDS]))


def random_array_text(rng: random.Random) -> str:
    separator = rng.choice([", "] * 6 + [",", " , ", ",  "])
    items = [random_scalar(rng) if rng.random() < 0.9 else "[1]" for _ in range(rng.randrange(4))]
    return "[" + separator.join(items) + "]"


def random_document(rng: random.Random) -> str:
    kind = rng.randrange(4)
    if kind == 0:
        return random_scalar(rng)
    if kind == 1:
        return random_array_text(rng)
    keys = sorted(rng.sample(["a", "ab", "b", "é", "\U0001f600", "", "B", "a b"], rng.randrange(5)))
    if keys and rng.random() < 0.2:
        keys.append(rng.choice(keys))  # a key twice, or out of order
    colon, comma = rng.choice([": "] * 6 + [":", " : "]), rng.choice([", "] * 6 + [","])
    members = [f'"{key}"{colon}' + (random_scalar(rng) if rng.random() < 0.6 else random_array_text(rng)
                                    if rng.random() < 0.9 else '{"a": 1}') for key in keys]
    document = "{" + comma.join(members) + "}"
    return document if rng.random() < 0.9 else document[:rng.randrange(len(document) + 1)]


@pytest.mark.parametrize("seed", range(20))
def test_plain_tidb_json_decides_as_the_regular_expressions_do(seed):
    from ticdc_sink.changes.tidb_json import _arrow_plain_in_tidb_text

    rng = random.Random(seed)
    documents = [None if rng.random() < 0.1 else random_document(rng) for _ in range(2003)]
    array = pa.array(documents, pa.string()).slice(3)
    native = text_join.plain_tidb_json(array)
    arrow = _arrow_plain_in_tidb_text(array)
    assert native.dtype == np.bool_ and len(native) == len(array)
    differ = [(array[i].as_py(), bool(native[i])) for i in np.flatnonzero(native != arrow)]
    assert not differ, differ[:10]
    assert 0.1 < native.mean() < 0.9  # both kinds are drawn


def test_plain_tidb_json_by_hand():
    documents = ['{"a": 1, "b": [true, "x"]}', '{"b": 1, "a": 2}', '{"a": 1, "a": 2}', '{"a": {"b": 1}}', "-0",
                 "1234567890123456789", '"\u2028"', "[]", "{}", "", None, '{"a": 1', '{"a": 1}x', "-true"]
    assert text_join.plain_tidb_json(pa.array(documents, pa.string())).tolist() == [
        True, False, False, False, False, False, False, True, True, False, False, False, False, False]
