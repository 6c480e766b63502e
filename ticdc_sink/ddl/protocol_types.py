"""A DDL's type as a protocol names it: Canal's names (which Simple shares), TiDB's action codes (Open
Protocol's and Avro's), and the one check of a ``_ddl_type`` override that every protocol applies."""

from __future__ import annotations

from typing import Callable, TypeVar

from ..errors import ContractError
from .statements import ACTION_CODES, DDLChange

T = TypeVar("T")

# Canal's DDL event type per action (TiCDC pkg/sink/codec/canal/canal_entry.go convertDdlEventType); the
# Simple protocol uses the same names and adds ``exchange table partition`` -> ALTER.
_CANAL_TYPES = {
    "create table": "CREATE",
    "rename table": "RENAME",
    "rename tables": "RENAME",
    "add index": "CINDEX",
    "add foreign key": "CINDEX",
    "add primary key": "CINDEX",
    "drop index": "DINDEX",
    "drop foreign key": "DINDEX",
    "drop primary key": "DINDEX",
    "drop table": "ERASE",
    "truncate table": "TRUNCATE",
    **dict.fromkeys(
        ["add column", "drop column", "modify column", "rebase auto id", "set default value",
         "modify table comment", "rename index", "add table partition", "drop table partition",
         "modify table charset and collate", "truncate table partition", "alter index visibility",
         "multi-schema change", "reorganize partition", "alter table partitioning", "remove partitioning"],
        "ALTER",
    ),
}
CANAL_DDL_TYPES = ("CREATE", "ALTER", "ERASE", "RENAME", "TRUNCATE", "CINDEX", "DINDEX", "QUERY")


def canal_ddl_type(action: str) -> str:
    return _CANAL_TYPES.get(action, "QUERY")


def named_types(names: tuple[str, ...]) -> Callable[[str], str | None]:
    """The lookup of ``ddl_type`` for a protocol whose DDL types are these names."""
    by_key = {type_key(name): name for name in names}
    return by_key.get


def type_key(text: str) -> str:
    """An override as it is looked up: surrounding space and case do not count."""
    return text.strip().lower()


def ddl_type(ddl: DDLChange, of_action: Callable[[str], T | None], lookup: Callable[[str], T | None],
             option: str, rule: str) -> T | None:
    """The protocol's type of ``ddl``: its ``_ddl_type`` override (``option``) as ``lookup`` reads it, else
    ``of_action(ddl.action)``; an override ``lookup`` does not know fails the row with ``rule``."""
    if not ddl.type_override:
        return of_action(ddl.action)
    found = lookup(type_key(ddl.type_override))
    if found is None:
        raise ContractError(option, ddl.type_override, f"DDL {ddl.query!r}", rule)
    return found


CANAL_TYPE_NAMES = named_types(CANAL_DDL_TYPES)  # the override lookup of Canal-JSON and Simple


_UNKNOWN_ACTION = ("the statement's TiDB action is not recognised; give it in the DDL type column as TiDB's "
                   "action code (e.g. 3) or name (e.g. 'create table')")
_ACTION_BY_NAME = {name.replace(" ", ""): code for name, code in ACTION_CODES.items()}


def _action_code(key: str) -> int | None:
    """An override as TiDB's action code (``3``) or name (``create table``; spaces do not count: ``Shard RowID``)."""
    return int(key) if key.isdigit() else _ACTION_BY_NAME.get(key.replace(" ", ""))


def tidb_action_code(ddl: DDLChange, option: str) -> int:
    """TiDB's action code of the DDL: the ``_ddl_type`` override (``option``; a code or an action name), else
    classified; a statement whose action is not recognised fails the row (the protocols that carry codes have no
    catch-all type)."""
    code = ddl_type(ddl, ACTION_CODES.get, _action_code, option, _UNKNOWN_ACTION)
    if code is None:
        raise ContractError(option, ddl.type_override, f"DDL {ddl.query!r}", _UNKNOWN_ACTION)
    return code
