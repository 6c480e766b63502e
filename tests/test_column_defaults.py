"""The DEFAULT clause of ``column-types``: what TiDB would store for each kind, and the defaults it refuses."""

import pytest

from ticdc_sink.table.column_default import InvalidDefault, bit_default_number, stored_default
from ticdc_sink.table.type_grammar import TypeSyntaxError, parse_mysql_type, split_default


def stored(declaration: str, nullable: bool = True):
    type_text, literal = split_default(declaration)
    return stored_default(literal, parse_mysql_type(type_text), nullable)


@pytest.mark.parametrize("declaration, text", [
    ("INT", None), ("INT DEFAULT NULL", None), ("INT DEFAULT 5", "5"), ("INT DEFAULT 1.6", "2"),
    ("TINYINT DEFAULT -5", "-5"), ("BIGINT UNSIGNED DEFAULT 18446744073709551615", "18446744073709551615"),
    ("BOOLEAN DEFAULT TRUE", "1"), ("DECIMAL(5,2) DEFAULT 1.5", "1.5"), ("FLOAT DEFAULT 2.5", "2.5"),
    ("DOUBLE DEFAULT -1.5e3", "-1500"), ("YEAR DEFAULT 2024", "2024"), ("CHAR(5) DEFAULT 'ab'", "ab"),
    ("VARCHAR(20) DEFAULT 'it''s \\\\ x'", "it's \\ x"), ("VARBINARY(4) DEFAULT x'6869'", "hi"),
    ("ENUM('a','b') DEFAULT 'B'", "b"), ("SET('a','b','c') DEFAULT 'c,a'", "a,c"),
    ("ENUM('default','x') DEFAULT 'default'", "default"), ("DATE DEFAULT '2020-01-02'", "2020-01-02"),
    ("DATETIME(3) DEFAULT '2020-01-02 03:04:05.678'", "2020-01-02 03:04:05.678"),
    ("TIMESTAMP DEFAULT CURRENT_TIMESTAMP", "CURRENT_TIMESTAMP"),
    ("DATETIME(3) DEFAULT NOW(3)", "CURRENT_TIMESTAMP(3)"), ("TIME DEFAULT '01:02:03'", "01:02:03"),
])
def test_a_default_is_kept_as_tidb_stores_it(declaration, text):
    assert stored(declaration) == text


def test_a_bit_default_keeps_its_bytes():
    assert bit_default_number(stored("BIT(3) DEFAULT b'101'")) == 5
    assert bit_default_number(stored("BIT(10) DEFAULT 1000")) == 1000


@pytest.mark.parametrize("declaration, why", [
    ("TINYINT DEFAULT 300", "out of range"), ("INT UNSIGNED DEFAULT -1", "out of range"),
    ("ENUM('a') DEFAULT 'z'", "not a member"), ("BIT(2) DEFAULT b'111'", "more than 2 bits"),
    ("VARCHAR(2) DEFAULT 'abc'", "longer than"), ("DATE DEFAULT 'soon'", "not a DATE"),
    ("INT DEFAULT CURRENT_TIMESTAMP", "DATETIME and TIMESTAMP only"),
    ("DATETIME(3) DEFAULT CURRENT_TIMESTAMP", "precision"), ("TEXT DEFAULT 'x'", "cannot have a literal default"),
    ("DECIMAL(3,1) DEFAULT 123.4", r"does not fit DECIMAL\(3,1\)"),
])
def test_a_default_the_type_cannot_hold_is_refused(declaration, why):
    with pytest.raises(InvalidDefault, match=why):
        stored(declaration)


def test_a_not_null_column_cannot_default_to_null():
    with pytest.raises(InvalidDefault, match="NOT NULL"):
        stored("INT DEFAULT NULL", nullable=False)


def test_a_default_that_is_no_literal_is_a_syntax_error():
    with pytest.raises(TypeSyntaxError, match="not a literal"):
        split_default("INT DEFAULT (1 + 1)")
