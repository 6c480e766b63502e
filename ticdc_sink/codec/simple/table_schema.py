"""The Simple protocol's ``tableSchema``: a table's shape as TiDB's table info shows it, and its identity.

TiCDC fills it from TiDB (TiDB docs: *TiCDC Simple Protocol*, TableSchema, Column
and Index definitions; TiCDC ``pkg/sink/codec/simple/message.go`` ``newTableSchema``).  The sink has no TiDB,
so it takes what TiDB would store from the column model: TiDB's short type name,
its Flen, the scale or fsp, the members, the unsigned and zerofill flags (BIT and
YEAR are always unsigned, YEAR zerofill), utf8mb4 for text and ``binary``
otherwise, and the column's DEFAULT as TiDB stores it.  A primary key of one integer column is the row
handle in TiDB: it is not among the indexes and TiCDC appends it as
``primary``; any other primary key is the index ``PRIMARY``.

``tableID`` is the ``table-id`` option, else a number derived from the table's
name; ``version`` (the DML's ``schemaVersion``) is the ``schema-version``
option, else a number derived from the columns and indexes, so that a consumer
caching schemas by (table, version) sees a new version whenever the shape
changes and the same one from every task and batch.  Both are positive (TiCDC
omits a zero ``tableID`` or ``schemaVersion`` in DML messages).  A table without a primary key lists the first
NOT NULL unique key a second time, as ``primary``: TiDB's implicit primary key.
"""

from __future__ import annotations

import hashlib
import zlib
from dataclasses import dataclass

from ...config.sink import SinkConfig
from ...table.column_default import bit_default_number
from ...table.mysql_types import TABLE_CHARSET, TABLE_COLLATION
from ...table.schema import TableSchema
from ..shared.json_text import GO_JSON, quote_json


@dataclass(frozen=True)
class ColumnInfo:
    name: str
    mysql_type: str  # TiDB's TypeToStr
    charset: str
    collate: str
    length: int  # TiDB's Flen
    decimals: int  # scale or fsp (0 when the type has none)
    elements: tuple[str, ...]
    unsigned: bool
    zerofill: bool
    nullable: bool
    has_scale: bool  # FLOAT/DOUBLE keep a scale TiCDC never writes; DECIMAL and the fractional types write it
    default: str | None = None  # TiDB's stored text (table/column_default.py)

    @property
    def json_default(self) -> str:
        """``default`` as TiCDC's JSON writes it: a string, but a BIT's as its number (``newColumnSchema``)."""
        if self.default is None:
            return "null"
        if self.mysql_type == "bit":
            return str(bit_default_number(self.default))
        return quote_json(self.default, GO_JSON)


@dataclass(frozen=True)
class IndexInfo:
    name: str
    unique: bool
    primary: bool
    nullable: bool  # a member column is nullable
    columns: tuple[str, ...]


@dataclass(frozen=True)
class SimpleTable:
    """A table shape as Simple messages describe it, with its JSON ``columns`` and ``indexes`` text."""

    columns: tuple[ColumnInfo, ...]
    indexes: tuple[IndexInfo, ...]
    version: int

    def json(self, database: str, table: str, table_id: int) -> str:
        """The ``tableSchema`` object (TiCDC's field order; its fields are never omitted)."""
        return (f'{{"schema":{quote_json(database, GO_JSON)},"table":{quote_json(table, GO_JSON)},'
                f'"tableID":{table_id},"version":{self.version},{_shape_json(self.columns, self.indexes)}}}')


def simple_table(table: TableSchema, config: SinkConfig | None) -> SimpleTable:
    """``table`` as Simple describes it; its version is ``config``'s ``schema-version``, else (or without a
    config: a shape other than the writing table's) derived from the shape."""
    columns = tuple(_column_info(c) for c in table.columns)
    indexes = _index_infos(table)
    version = (config.protocol_options.schema_version if config else 0) or _derived_number(_shape_json(columns, indexes), bits=63)
    return SimpleTable(columns, indexes, version)


def table_id(database: str, table: str, config: SinkConfig) -> int:
    """The ``table-id`` option, else a stable positive 31-bit number from the table's name."""
    return config.protocol_options.table_id or (zlib.crc32(f"{database}.{table}".encode()) & 0x7FFF_FFFF) or 1


def _derived_number(text: str, bits: int) -> int:
    digest = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
    return (digest & ((1 << bits) - 1)) or 1


def _column_info(column) -> ColumnInfo:
    t = column.type
    binary = t.has_binary_charset
    return ColumnInfo(
        name=column.name, mysql_type=t.base_name,
        charset="binary" if binary else TABLE_CHARSET, collate="binary" if binary else TABLE_COLLATION,
        length=t.flen, decimals=t.decimals or 0, elements=t.elements,
        unsigned=t.unsigned or t.kind in ("bit", "year"), zerofill=t.zerofill or t.kind == "year",
        nullable=column.nullable, has_scale=t.kind not in ("float", "double"), default=column.default,
    )


def _index_infos(table: TableSchema) -> tuple[IndexInfo, ...]:
    nullable = {c.name: c.nullable for c in table.columns}
    primary = next((i for i in table.indexes if i.primary), None)
    handle = primary is not None and len(primary.columns) == 1 and table.column_named(primary.columns[0]).type.is_integer
    infos = [IndexInfo(i.name, True, i.primary, any(nullable[c] for c in i.columns), i.columns)
             for i in table.indexes if not (handle and i.primary)]
    # TiDB's row handle is no index, and a NOT NULL unique key standing in for a primary key is not one: TiCDC
    # appends TiDB's primary key under this name.
    if not any(info.primary for info in infos) and table.tidb_primary_key:
        infos.append(IndexInfo("primary", True, True, False, table.tidb_primary_key))
    return tuple(infos)


def _shape_json(columns: tuple[ColumnInfo, ...], indexes: tuple[IndexInfo, ...]) -> str:
    return (f'"columns":[{",".join(_column_json(c) for c in columns)}],'
            f'"indexes":[{",".join(_index_json(i) for i in indexes)}]')


def _column_json(c: ColumnInfo) -> str:
    data_type = f'"mysqlType":"{c.mysql_type}","charset":"{c.charset}","collate":"{c.collate}"'
    if c.length:
        data_type += f',"length":{c.length}'
    if c.decimals and c.has_scale:
        data_type += f',"decimal":{c.decimals}'
    if c.elements:
        data_type += ',"elements":[' + ",".join(quote_json(e, GO_JSON) for e in c.elements) + "]"
    if c.unsigned:
        data_type += ',"unsigned":true'
    if c.zerofill:
        data_type += ',"zerofill":true'
    nullable = "true" if c.nullable else "false"
    return f'{{"name":{quote_json(c.name, GO_JSON)},"dataType":{{{data_type}}},"nullable":{nullable},"default":{c.json_default}}}'


def _index_json(i: IndexInfo) -> str:
    flags = ",".join(f'"{k}":{"true" if v else "false"}' for k, v in
                     (("unique", i.unique), ("primary", i.primary), ("nullable", i.nullable)))
    members = ",".join(quote_json(c, GO_JSON) for c in i.columns)
    return f'{{"name":{quote_json(i.name, GO_JSON)},{flags},"columns":[{members}]}}'
