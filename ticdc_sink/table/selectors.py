"""TiCDC's ``column-selectors``: which columns a table's messages carry.

Written as in a changefeed's ``[sink]`` section (TOML), or as JSON::

    [{matcher = ['test.t1'], columns = ['a', 'b']}, {matcher = ['test.*'], columns = ['*', '!b']}]

The first selector whose ``matcher`` (table rules) matches a row's table
applies; its ``columns`` (column rules, ``filters.py``) keep the columns the
last matching rule includes.  A table no selector matches keeps every column.
As TiCDC refuses a changefeed whose selectors drop key columns, a selection
must keep the handle key (and the ``partition=columns`` columns, on which
TiCDC dispatches before it selects).
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass

from ..errors import ConfigError
from .filters import ColumnFilter, FilterSyntaxError, TableFilter
from .schema import TableSchema

OPTION = "column-selectors"


@dataclass(frozen=True)
class ColumnSelector:
    matcher: tuple[str, ...]
    columns: tuple[str, ...]


def parse_column_selectors(text: str) -> tuple[ColumnSelector, ...]:
    """The selectors of the option's text (TOML's inline array of tables, or JSON), checked."""
    try:
        value = json.loads(text)
    except ValueError:
        try:
            value = tomllib.loads(f"selectors = {text}")["selectors"]
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(OPTION, text, f"not a TOML (or JSON) array of {{matcher = [...], columns = [...]}} "
                              f"tables: {e}") from None
    if not isinstance(value, list) or not value:
        raise ConfigError(OPTION, text, "an array of {matcher = [...], columns = [...]} tables, at least one")
    selectors = []
    for item in value:
        if not isinstance(item, dict) or set(item) != {"matcher", "columns"}:
            raise ConfigError(OPTION, text, f"each selector has exactly the keys matcher and columns, not {item!r}")
        lists = [item[k] for k in ("matcher", "columns")]
        if not all(isinstance(rules, list) and rules and all(isinstance(r, str) for r in rules) for rules in lists):
            raise ConfigError(OPTION, text, f"matcher and columns are non-empty lists of strings, in {item!r}")
        selector = ColumnSelector(tuple(item["matcher"]), tuple(item["columns"]))
        try:
            TableFilter(list(selector.matcher)), ColumnFilter(list(selector.columns))
        except FilterSyntaxError as e:
            raise ConfigError(OPTION, text, str(e)) from None
        selectors.append(selector)
    return tuple(selectors)


class ColumnSelection:
    """The columns each table's messages carry, for one table shape; checked once per table."""

    def __init__(self, selectors: tuple[ColumnSelector, ...], table: TableSchema,
                 partition_columns: tuple[str, ...] = ()):
        self._selectors = [(TableFilter(list(s.matcher)), ColumnFilter(list(s.columns)), s) for s in selectors]
        self._table, self._partition_columns = table, partition_columns
        self._shown: dict[tuple[str, str], TableSchema] = {}

    def table_for(self, schema: str, table: str) -> TableSchema:
        """The table as the messages of ``schema.table`` show it: its selected columns (``TableSchema.select``),
        or the whole table where no selector matches."""
        key = (schema, table)
        if key not in self._shown:
            self._shown[key] = self._select(schema, table)
        return self._shown[key]

    def _select(self, schema: str, table: str) -> TableSchema:
        chosen = next((s for s in self._selectors if s[0].matches(schema, table)), None)
        if chosen is None:
            return self._table
        _, columns, selector = chosen
        kept = [c.name for c in self._table.columns if columns.keeps(c.name)]
        where = f"for {schema}.{table} the selector {{matcher = {list(selector.matcher)}, columns = " \
                f"{list(selector.columns)}}}"
        if self._table.keyless:
            raise ConfigError(OPTION, None, f"{where} applies to a table without a handle key: TiCDC refuses "
                              "selectors on such tables; name the key with primary-key or unique-keys")
        dropped = [c.name for c in self._table.handle_columns if c.name not in kept]
        if dropped:
            raise ConfigError(OPTION, None, f"{where} leaves out the handle-key column(s) {', '.join(dropped)}, "
                              "which every message needs: keep them")
        lowered = {name.lower() for name in kept}
        dispatched = [name for name in self._partition_columns if name.lower() not in lowered]
        if dispatched:
            raise ConfigError(OPTION, None, f"{where} leaves out {', '.join(dispatched)}, which partition-columns "
                              "dispatches by: keep them")
        return self._table if len(kept) == len(self._table.columns) else self._table.select(kept)
