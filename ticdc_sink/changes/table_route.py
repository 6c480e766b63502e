"""Table routing: TiCDC's ``target-schema`` and ``target-table`` (a dispatch rule's, ``pkg/routing/router.go`` at
pingcap/ticdc@b813e76f), which rename a table in the messages that carry its name.

Each is an expression of literal text, ``{schema}`` and ``{table}`` (the
source names; ``config/sink_options.py`` checks them); an empty one keeps the
source name.  Only what a message says changes: its topic and partition still
come from the source names, as TiCDC's event router takes them.  A DDL row's statement goes as it is given: TiCDC rewrites
the names in it by restoring TiDB's parse of it, so the sink takes the
statement as the downstream should run it.
"""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pyarrow.compute as pc

from ..config.sink import SinkConfig
from ..ddl.statements import DDLChange
from ..table.text_join import join


def _substitute(expression: str, schema: str, table: str, default: str) -> str:
    if not expression:
        return default
    return expression.replace("{schema}", schema).replace("{table}", table)


class TableRoute:
    """The names a table's messages carry under the sink's ``target-schema`` and ``target-table``."""

    def __init__(self, config: SinkConfig):
        self._schema = config.target_schema or ""
        self._table = config.target_table or ""

    @property
    def renames(self) -> bool:
        return bool(self._schema or self._table)

    def target(self, schema: str, table: str) -> tuple[str, str]:
        """The routed ``(schema, table)``; a database-level name (no table) routes its schema only, and a name
        without a schema is left as it is, as TiCDC's ``Route`` does."""
        if not self.renames or not schema:
            return schema, table
        target_schema = _substitute(self._schema, schema, table, schema)
        return target_schema, (_substitute(self._table, schema, table, table) if table else table)

    def target_names(self, databases: pa.Array, tables: pa.Array) -> tuple[pa.Array, pa.Array]:
        """Per row, the routed database and table names (each distinct pair routed once)."""
        if not self.renames:
            return databases, tables
        pairs = join(databases, "\x00", tables)
        distinct = pc.unique(pairs)
        routed = [self.target(*pair.split("\x00")) for pair in distinct.to_pylist()]
        where = pc.index_in(pairs, value_set=distinct)
        return (pa.array([s for s, _ in routed], pa.string()).take(where),
                pa.array([t for _, t in routed], pa.string()).take(where))

    def ddl(self, ddl: DDLChange) -> DDLChange:
        """The DDL with its table's routed names (its statement as given)."""
        if not self.renames:
            return ddl
        database, table = self.target(ddl.database, ddl.table)
        return dataclasses.replace(ddl, database=database, table=table)
