"""``java.sql.Types`` codes, which Canal's ``sqlType`` and Debezium's ``jdbcType`` carry (TiCDC common/java.go)."""

from __future__ import annotations

CHAR, DECIMAL, INTEGER, SMALLINT, FLOAT, REAL, DOUBLE = 1, 3, 4, 5, 6, 7, 8
VARCHAR, DATE, TIME, TIMESTAMP, TIMESTAMP_WITH_TIMEZONE = 12, 91, 92, 93, 2014
BLOB, CLOB, OTHER = 2004, 2005, 1111
BIGINT, TINYINT, BIT, BINARY, VARBINARY = -5, -6, -7, -2, -3
