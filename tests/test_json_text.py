"""The three escaping styles of TiCDC's Go JSON writers, for one literal and for a column of them."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from ticdc_sink.codec.shared.json_text import GO_JSON, HTML, PLAIN, quote_json, quote_json_array

TEXT = "".join(chr(c) for c in range(0x80)) + "\u2028\u2029é😀"
HTML_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def python_json(text: str) -> str:
    """Python's literal: short escapes for \\b \\f \\n \\r \\t, \\u00XX for the other controls, as Go 1.22+."""
    return json.dumps(text, ensure_ascii=False)


def with_html_escapes(literal: str) -> str:
    return "".join(HTML_ESCAPES.get(c, c) for c in literal)


EXPECTED = {
    GO_JSON: with_html_escapes(python_json(TEXT)),
    HTML: with_html_escapes(python_json(TEXT)).replace("\\b", "\\u0008").replace("\\f", "\\u000c"),
    PLAIN: python_json(TEXT).replace("\\b", "\\u0008").replace("\\f", "\\u000c"),
}


@pytest.mark.parametrize("style", [GO_JSON, HTML, PLAIN])
def test_each_style_escapes_as_its_go_writer(style):
    assert quote_json(TEXT, style) == EXPECTED[style]
    # A column with few characters to escape takes one Arrow pass per character, with many row by row.
    for column in ([TEXT, None, "plain"], ["a\bb", "c<d"]):
        expected = [quote_json(v, style) if v is not None else None for v in column]
        assert quote_json_array(pa.array(column), style).to_pylist() == expected


def test_go_json_writes_b_and_f_short_where_the_other_styles_write_them_as_code_points():
    assert [quote_json("\b\f", style) for style in (GO_JSON, HTML, PLAIN)] == [
        '"\\b\\f"', '"\\u0008\\u000c"', '"\\u0008\\u000c"']
