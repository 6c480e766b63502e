"""JSON columns in TiDB's text: the regular-expression proof of documents already in it agrees with a parse
and print of every document."""

import json
import random

import pyarrow as pa
import pytest

from ticdc_sink.changes.tidb_json import InvalidJSON, _plain_in_tidb_text, tidb_json_column, tidb_json_text

# Characters that end, escape or split a plain string, that TiDB escapes, or whose UTF-8 order differs from
# their UTF-16 order, besides plain ones.
CHARACTERS = ['a', 'b', 'Z', '0', ' ', ',', ':', '{', '}', '[', ']', '"', '\\', '\n', '\x01', '\x1f', '\x7f',
              '\u00e9', '\u2028', '\u2029', '\uffff', '\U0001f600', '\ufb01']


def random_string(rng: random.Random) -> str:
    return "".join(rng.choice(CHARACTERS) for _ in range(rng.choice([0, 1, 1, 2, 3, 5])))


def random_number(rng: random.Random):
    return rng.choice([0, 1, -1, 7, -42, 10**17, -(10**17) + 1, 10**18 - 1, 10**18, -(2**63), 2**63, 2**64 - 1,
                       2**64, 10**22, 0.5, -2.25, 1e-7, 1e21, 123456.789, 1.0, float(2**53)])


def random_value(rng: random.Random, depth: int = 0):
    kind = rng.choice(["string", "number", "literal", "array", "object"] if depth < 3 else ["string", "number"])
    if kind == "string":
        return random_string(rng)
    if kind == "number":
        return random_number(rng)
    if kind == "literal":
        return rng.choice([True, False, None])
    if kind == "array":
        return [random_value(rng, depth + 1) for _ in range(rng.choice([0, 1, 2, 3]))]
    return {random_string(rng): random_value(rng, depth + 1) for _ in range(rng.choice([0, 1, 2, 3, 4]))}


def printed(rng: random.Random, value) -> str:
    """``value`` as TiDB prints it, or in one of the other forms a user's JSON text may take."""
    form = rng.choice(["tidb", "tidb", "tidb", "compact", "python", "unsorted", "spaced", "duplicate"])
    if form == "tidb":
        return tidb_json_text(value)
    if form == "compact":
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if form == "python":
        return json.dumps(value)  # ASCII escapes, unsorted keys, Python's float text
    if form == "unsorted" and isinstance(value, dict):
        members = list(value.items())
        rng.shuffle(members)
        return "{" + ", ".join(tidb_json_text(k) + ": " + tidb_json_text(v) for k, v in members) + "}"
    if form == "duplicate" and isinstance(value, dict) and value:
        key, first = next(iter(value.items()))
        return "{" + tidb_json_text(key) + ": " + tidb_json_text(first) + ", " + tidb_json_text(value)[1:]
    if form == "spaced":
        return " " + tidb_json_text(value).replace(", ", " , ", 1) + "\n"
    return tidb_json_text(value)


@pytest.mark.parametrize("seed", range(4))
def test_every_document_comes_back_as_a_parse_and_print_would_give_it(seed):
    rng = random.Random(seed)
    documents = [None if rng.random() < 0.05 else printed(rng, random_value(rng)) for _ in range(3000)]
    expected = [None if d is None else tidb_json_text(json.loads(d)) for d in documents]
    assert tidb_json_column(pa.array(documents, pa.string())).to_pylist() == expected
    # Each document alone too: a neighbour's keys take no part in another's order.
    assert [tidb_json_column(pa.array([d], pa.string())).to_pylist()[0] for d in documents[:500]] == expected[:500]


def test_documents_of_plain_shapes_in_tidbs_text_are_kept_without_a_copy():
    documents = pa.array(['{"k": 1, "tags": ["a", "b"]}', None, "[]", "{}", '"x, y: z"', "-17", "true",
                          '{"": null, "a": [1, -2], "b": "\u00e9", "\u00e9": 0}', "123456789012345678",
                          '{"a": ": z", "b": [": "], "c": ""}'])
    assert _plain_in_tidb_text(documents).tolist() == [True, False, True, True, True, True, True, True, True, True]
    kept = tidb_json_column(documents)
    assert kept.buffers()[2].address == documents.buffers()[2].address


@pytest.mark.parametrize("document, text", [
    ('{"b": 1, "a": 2}', '{"a": 2, "b": 1}'),  # keys out of order
    ('{"a": 1, "a": 2}', '{"a": 2}'),  # a key twice
    ('{"ab": 1, "a": 2}', '{"a": 2, "ab": 1}'),  # a key before its own prefix
    ('{"\U0001f600": 1, "\uffff": 2}', '{"\uffff": 2, "\U0001f600": 1}'),  # byte order, not UTF-16's
    ("-0", "0"),
    ("1234567890123456789", "1234567890123456789"),  # 19 digits: parsed, still within 64 bits
    ("18446744073709551616", "18446744073709552000"),  # beyond 64 bits: a double
    ("1.50", "1.5"),
    ('["a","b"]', '["a", "b"]'),
    ('"\\u0041"', '"A"'),
    ('"x\u2028"', '"x\\u2028"'),
    ('[{"b": 1, "a": 2}]', '[{"a": 2, "b": 1}]'),  # an object in an array: not a plain shape
    ('{"a": {"c": 1, "b": 2}}', '{"a": {"b": 2, "c": 1}}'),
    ('{"b": ": x", "a": 1}', '{"a": 1, "b": ": x"}'),  # a value that looks like a key's end is no key
    ('{"b": [": "], "a": 1}', '{"a": 1, "b": [": "]}'),
])
def test_documents_not_in_tidbs_text_are_reprinted(document, text):
    assert tidb_json_column(pa.array(["[1, 2]", document, None])).to_pylist() == ["[1, 2]", text, None]


def test_the_first_document_that_is_not_json_is_named_by_its_row():
    with pytest.raises(InvalidJSON) as error:
        tidb_json_column(pa.array(['{"a": 1}', None, "[1, 2", "{]"], pa.large_string()))
    assert (error.value.row, error.value.document) == (2, "[1, 2")
