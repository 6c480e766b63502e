"""Unit tests for ticdc_sink.mysql_types: the MySQL type grammar, the Spark
defaults, and the column model (flags, keys, handle) that every protocol uses.

Expected values come from docs/input.md, "Column types", and
reference/TICDC-ENCODING-FACTS.md section 0 ("MySQL type strings", "Column
flag bits") and section 3 (Canal mysqlType), and where those are silent from
TiDB's own source (cited next to the test).
"""

from __future__ import annotations

import pytest
from pyspark.sql import types as T

from ticdc_sink.errors import ConfigError
from ticdc_sink.table.mysql_types import (FLAG_BINARY, FLAG_HANDLE_KEY, FLAG_MULTIPLE_KEY, FLAG_NULLABLE,
                                          FLAG_PRIMARY_KEY, FLAG_UNIQUE_KEY, FLAG_UNSIGNED, TYPE_BIT, TYPE_BLOB,
                                          TYPE_DATE, TYPE_DATETIME, TYPE_DOUBLE, TYPE_DURATION, TYPE_ENUM,
                                          TYPE_FLOAT, TYPE_INT24, TYPE_JSON, TYPE_LONG, TYPE_LONG_BLOB,
                                          TYPE_LONGLONG, TYPE_MEDIUM_BLOB, TYPE_NEWDECIMAL, TYPE_SET, TYPE_SHORT,
                                          TYPE_STRING, TYPE_TIMESTAMP, TYPE_TINY, TYPE_TINY_BLOB, TYPE_VARCHAR,
                                          TYPE_YEAR, MySQLType)
from ticdc_sink.table.type_grammar import TypeSyntaxError, parse_mysql_type, split_column_types
from ticdc_sink.table.schema import build_table_schema, default_mysql_type
from ticdc_sink.tso import tso_from_unix_ms, tso_physical_ms, now_tso

F = T.StructField


# ---------------------------------------------------------------------------
# Constants: MySQL type bytes and TiCDC flag bits


def test_type_bytes_are_mysql_protocol_values():
    assert (TYPE_TINY, TYPE_SHORT, TYPE_LONG, TYPE_FLOAT, TYPE_DOUBLE) == (1, 2, 3, 4, 5)
    assert (TYPE_TIMESTAMP, TYPE_LONGLONG, TYPE_INT24, TYPE_DATE, TYPE_DURATION) == (7, 8, 9, 10, 11)
    assert (TYPE_DATETIME, TYPE_YEAR, TYPE_VARCHAR, TYPE_BIT) == (12, 13, 15, 16)
    assert (TYPE_JSON, TYPE_NEWDECIMAL, TYPE_ENUM, TYPE_SET) == (245, 246, 247, 248)
    assert (TYPE_TINY_BLOB, TYPE_MEDIUM_BLOB, TYPE_LONG_BLOB, TYPE_BLOB, TYPE_STRING) == (249, 250, 251, 252, 254)


def test_flag_bits_match_ticdc_column_flag_type():
    # TiCDC's ColumnFlagType: 1 Binary | 2 HandleKey | 4 Generated | 8 PrimaryKey |
    # 16 UniqueKey | 32 MultipleKey | 64 Nullable | 128 Unsigned
    assert FLAG_BINARY == 1
    assert FLAG_HANDLE_KEY == 2
    assert FLAG_PRIMARY_KEY == 8
    assert FLAG_UNIQUE_KEY == 16
    assert FLAG_MULTIPLE_KEY == 32
    assert FLAG_NULLABLE == 64
    assert FLAG_UNSIGNED == 128


# ---------------------------------------------------------------------------
# parse_mysql_type: short name (Canal mysqlType), full name (GetTypeDesc), code

# (input, short_name, full_name, code)
VALID_TYPES = [
    # integers, default display widths (GetDefaultFieldLengthAndDecimal)
    ("INT", "int", "int(11)", TYPE_LONG),
    ("int", "int", "int(11)", TYPE_LONG),
    ("INT UNSIGNED", "int unsigned", "int(10) unsigned", TYPE_LONG),
    ("int(5)", "int", "int(5)", TYPE_LONG),
    ("int(5) unsigned", "int unsigned", "int(5) unsigned", TYPE_LONG),
    ("TINYINT", "tinyint", "tinyint(4)", TYPE_TINY),
    ("TINYINT UNSIGNED", "tinyint unsigned", "tinyint(3) unsigned", TYPE_TINY),
    ("TINYINT UNSIGNED ZEROFILL", "tinyint unsigned zerofill", "tinyint(3) unsigned zerofill", TYPE_TINY),
    ("SMALLINT", "smallint", "smallint(6)", TYPE_SHORT),
    ("SMALLINT UNSIGNED", "smallint unsigned", "smallint(5) unsigned", TYPE_SHORT),
    ("MEDIUMINT", "mediumint", "mediumint(9)", TYPE_INT24),
    ("MEDIUMINT UNSIGNED", "mediumint unsigned", "mediumint(8) unsigned", TYPE_INT24),
    ("BIGINT", "bigint", "bigint(20)", TYPE_LONGLONG),
    ("BIGINT UNSIGNED", "bigint unsigned", "bigint(20) unsigned", TYPE_LONGLONG),
    ("int signed", "int", "int(11)", TYPE_LONG),
    # ZEROFILL implies UNSIGNED, in either order
    ("INT ZEROFILL", "int unsigned zerofill", "int(10) unsigned zerofill", TYPE_LONG),
    ("INT(5) ZEROFILL", "int unsigned zerofill", "int(5) unsigned zerofill", TYPE_LONG),
    ("int zerofill unsigned", "int unsigned zerofill", "int(10) unsigned zerofill", TYPE_LONG),
    ("BIGINT ZEROFILL", "bigint unsigned zerofill", "bigint(20) unsigned zerofill", TYPE_LONGLONG),
    # aliases
    ("INTEGER", "int", "int(11)", TYPE_LONG),
    ("integer unsigned", "int unsigned", "int(10) unsigned", TYPE_LONG),
    ("INT1", "tinyint", "tinyint(4)", TYPE_TINY),
    ("INT2", "smallint", "smallint(6)", TYPE_SHORT),
    ("INT3", "mediumint", "mediumint(9)", TYPE_INT24),
    ("INT4", "int", "int(11)", TYPE_LONG),
    ("INT8", "bigint", "bigint(20)", TYPE_LONGLONG),
    ("MIDDLEINT", "mediumint", "mediumint(9)", TYPE_INT24),
    # BOOL / BOOLEAN are tinyint(1)
    ("BOOL", "tinyint", "tinyint(1)", TYPE_TINY),
    ("BOOLEAN", "tinyint", "tinyint(1)", TYPE_TINY),
    ("tinyint(1)", "tinyint", "tinyint(1)", TYPE_TINY),
    # BIT
    ("BIT", "bit", "bit(1)", TYPE_BIT),
    ("BIT(8)", "bit", "bit(8)", TYPE_BIT),
    ("BIT(64)", "bit", "bit(64)", TYPE_BIT),
    # DECIMAL and aliases
    ("DECIMAL", "decimal", "decimal(10,0)", TYPE_NEWDECIMAL),
    ("DECIMAL(5)", "decimal", "decimal(5,0)", TYPE_NEWDECIMAL),
    ("DECIMAL(5,2)", "decimal", "decimal(5,2)", TYPE_NEWDECIMAL),
    ("decimal(65,30)", "decimal", "decimal(65,30)", TYPE_NEWDECIMAL),
    ("decimal(1)", "decimal", "decimal(1,0)", TYPE_NEWDECIMAL),
    ("DECIMAL(5,2) UNSIGNED", "decimal unsigned", "decimal(5,2) unsigned", TYPE_NEWDECIMAL),
    ("DECIMAL(5,2) ZEROFILL", "decimal unsigned zerofill", "decimal(5,2) unsigned zerofill", TYPE_NEWDECIMAL),
    ("NUMERIC", "decimal", "decimal(10,0)", TYPE_NEWDECIMAL),
    ("NUMERIC(7,3)", "decimal", "decimal(7,3)", TYPE_NEWDECIMAL),
    ("DEC(4,1)", "decimal", "decimal(4,1)", TYPE_NEWDECIMAL),
    ("FIXED(4,1)", "decimal", "decimal(4,1)", TYPE_NEWDECIMAL),
    # FLOAT / DOUBLE
    ("FLOAT", "float", "float", TYPE_FLOAT),
    ("FLOAT(10)", "float", "float", TYPE_FLOAT),  # reference: float(10) -> float
    ("FLOAT(24)", "float", "float", TYPE_FLOAT),
    ("FLOAT(25)", "double", "double", TYPE_DOUBLE),  # FLOAT(p>24) is a DOUBLE
    ("FLOAT(10,3)", "float", "float(10,3)", TYPE_FLOAT),
    ("FLOAT UNSIGNED", "float unsigned", "float unsigned", TYPE_FLOAT),
    ("FLOAT(10,3) UNSIGNED ZEROFILL", "float unsigned zerofill", "float(10,3) unsigned zerofill", TYPE_FLOAT),
    ("DOUBLE", "double", "double", TYPE_DOUBLE),
    ("DOUBLE(20,3)", "double", "double(20,3)", TYPE_DOUBLE),
    ("DOUBLE UNSIGNED", "double unsigned", "double unsigned", TYPE_DOUBLE),
    ("DOUBLE PRECISION", "double", "double", TYPE_DOUBLE),
    ("double   precision(20,3)", "double", "double(20,3)", TYPE_DOUBLE),
    ("REAL", "double", "double", TYPE_DOUBLE),
    # temporal
    ("DATE", "date", "date", TYPE_DATE),
    ("TIME", "time", "time", TYPE_DURATION),
    ("TIME(0)", "time", "time", TYPE_DURATION),
    ("TIME(3)", "time", "time(3)", TYPE_DURATION),
    ("TIME(6)", "time", "time(6)", TYPE_DURATION),
    ("DATETIME", "datetime", "datetime", TYPE_DATETIME),
    ("DATETIME(3)", "datetime", "datetime(3)", TYPE_DATETIME),
    ("DATETIME(6)", "datetime", "datetime(6)", TYPE_DATETIME),
    ("TIMESTAMP", "timestamp", "timestamp", TYPE_TIMESTAMP),
    ("TIMESTAMP(3)", "timestamp", "timestamp(3)", TYPE_TIMESTAMP),
    ("YEAR", "year", "year(4)", TYPE_YEAR),
    ("YEAR(4)", "year", "year(4)", TYPE_YEAR),
    # character strings and their binary forms
    ("CHAR", "char", "char(1)", TYPE_STRING),
    ("CHAR(10)", "char", "char(10)", TYPE_STRING),
    ("CHAR(0)", "char", "char(0)", TYPE_STRING),
    ("CHAR(255)", "char", "char(255)", TYPE_STRING),
    ("BINARY", "binary", "binary(1)", TYPE_STRING),
    ("BINARY(16)", "binary", "binary(16)", TYPE_STRING),
    ("VARCHAR(10)", "varchar", "varchar(10)", TYPE_VARCHAR),
    ("VARCHAR(65535)", "varchar", "varchar(65535)", TYPE_VARCHAR),
    ("VARBINARY(10)", "varbinary", "varbinary(10)", TYPE_VARCHAR),
    ("CHAR(5) CHARACTER SET binary", "binary", "binary(5)", TYPE_STRING),
    ("CHAR(5) CHARSET binary", "binary", "binary(5)", TYPE_STRING),
    ("VARCHAR(10) CHARACTER SET binary", "varbinary", "varbinary(10)", TYPE_VARCHAR),
    ("varchar(10) character   set BINARY", "varbinary", "varbinary(10)", TYPE_VARCHAR),
    ("VARCHAR(10) CHARACTER SET utf8mb4", "varchar", "varchar(10)", TYPE_VARCHAR),
    ("VARCHAR(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin", "varchar", "varchar(10)", TYPE_VARCHAR),
    ("VARCHAR(10) COLLATE utf8mb4_general_ci", "varchar", "varchar(10)", TYPE_VARCHAR),
    # the BINARY attribute is a binary collation, not the binary charset
    ("VARCHAR(10) BINARY", "varchar", "varchar(10)", TYPE_VARCHAR),
    # TEXT / BLOB families: unsized in the full form
    ("TINYTEXT", "tinytext", "tinytext", TYPE_TINY_BLOB),
    ("TEXT", "text", "text", TYPE_BLOB),
    ("MEDIUMTEXT", "mediumtext", "mediumtext", TYPE_MEDIUM_BLOB),
    ("LONGTEXT", "longtext", "longtext", TYPE_LONG_BLOB),
    ("TINYBLOB", "tinyblob", "tinyblob", TYPE_TINY_BLOB),
    ("BLOB", "blob", "blob", TYPE_BLOB),
    ("MEDIUMBLOB", "mediumblob", "mediumblob", TYPE_MEDIUM_BLOB),
    ("LONGBLOB", "longblob", "longblob", TYPE_LONG_BLOB),
    ("TEXT CHARACTER SET binary", "blob", "blob", TYPE_BLOB),
    ("TINYTEXT CHARACTER SET binary", "tinyblob", "tinyblob", TYPE_TINY_BLOB),
    ("LONGTEXT CHARSET binary", "longblob", "longblob", TYPE_LONG_BLOB),
    # JSON, ENUM, SET
    ("JSON", "json", "json", TYPE_JSON),
    ("ENUM('a','b','c')", "enum", "enum('a','b','c')", TYPE_ENUM),
    ("SET('a','b','c')", "set", "set('a','b','c')", TYPE_SET),
    ("enum( 'a' , 'b' )", "enum", "enum('a','b')", TYPE_ENUM),
    ("ENUM('x')", "enum", "enum('x')", TYPE_ENUM),
]


@pytest.mark.parametrize("text,short,full,code", VALID_TYPES, ids=[v[0] for v in VALID_TYPES])
def test_parse_mysql_type_names_and_code(text, short, full, code):
    t = parse_mysql_type(text)
    assert t.short_name == short
    assert t.full_name == full
    assert t.code == code
    assert str(t) == full


@pytest.mark.parametrize(
    "text,full",
    [
        ("  int  ", "int(11)"),
        ("Int UnSigned", "int(10) unsigned"),
        ("\tVARCHAR( 10 )\n", "varchar(10)"),
        ("int(11)   unsigned   zerofill", "int(11) unsigned zerofill"),
        ("DeCiMaL( 8 , 3 )", "decimal(8,3)"),
    ],
)
def test_parse_is_case_and_whitespace_insensitive(text, full):
    assert parse_mysql_type(text).full_name == full


def test_zerofill_implies_unsigned():
    t = parse_mysql_type("SMALLINT ZEROFILL")
    assert t.unsigned and t.zerofill
    assert t.length == 5  # the unsigned default width
    assert t.short_name == "smallint unsigned zerofill"
    assert t.full_name == "smallint(5) unsigned zerofill"


def test_explicit_width_wins_over_the_default():
    assert parse_mysql_type("BIGINT(8) UNSIGNED").full_name == "bigint(8) unsigned"
    assert parse_mysql_type("TINYINT(2)").full_name == "tinyint(2)"


@pytest.mark.parametrize("text", ["BOOL", "BOOLEAN", "bool", "Boolean"])
def test_bool_is_signed_tinyint_1(text):
    t = parse_mysql_type(text)
    assert (t.kind, t.length, t.unsigned) == ("tinyint", 1, False)
    assert t.code == TYPE_TINY


def test_bit_and_year_never_show_unsigned():
    # Canal's mysqlType: bit/year never get "unsigned" (TiCDC's canal encoder)
    for text in ("BIT", "BIT(8)", "YEAR"):
        t = parse_mysql_type(text)
        assert "unsigned" not in t.short_name
        assert "unsigned" not in t.full_name


def test_decimal_fields():
    t = parse_mysql_type("DECIMAL(12,4)")
    assert (t.kind, t.length, t.decimals) == ("decimal", 12, 4)
    t = parse_mysql_type("DECIMAL")
    assert (t.length, t.decimals) == (10, 0)
    t = parse_mysql_type("DECIMAL(7)")
    assert (t.length, t.decimals) == (7, 0)


@pytest.mark.parametrize(
    "text,fsp",
    [("TIME", 0), ("TIME(1)", 1), ("TIME(6)", 6), ("DATETIME(4)", 4), ("TIMESTAMP(2)", 2), ("DATETIME", 0)],
)
def test_fsp(text, fsp):
    assert parse_mysql_type(text).fsp == fsp


def test_enum_and_set_members():
    t = parse_mysql_type("ENUM('small','medium','large')")
    assert t.elements == ("small", "medium", "large")
    t = parse_mysql_type("SET('read','write')")
    assert t.elements == ("read", "write")


def test_enum_members_with_doubled_quote_escape():
    t = parse_mysql_type("ENUM('it''s','x')")
    assert t.elements == ("it's", "x")
    # GetTypeDesc re-escapes the quote
    assert t.full_name == "enum('it''s','x')"
    # and the full form parses back to the same type
    assert parse_mysql_type(t.full_name) == t


def test_enum_member_that_is_only_a_quote():
    t = parse_mysql_type("ENUM('''','b')")
    assert t.elements == ("'", "b")
    assert t.full_name == "enum('''','b')"


def test_enum_members_may_hold_commas_spaces_and_parentheses():
    t = parse_mysql_type("ENUM('a,b','c d','e)','(f')")
    assert t.elements == ("a,b", "c d", "e)", "(f")
    assert t.full_name == "enum('a,b','c d','e)','(f')"


def test_enum_members_keep_case():
    assert parse_mysql_type("ENUM('Red','GREEN')").elements == ("Red", "GREEN")


def test_empty_string_enum_member():
    t = parse_mysql_type("ENUM('','a')")
    assert t.elements == ("", "a")


def test_set_with_64_members_is_allowed():
    members = ",".join(f"'m{i}'" for i in range(64))
    assert len(parse_mysql_type(f"SET({members})").elements) == 64


def test_enum_backslash_escape_round_trips():
    t = parse_mysql_type(r"ENUM('a\\b')")
    assert t.elements == ("a\\b",)  # one backslash
    assert t.full_name == r"enum('a\\b')"
    assert parse_mysql_type(t.full_name) == t


# TEXT(n) / BLOB(n): TiDB picks the smallest kind that holds n characters,
# counted in bytes as n * charset.Maxlen (TiDB ddl adjustBlobTypesFlen). BLOB
# (binary charset) counts 1 byte per character; TEXT uses TiDB's default
# charset utf8mb4, 4 bytes per character.
@pytest.mark.parametrize(
    "text,short,code",
    [
        ("BLOB(1)", "tinyblob", TYPE_TINY_BLOB),
        ("BLOB(255)", "tinyblob", TYPE_TINY_BLOB),
        ("BLOB(256)", "blob", TYPE_BLOB),
        ("BLOB(65535)", "blob", TYPE_BLOB),
        ("BLOB(65536)", "mediumblob", TYPE_MEDIUM_BLOB),
        ("BLOB(16777215)", "mediumblob", TYPE_MEDIUM_BLOB),
        ("BLOB(16777216)", "longblob", TYPE_LONG_BLOB),
        ("TEXT(256) CHARACTER SET binary", "blob", TYPE_BLOB),
        ("TEXT(10)", "tinytext", TYPE_TINY_BLOB),
        ("TEXT(63)", "tinytext", TYPE_TINY_BLOB),
        ("TEXT(20000000)", "longtext", TYPE_LONG_BLOB),
    ],
)
def test_text_and_blob_with_length_pick_the_kind(text, short, code):
    t = parse_mysql_type(text)
    assert t.short_name == short
    assert t.full_name == short  # text/blob types are unsized in the full form
    assert t.code == code


@pytest.mark.parametrize("text,short", [("TEXT(64)", "text"), ("TEXT(100)", "text"), ("TEXT(255)", "text")])
def test_text_length_counts_utf8mb4_bytes(text, short):
    assert parse_mysql_type(text).short_name == short


@pytest.mark.parametrize("text,short", [("TEXT(16384)", "mediumtext"), ("TEXT(20000)", "mediumtext"), ("TEXT(4194304)", "longtext")])
def test_text_length_counts_utf8mb4_bytes_large(text, short):
    assert parse_mysql_type(text).short_name == short


def test_binary_charset_and_the_binary_property():
    assert parse_mysql_type("VARBINARY(3)").binary is True
    assert parse_mysql_type("BINARY(3)").binary is True
    assert parse_mysql_type("BLOB").binary is True
    assert parse_mysql_type("VARCHAR(3)").binary is False
    assert parse_mysql_type("VARCHAR(3) CHARACTER SET binary").binary is True
    # CHARACTER SET binary on a non-string type changes nothing
    assert parse_mysql_type("INT CHARACTER SET binary") == parse_mysql_type("INT")


def test_has_binary_charset():
    # TiDB gives every non-string type the binary charset (TiCDC's mounter)
    for text in ("INT", "BIGINT UNSIGNED", "FLOAT", "DOUBLE", "DECIMAL(5,2)", "BIT(3)", "DATE",
                 "DATETIME", "TIMESTAMP", "TIME", "YEAR", "JSON", "BINARY(2)", "VARBINARY(2)", "BLOB",
                 "LONGBLOB"):
        assert parse_mysql_type(text).has_binary_charset, text
    for text in ("CHAR(2)", "VARCHAR(2)", "TEXT", "TINYTEXT", "LONGTEXT", "ENUM('a')", "SET('a')"):
        assert not parse_mysql_type(text).has_binary_charset, text


def test_kind_predicates():
    assert parse_mysql_type("MEDIUMINT").is_integer
    assert not parse_mysql_type("DECIMAL(3)").is_integer
    assert parse_mysql_type("VARCHAR(3)").is_string
    assert parse_mysql_type("BLOB").is_string
    assert not parse_mysql_type("ENUM('a')").is_string
    assert parse_mysql_type("MEDIUMTEXT").is_blob
    assert parse_mysql_type("TINYBLOB").is_blob
    assert not parse_mysql_type("VARCHAR(3)").is_blob


@pytest.mark.parametrize(
    "text,bounds",
    [
        ("TINYINT", (-128, 127)),
        ("TINYINT UNSIGNED", (0, 255)),
        ("SMALLINT", (-32768, 32767)),
        ("SMALLINT UNSIGNED", (0, 65535)),
        ("MEDIUMINT", (-8388608, 8388607)),
        ("MEDIUMINT UNSIGNED", (0, 16777215)),
        ("INT", (-2147483648, 2147483647)),
        ("INT UNSIGNED", (0, 4294967295)),
        ("BIGINT", (-(2**63), 2**63 - 1)),
        ("BIGINT UNSIGNED", (0, 2**64 - 1)),
        ("BOOL", (-128, 127)),
    ],
)
def test_int_bounds(text, bounds):
    assert parse_mysql_type(text).int_bounds == bounds


def test_parsed_types_are_hashable_values():
    assert parse_mysql_type("int unsigned") == parse_mysql_type("INT(10) UNSIGNED")
    assert parse_mysql_type("int") != parse_mysql_type("int unsigned")
    assert len({parse_mysql_type("INT"), parse_mysql_type("INTEGER"), parse_mysql_type("int(11)")}) == 1


@pytest.mark.parametrize("text", [v[0] for v in VALID_TYPES], ids=[v[0] for v in VALID_TYPES])
def test_full_name_parses_back_to_the_same_type(text):
    t = parse_mysql_type(text)
    again = parse_mysql_type(t.full_name)
    assert again.full_name == t.full_name
    assert again.short_name == t.short_name
    assert again.code == t.code


# ---------------------------------------------------------------------------
# parse_mysql_type: every invalid input is a TypeSyntaxError with a useful message

# (input, words the message must contain)
INVALID_TYPES = [
    ("DECIMAL(66,0)", ["66", "65"]),
    ("DECIMAL(66)", ["66"]),
    ("DECIMAL(10,31)", ["31", "30"]),
    ("DECIMAL(5,6)", ["DECIMAL(5,6)"]),
    ("DECIMAL(0)", ["DECIMAL"]),
    ("DECIMAL(1,2,3)", ["DECIMAL"]),
    ("BIT(65)", ["BIT", "65", "64"]),
    ("BIT(0)", ["BIT"]),
    ("VARCHAR", ["VARCHAR", "length"]),
    ("VARBINARY", ["VARBINARY", "length"]),
    ("VARCHAR(65536)", ["65536"]),
    ("CHAR(256)", ["CHAR", "256"]),
    ("TIME(7)", ["TIME", "7", "0..6"]),
    ("DATETIME(7)", ["DATETIME", "7"]),
    ("TIMESTAMP(10)", ["TIMESTAMP", "10"]),
    ("TIMESTAMP(-1)", ["TIMESTAMP(-1)"]),
    ("INT(256)", ["INT", "256"]),
    ("TINYINT(0)", ["TINYINT"]),
    ("INT(a)", ["INT(a)"]),
    ("INT(3,2)", ["INT"]),
    ("YEAR(2)", ["YEAR", "2"]),
    ("DATE(3)", ["DATE"]),
    ("JSON(1)", ["JSON"]),
    ("BOOL(1)", ["BOOL"]),
    ("FLOAT(54)", ["54"]),
    ("FLOAT(10,31)", ["FLOAT"]),
    ("FLOAT(3,4)", ["FLOAT"]),
    ("DOUBLE(256,2)", ["DOUBLE"]),
    ("DOUBLE(5)", ["DOUBLE"]),
    # unknown types
    ("FOO", ["foo"]),
    ("VARCHAR2(10)", ["varchar2"]),
    ("STRING", ["string"]),
    ("UUID", ["uuid"]),
    ("", []),
    ("   ", []),
    ("(10)", []),
    # ENUM / SET without (valid) members
    ("ENUM", ["ENUM", "members"]),
    ("ENUM()", ["ENUM", "members"]),
    ("SET", ["SET"]),
    ("SET()", ["SET"]),
    ("ENUM(a,b)", ["quoted"]),
    ("ENUM('a',b)", ["quoted"]),
    ("ENUM('a'", []),
    ("SET('a,b')", ["SET", ","]),
    ("SET(" + ",".join(f"'m{i}'" for i in range(65)) + ")", ["64"]),
    # UNSIGNED / ZEROFILL on types that cannot be unsigned
    ("VARCHAR(10) UNSIGNED", ["VARCHAR", "UNSIGNED"]),
    ("CHAR UNSIGNED", ["CHAR", "UNSIGNED"]),
    ("TEXT UNSIGNED", ["TEXT", "UNSIGNED"]),
    ("BLOB UNSIGNED", ["UNSIGNED"]),
    ("JSON UNSIGNED", ["JSON", "UNSIGNED"]),
    ("DATE UNSIGNED", ["DATE", "UNSIGNED"]),
    ("DATETIME UNSIGNED", ["DATETIME", "UNSIGNED"]),
    ("ENUM('a') UNSIGNED", ["ENUM", "UNSIGNED"]),
    ("SET('a') ZEROFILL", ["SET", "UNSIGNED"]),
    ("BIT UNSIGNED", ["BIT", "UNSIGNED"]),
    ("VARCHAR(3) ZEROFILL", ["VARCHAR"]),
    # trailing garbage
    ("INT(11) garbage", ["garbage"]),
    ("INT(11)x", ["x"]),
    ("INT,", [","]),
    ("INT UNSIGNED NOT NULL", ["NOT"]),
    ("INT PRIMARY KEY", ["PRIMARY"]),
    ("VARCHAR(10) COLLATE", ["COLLATE"]),
    ("VARCHAR(10) CHARACTER SET", ["CHARACTER"]),
    ("INT(", ["("]),
    ("INT)", [")"]),
    ("DECIMAL(10,2", []),
]


@pytest.mark.parametrize("text,words", INVALID_TYPES, ids=[repr(v[0])[:40] for v in INVALID_TYPES])
def test_invalid_types_raise_type_syntax_error(text, words):
    with pytest.raises(TypeSyntaxError) as info:
        parse_mysql_type(text)
    message = str(info.value)
    assert message  # never an empty message
    for word in words:
        assert word.lower() in message.lower(), (word, message)


def test_type_syntax_error_is_a_value_error():
    assert issubclass(TypeSyntaxError, ValueError)


# ---------------------------------------------------------------------------
# split_column_types


def test_split_design_example():
    assert split_column_types("id INT UNSIGNED, doc JSON, st ENUM('a','b'), flags BIT(8)") == [
        ("id", "INT UNSIGNED"),
        ("doc", "JSON"),
        ("st", "ENUM('a','b')"),
        ("flags", "BIT(8)"),
    ]


def test_split_ignores_commas_inside_parentheses():
    assert split_column_types("a DECIMAL(10,2), b DOUBLE(20,3)") == [("a", "DECIMAL(10,2)"), ("b", "DOUBLE(20,3)")]


def test_split_ignores_commas_and_parentheses_inside_quotes():
    assert split_column_types("s SET('x,y','z'), e ENUM('a)','(b'), f INT") == [
        ("s", "SET('x,y','z')"),
        ("e", "ENUM('a)','(b')"),
        ("f", "INT"),
    ]


def test_split_back_quoted_names():
    assert split_column_types("`my col` INT, `a,b` VARCHAR(10), `x(y)` JSON") == [
        ("my col", "INT"),
        ("a,b", "VARCHAR(10)"),
        ("x(y)", "JSON"),
    ]


def test_split_strips_whitespace_and_skips_empty_items():
    assert split_column_types("  , a  INT  UNSIGNED ,, b JSON , ") == [("a", "INT  UNSIGNED"), ("b", "JSON")]
    assert split_column_types("\n  id BIGINT,\n  doc JSON\n") == [("id", "BIGINT"), ("doc", "JSON")]
    assert split_column_types("") == []


def test_split_name_and_type_separated_by_any_whitespace():
    assert split_column_types("a\tINT, b\nJSON") == [("a", "INT"), ("b", "JSON")]


def test_split_single_item():
    assert split_column_types("id BIGINT") == [("id", "BIGINT")]


def test_split_items_split_from_the_type_are_parseable():
    pairs = split_column_types("id INT UNSIGNED, st ENUM('a','b'), d DECIMAL(10,2)")
    assert [parse_mysql_type(t).full_name for _, t in pairs] == [
        "int(10) unsigned",
        "enum('a','b')",
        "decimal(10,2)",
    ]


@pytest.mark.parametrize("text,word", [("x", "x"), ("a INT, b", "b"), ("`name`", "name")])
def test_split_item_without_type_is_an_error(text, word):
    with pytest.raises(TypeSyntaxError, match="no type") as info:
        split_column_types(text)
    assert word in str(info.value)


def test_split_unclosed_back_quote_is_an_error():
    with pytest.raises(TypeSyntaxError, match="back-quote"):
        split_column_types("`x INT")


def test_split_doubled_back_quote_in_name():
    assert split_column_types("`a``b` INT") == [("a`b", "INT")]


# ---------------------------------------------------------------------------
# default_mysql_type: docs/input.md, "Column types"


@pytest.mark.parametrize(
    "spark,short,full,code",
    [
        (T.BooleanType(), "tinyint", "tinyint(1)", TYPE_TINY),
        (T.ByteType(), "tinyint", "tinyint(4)", TYPE_TINY),
        (T.ShortType(), "smallint", "smallint(6)", TYPE_SHORT),
        (T.IntegerType(), "int", "int(11)", TYPE_LONG),
        (T.LongType(), "bigint", "bigint(20)", TYPE_LONGLONG),
        (T.FloatType(), "float", "float", TYPE_FLOAT),
        (T.DoubleType(), "double", "double", TYPE_DOUBLE),
        (T.DecimalType(12, 3), "decimal", "decimal(12,3)", TYPE_NEWDECIMAL),
        (T.DecimalType(38, 0), "decimal", "decimal(38,0)", TYPE_NEWDECIMAL),
        (T.DecimalType(), "decimal", "decimal(10,0)", TYPE_NEWDECIMAL),
        (T.StringType(), "varchar", None, TYPE_VARCHAR),
        (T.BinaryType(), "varbinary", None, TYPE_VARCHAR),
        (T.DateType(), "date", "date", TYPE_DATE),
        (T.TimestampType(), "timestamp", "timestamp", TYPE_TIMESTAMP),
        (T.TimestampNTZType(), "datetime", "datetime", TYPE_DATETIME),
        (T.ArrayType(T.IntegerType()), "json", "json", TYPE_JSON),
        (T.MapType(T.StringType(), T.LongType()), "json", "json", TYPE_JSON),
        (T.StructType([F("a", T.IntegerType())]), "json", "json", TYPE_JSON),
    ],
    ids=lambda v: v.simpleString() if hasattr(v, "simpleString") else None,
)
def test_default_mysql_type(spark, short, full, code):
    t = default_mysql_type(spark)
    assert isinstance(t, MySQLType)
    assert t.short_name == short
    if full is not None:
        assert t.full_name == full
    assert t.code == code
    assert not t.unsigned


def test_default_string_and_binary_are_sized_varchar():
    s = default_mysql_type(T.StringType())
    assert s.kind == "varchar" and not s.binary and s.length and s.length > 0
    assert s.full_name == f"varchar({s.length})"
    b = default_mysql_type(T.BinaryType())
    assert b.kind == "varchar" and b.binary
    assert b.full_name == f"varbinary({b.length})"


@pytest.mark.parametrize("spark", [T.NullType(), T.DayTimeIntervalType(), T.YearMonthIntervalType()])
def test_default_mysql_type_rejects_types_without_equivalent(spark):
    with pytest.raises(TypeError, match=spark.simpleString().split("(")[0].split(" ")[0]):
        default_mysql_type(spark)


# ---------------------------------------------------------------------------
# build_table_schema


def schema(fields, column_types=None, primary_key=None, unique_keys=None):
    return build_table_schema(T.StructType(fields), fields, column_types, primary_key, unique_keys)


def flags(table):
    return {c.name: c.flag for c in table.columns}


def test_reference_worked_check_varchar_pk():
    # TiCDC's Open Protocol test: `a varchar(10) primary key` -> f=10, `b varchar(10)` -> f=64
    t = schema([F("a", T.StringType()), F("b", T.StringType())], "a VARCHAR(10), b VARCHAR(10)", "a")
    assert flags(t) == {"a": 10, "b": 64}
    assert t.column_named("a").type.full_name == "varchar(10)"


def test_reference_worked_check_integers_add_binary_bit():
    # `tinyint pk` -> 11, nullable `int` -> 65
    t = schema([F("t", T.ByteType()), F("i", T.IntegerType())], None, "t")
    assert flags(t) == {"t": 11, "i": 65}


def test_unsigned_flag():
    t = schema(
        [F("id", T.LongType(), False), F("u", T.DecimalType(20, 0)), F("d", T.DecimalType(5, 2))],
        "id INT UNSIGNED, u BIGINT UNSIGNED, d DECIMAL(5,2) UNSIGNED",
        "id",
    )
    # int pk: Binary|HandleKey|PrimaryKey|Unsigned
    assert flags(t) == {"id": 1 | 2 | 8 | 128, "u": 1 | 64 | 128, "d": 1 | 64 | 128}


@pytest.mark.parametrize(
    "spark,mysql,flag",
    [
        (T.StringType(), "CHAR(3)", 64),
        (T.StringType(), "VARCHAR(3)", 64),
        (T.StringType(), "TEXT", 64),
        (T.StringType(), "ENUM('a')", 64),
        (T.StringType(), "SET('a')", 64),
        (T.BinaryType(), "VARBINARY(3)", 65),
        (T.BinaryType(), "BINARY(3)", 65),
        (T.BinaryType(), "BLOB", 65),
        (T.StringType(), "JSON", 65),
        (T.StringType(), "TIME(3)", 65),
        (T.DateType(), "DATE", 65),
        (T.TimestampType(), "TIMESTAMP(6)", 65),
        (T.TimestampNTZType(), "DATETIME", 65),
        (T.DoubleType(), "FLOAT", 65),
        (T.DecimalType(5, 2), "DECIMAL(5,2)", 65),
    ],
)
def test_binary_flag_follows_the_charset(spark, mysql, flag):
    t = schema([F("c", spark)], f"c {mysql}")
    assert t.column_named("c").flag & ~FLAG_HANDLE_KEY == flag


def test_bit_and_year_columns_carry_the_unsigned_flag():
    t = schema([F("id", T.IntegerType(), False), F("b", T.LongType()), F("y", T.IntegerType())],
               "b BIT(8), y YEAR", "id")
    assert t.column_named("b").flag == 1 | 64 | 128
    assert t.column_named("y").flag == 1 | 64 | 128


def test_types_come_from_column_types_then_metadata_then_defaults():
    fields = [
        F("a", T.LongType()),
        F("b", T.StringType(), True, {"mysql_type": "ENUM('x','y')"}),
        F("c", T.StringType(), True, {"mysql_type": "JSON"}),
        F("d", T.IntegerType()),
    ]
    t = schema(fields, "a BIGINT UNSIGNED, c TEXT")
    assert t.column_named("a").type.full_name == "bigint(20) unsigned"  # column-types
    assert t.column_named("b").type.full_name == "enum('x','y')"  # metadata
    assert t.column_named("c").type.short_name == "text"  # column-types beats metadata
    assert t.column_named("d").type.full_name == "int(11)"  # Spark default
    assert t.names == ("a", "b", "c", "d")


def test_metadata_mysql_type_for_names_that_are_not_identifiers():
    fields = [F("weird name, with comma", T.StringType(), True, {"mysql_type": "VARCHAR(20)"})]
    t = schema(fields)
    assert t.column_named("weird name, with comma").type.full_name == "varchar(20)"


def test_column_types_names_are_case_insensitive():
    t = schema([F("UserId", T.LongType())], "userid BIGINT UNSIGNED")
    assert t.column_named("UserId").type.unsigned


def test_column_order_and_spark_type_are_kept():
    fields = [F("z", T.IntegerType()), F("a", T.StringType()), F("m", T.DateType())]
    t = schema(fields)
    assert t.names == ("z", "a", "m")
    assert [c.spark_type for c in t.columns] == [T.IntegerType(), T.StringType(), T.DateType()]


# Spark types that carry each declared MySQL type (docs/input.md, "Column types")
@pytest.mark.parametrize(
    "spark,mysql",
    [
        (T.DecimalType(20, 0), "BIGINT UNSIGNED"),
        (T.LongType(), "BIGINT UNSIGNED"),
        (T.IntegerType(), "INT UNSIGNED"),
        (T.BooleanType(), "TINYINT(1)"),
        (T.StringType(), "ENUM('a','b')"),
        (T.StringType(), "SET('a','b')"),
        (T.LongType(), "BIT(8)"),
        (T.BinaryType(), "BIT(8)"),
        (T.StringType(), "TIME(3)"),
        (T.TimestampNTZType(), "DATETIME(6)"),
        (T.TimestampType(), "TIMESTAMP(3)"),
        (T.IntegerType(), "YEAR"),
        (T.StringType(), "JSON"),
        (T.StructType([F("k", T.StringType())]), "JSON"),
        (T.ArrayType(T.LongType()), "JSON"),
        (T.DecimalType(10, 2), "DECIMAL(10,2)"),
        (T.DoubleType(), "FLOAT"),
        (T.FloatType(), "DOUBLE"),
        (T.StringType(), "CHAR(10)"),
        (T.StringType(), "LONGTEXT"),
        (T.BinaryType(), "VARBINARY(16)"),
        (T.BinaryType(), "LONGBLOB"),
        (T.DateType(), "DATE"),
    ],
)
def test_compatible_spark_types_are_accepted(spark, mysql):
    t = schema([F("c", spark)], f"c {mysql}")
    assert t.column_named("c").type == parse_mysql_type(mysql)


@pytest.mark.parametrize(
    "spark,mysql",
    [
        (T.LongType(), "JSON"),
        (T.StringType(), "INT"),
        (T.LongType(), "DATE"),
        (T.StringType(), "BIGINT UNSIGNED"),
        (T.DecimalType(10, 2), "BIGINT UNSIGNED"),
        (T.TimestampType(), "TIME"),
        (T.StringType(), "YEAR"),
        (T.StringType(), "BIT(8)"),
        (T.DoubleType(), "DECIMAL(10,2)"),
        (T.IntegerType(), "VARCHAR(3)"),
        (T.DateType(), "JSON"),
        (T.BinaryType(), "DATETIME"),
        (T.ArrayType(T.IntegerType()), "VARCHAR(10)"),
    ],
)
def test_incompatible_spark_type_in_column_types(spark, mysql):
    with pytest.raises(ConfigError) as info:
        schema([F("col1", spark)], f"col1 {mysql}")
    err = info.value
    assert err.option == "column-types"
    message = str(err)
    assert "'col1'" in message
    assert spark.simpleString() in message


def test_incompatible_spark_type_in_metadata_names_the_metadata_and_column():
    fields = [F("y", T.IntegerType(), True, {"mysql_type": "VARCHAR(3)"})]
    with pytest.raises(ConfigError) as info:
        schema(fields)
    message = str(info.value)
    assert "mysql_type" in info.value.option
    assert "'y'" in message
    assert "int" in message
    assert "VARCHAR" in message


def test_bad_metadata_type_is_a_config_error():
    with pytest.raises(ConfigError) as info:
        schema([F("x", T.StringType(), True, {"mysql_type": "ENUM"})])
    assert "mysql_type" in info.value.option
    assert "'x'" in info.value.option
    assert "members" in str(info.value)


def test_bad_type_in_column_types_names_option_and_column():
    with pytest.raises(ConfigError) as info:
        schema([F("c", T.StringType())], "c VARCHAR")
    assert info.value.option == "column-types"
    assert "'c'" in str(info.value)
    assert "length" in str(info.value)


def test_column_types_syntax_error_is_a_config_error():
    with pytest.raises(ConfigError) as info:
        schema([F("c", T.StringType())], "`c INT")
    assert info.value.option == "column-types"


def test_spark_type_without_default_needs_a_declared_type():
    with pytest.raises(ConfigError) as info:
        schema([F("n", T.NullType())])
    assert info.value.option == "column-types"
    assert "'n'" in str(info.value)
    # declaring it is not enough either for a void column: no MySQL type takes it
    with pytest.raises(ConfigError):
        schema([F("n", T.NullType())], "n INT")


@pytest.mark.parametrize(
    "kwargs,option,column",
    [
        (dict(column_types="x INT"), "column-types", "x"),
        (dict(primary_key="zz"), "primary-key", "zz"),
        (dict(primary_key="id,zz"), "primary-key", "zz"),
        (dict(unique_keys="zz"), "unique-keys", "zz"),
        (dict(unique_keys="email;a,zz"), "unique-keys", "zz"),
        (dict(unique_keys="uk(zz)"), "unique-keys", "zz"),
    ],
)
def test_unknown_column_names_are_config_errors(kwargs, option, column):
    fields = [F("id", T.LongType(), False), F("email", T.StringType(), False), F("a", T.IntegerType())]
    with pytest.raises(ConfigError) as info:
        schema(fields, **kwargs)
    assert info.value.option == option
    message = str(info.value)
    assert repr(column) in message
    # the message lists the real columns
    assert "id" in message and "email" in message


def test_two_primary_keys_is_an_error():
    fields = [F("a", T.IntegerType()), F("b", T.IntegerType())]
    with pytest.raises(ConfigError) as info:
        schema(fields, primary_key="a;b")
    assert info.value.option == "primary-key"


@pytest.mark.parametrize("unique_keys", ["uk()", "uk( )"])
def test_empty_key_is_an_error(unique_keys):
    with pytest.raises(ConfigError) as info:
        schema([F("a", T.IntegerType())], unique_keys=unique_keys)
    assert info.value.option == "unique-keys"


def test_primary_key_columns_become_not_null():
    t = schema([F("a", T.IntegerType(), True), F("b", T.StringType(), True), F("c", T.IntegerType(), True)],
               primary_key="a,b")
    assert not t.column_named("a").nullable
    assert not t.column_named("b").nullable
    assert t.column_named("c").nullable
    assert t.column_named("a").flag & FLAG_NULLABLE == 0


def test_primary_key_is_the_handle():
    fields = [F("id", T.LongType()), F("email", T.StringType(), False), F("v", T.StringType())]
    t = schema(fields, primary_key="id", unique_keys="email")
    assert [c.name for c in t.handle_columns] == ["id"]
    assert t.primary_key_names == ["id"]
    assert not t.keyless
    assert flags(t) == {
        "id": FLAG_BINARY | FLAG_HANDLE_KEY | FLAG_PRIMARY_KEY,
        "email": FLAG_UNIQUE_KEY,
        "v": FLAG_NULLABLE,
    }


def test_composite_primary_key_beats_a_smaller_unique_key():
    fields = [F("a", T.IntegerType()), F("b", T.IntegerType()), F("u", T.IntegerType(), False)]
    t = schema(fields, primary_key="a,b", unique_keys="u")
    assert [c.name for c in t.handle_columns] == ["a", "b"]
    assert t.column_named("a").flag == 1 | 2 | 8 | 32
    assert t.column_named("b").flag == 1 | 2 | 8 | 32
    assert t.column_named("u").flag == 1 | 16


def test_handle_is_the_not_null_unique_key_with_fewest_columns():
    fields = [
        F("id", T.LongType(), True),
        F("email", T.StringType(), False),
        F("a", T.IntegerType(), False),
        F("b", T.IntegerType(), False),
    ]
    t = schema(fields, unique_keys="a,b;email")
    assert [c.name for c in t.handle_columns] == ["email"]
    assert t.primary_key_names == []
    assert not t.keyless
    assert t.column_named("email").flag == FLAG_HANDLE_KEY | FLAG_UNIQUE_KEY
    assert t.column_named("a").flag == FLAG_BINARY | FLAG_UNIQUE_KEY | FLAG_MULTIPLE_KEY
    assert t.column_named("id").flag == FLAG_BINARY | FLAG_NULLABLE


def test_tidbs_primary_key_is_the_first_all_not_null_unique_key_not_the_handle():
    """TiDB's GetPrimaryKey (Simple's ``primary``, Debezium's primaryKeyColumnNames) takes the first declared
    NOT NULL unique key, where TiCDC's handle takes the one with fewest columns."""
    fields = [F("id", T.LongType(), True), F("email", T.StringType(), False), F("a", T.IntegerType(), False),
              F("b", T.IntegerType(), False)]
    t = schema(fields, unique_keys="a,b;email")
    assert t.tidb_primary_key == ("a", "b") and [c.name for c in t.handle_columns] == ["email"]
    assert schema(fields, primary_key="b", unique_keys="email").tidb_primary_key == ("b",)
    assert schema(fields, unique_keys="id").tidb_primary_key == ()  # nullable: no primary key


def test_an_unnamed_unique_key_takes_its_first_columns_name_as_mysql_gives_it():
    fields = [F("a", T.IntegerType(), False), F("b", T.IntegerType(), False)]
    assert [i.name for i in schema(fields, unique_keys="a;a,b;uk(b)").indexes] == ["a", "a_2", "uk"]
    assert [i.name for i in schema(fields, unique_keys="a_2(b);a;a").indexes] == ["a_2", "a", "a_3"]


def test_handle_tie_goes_to_the_first_declared_unique_key():
    fields = [F("a", T.IntegerType(), False), F("b", T.IntegerType(), False)]
    t = schema(fields, unique_keys="a;b")
    assert [c.name for c in t.handle_columns] == ["a"]
    t = schema(fields, unique_keys="b;a")
    assert [c.name for c in t.handle_columns] == ["b"]


def test_nullable_unique_key_is_not_a_handle():
    fields = [F("c", T.StringType(), True), F("a", T.IntegerType(), False), F("b", T.IntegerType(), False)]
    # the one-column key is nullable, so the two-column NOT NULL key is the handle
    t = schema(fields, unique_keys="c;a,b")
    assert [c.name for c in t.handle_columns] == ["a", "b"]
    assert t.column_named("c").flag == FLAG_UNIQUE_KEY | FLAG_NULLABLE
    assert not t.keyless


def test_unique_key_with_one_nullable_member_is_not_a_handle():
    fields = [F("a", T.IntegerType(), False), F("b", T.IntegerType(), True)]
    t = schema(fields, unique_keys="a,b")
    assert t.keyless
    assert {c.name for c in t.handle_columns} == {"a", "b"}


def test_no_key_means_every_column_is_the_key():
    fields = [F("a", T.StringType()), F("b", T.IntegerType())]
    t = schema(fields)
    assert t.keyless
    assert [c.name for c in t.handle_columns] == ["a", "b"]
    assert t.primary_key_names == []
    assert t.indexes == ()


def test_only_nullable_unique_keys_is_keyless():
    fields = [F("a", T.StringType()), F("b", T.IntegerType())]
    t = schema(fields, unique_keys="a")
    assert t.keyless
    assert t.column_named("a").unique_key


def test_keyless_table_flags_have_no_handle_bit():
    fields = [F("a", T.StringType()), F("b", T.IntegerType())]
    t = schema(fields)
    assert flags(t) == {"a": 64, "b": 65}


def test_multiple_key_bit_on_every_member_of_a_multi_column_key():
    fields = [F("a", T.IntegerType(), False), F("b", T.IntegerType(), False), F("c", T.IntegerType(), False)]
    t = schema(fields, primary_key="a", unique_keys="b,c")
    assert t.column_named("a").flag == 1 | 2 | 8
    assert t.column_named("b").flag == 1 | 16 | 32
    assert t.column_named("c").flag == 1 | 16 | 32
    assert t.column_named("b").multiple_key and t.column_named("c").multiple_key
    assert not t.column_named("a").multiple_key


def test_column_in_primary_and_unique_keys_has_both_bits():
    fields = [F("a", T.IntegerType()), F("b", T.IntegerType(), False)]
    t = schema(fields, primary_key="a", unique_keys="a,b")
    assert t.column_named("a").flag == 1 | 2 | 8 | 16 | 32
    assert t.column_named("a").primary_key and t.column_named("a").unique_key


def test_named_unique_keys():
    fields = [F("id", T.LongType(), False), F("email", T.StringType(), False),
              F("a", T.IntegerType()), F("b", T.IntegerType())]
    t = schema(fields, primary_key="id", unique_keys="uk_email(email);a,b")
    assert [(i.name, i.columns, i.primary) for i in t.indexes[:2]] == [
        ("PRIMARY", ("id",), True),
        ("uk_email", ("email",), False),
    ]
    unnamed = t.indexes[2]
    assert unnamed.columns == ("a", "b") and not unnamed.primary
    assert unnamed.name and unnamed.name not in {"PRIMARY", "uk_email"}


def test_named_unique_key_with_spaces_and_back_quotes():
    fields = [F("a", T.IntegerType(), False), F("b", T.IntegerType(), False)]
    t = schema(fields, unique_keys=" uk_ab ( `a` , b ) ")
    idx = t.find_index("uk_ab")
    assert idx is not None and idx.columns == ("a", "b")


def test_unnamed_unique_keys_get_distinct_names():
    fields = [F("a", T.IntegerType(), False), F("b", T.IntegerType(), False), F("c", T.IntegerType())]
    t = schema(fields, unique_keys="a;b;c")
    names = [i.name for i in t.indexes]
    assert len(set(names)) == 3
    assert [i.columns for i in t.indexes] == [("a",), ("b",), ("c",)]


def test_key_column_names_resolve_case_insensitively_to_the_real_name():
    fields = [F("Id", T.LongType()), F("Email", T.StringType(), False)]
    t = schema(fields, primary_key="ID", unique_keys="UK(EMAIL)")
    assert t.primary_key_names == ["Id"]
    assert t.find_index("uk").columns == ("Email",)


def test_find_index():
    fields = [F("id", T.LongType()), F("email", T.StringType(), False)]
    t = schema(fields, primary_key="id", unique_keys="UK_Email(email)")
    assert t.find_index("primary").primary
    assert t.find_index("PRIMARY").columns == ("id",)
    assert t.find_index("uk_email").name == "UK_Email"
    assert t.find_index("UK_EMAIL").columns == ("email",)
    assert t.find_index("nope") is None


def test_column_and_find_column():
    t = schema([F("Name", T.StringType())])
    assert t.column_named("Name").name == "Name"
    with pytest.raises(KeyError):
        t.column_named("name")  # exact lookup
    assert t.find_column("NAME").name == "Name"  # case-insensitive lookup
    assert t.find_column("missing") is None


def test_primary_key_names_in_column_order():
    fields = [F("a", T.IntegerType()), F("b", T.IntegerType()), F("c", T.IntegerType())]
    t = schema(fields, primary_key="c,a")
    assert t.primary_key_names == ["a", "c"]
    assert t.find_index("PRIMARY").columns == ("c", "a")


def test_not_null_spark_field_is_a_not_null_column():
    t = schema([F("a", T.IntegerType(), False), F("b", T.IntegerType(), True)])
    assert not t.column_named("a").nullable
    assert t.column_named("b").nullable


# ---------------------------------------------------------------------------
# TSO helpers


def test_tso_helpers():
    assert tso_from_unix_ms(1) == 1 << 18
    assert tso_from_unix_ms(1_700_000_000_000) >> 18 == 1_700_000_000_000
    assert tso_physical_ms((1234 << 18) | 0x3FFFF) == 1234
    assert tso_physical_ms(tso_from_unix_ms(42)) == 42


def test_now_tso_is_a_current_tso():
    import time

    before = int(time.time() * 1000)
    ts = now_tso()
    after = int(time.time() * 1000)
    assert ts & 0x3FFFF == 0
    assert before - 1 <= tso_physical_ms(ts) <= after + 1


# TiDB's Flen, as TiCDC's Simple tableSchema shows it (TiCDC simple message_test.go TestNewTableSchema, and
# TiDB's parser for the fractional and ENUM/SET widths).
FLEN_CASES = [
    ("tinyint", 4), ("tinyint unsigned", 3), ("smallint", 6), ("mediumint unsigned", 8), ("int", 11),
    ("int unsigned", 10), ("bigint", 20), ("bigint unsigned", 20), ("bool", 1), ("int(5)", 5),
    ("float", 12), ("float(7,3)", 7), ("double", 22), ("decimal", 10), ("decimal(12,4)", 12),
    ("bit", 1), ("bit(10)", 10), ("year", 4), ("date", 10), ("datetime", 19), ("datetime(3)", 23),
    ("timestamp", 19), ("timestamp(6)", 26), ("time", 10), ("time(2)", 13), ("char", 1), ("char(8)", 8),
    ("varchar(255)", 255), ("binary", 1), ("varbinary(16)", 16), ("tinytext", 255), ("text", 65535),
    ("mediumblob", 16777215), ("longtext", 4294967295), ("json", 4294967295),
    ("enum('a','b','c')", 1), ("enum('new','shipped ')", 7), ("set('a','b','c')", 5), ("set('é','bb')", 5),
]


@pytest.mark.parametrize("text,flen", FLEN_CASES, ids=[c[0] for c in FLEN_CASES])
def test_flen_is_what_tidb_stores(text, flen):
    assert parse_mysql_type(text).flen == flen
