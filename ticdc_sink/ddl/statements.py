"""DDL statements: what TiDB would call them, and what each protocol calls that.

TiCDC types a DDL by TiDB's ``ActionType``, which it gets from the schema
change itself.  The sink only has the statement text, so it recognises the
action from the statement's leading words and ALTER TABLE clauses, then maps
the action to each protocol's DDL type the way TiCDC does (e.g. Canal's
``convertDdlEventType``).  An explicit ``_ddl_type`` column overrides this.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .sql_split import outside_quotes, split_top_level

# TiDB ActionType codes (parser/model) for the actions recognised here.
ACTION_CODES = {
    "create schema": 1,
    "drop schema": 2,
    "create table": 3,
    "drop table": 4,
    "add column": 5,
    "drop column": 6,
    "add index": 7,
    "drop index": 8,
    "add foreign key": 9,
    "drop foreign key": 10,
    "truncate table": 11,
    "modify column": 12,
    "rebase auto id": 13,
    "rename table": 14,
    "set default value": 15,
    "shard row id": 16,
    "modify table comment": 17,
    "rename index": 18,
    "add table partition": 19,
    "drop table partition": 20,
    "create view": 21,
    "modify table charset and collate": 22,
    "truncate table partition": 23,
    "drop view": 24,
    "recover table": 25,
    "modify schema charset and collate": 26,
    "lock table": 27,
    "unlock table": 28,
    "repair table": 29,
    "set tiflash replica": 30,
    "update tiflash replica status": 31,
    "modify table auto id cache": 39,
    "rebase auto random base": 40,
    "add primary key": 32,
    "drop primary key": 33,
    "create sequence": 34,
    "alter sequence": 35,
    "drop sequence": 36,
    "alter index visibility": 41,
    "exchange table partition": 42,
    "rename tables": 47,
    "multi-schema change": 61,
    "reorganize partition": 64,
    "alter table partitioning": 71,
    "remove partitioning": 72,
}

# Actions on a database, not a table: their events carry an empty table name.
SCHEMA_LEVEL_ACTIONS = frozenset({"create schema", "drop schema", "modify schema charset and collate"})

_W = r"\s+"
# Statement-level patterns, tried in order; the first match names the action.
_STATEMENTS = [
    (r"create" + _W + r"(database|schema)\b", "create schema"),
    (r"drop" + _W + r"(database|schema)\b", "drop schema"),
    (r"alter" + _W + r"(database|schema)\b", "modify schema charset and collate"),
    (r"create" + _W + r"(or" + _W + r"replace" + _W + r")?(algorithm\s*=\s*\w+\s+)?(definer\s*=\s*\S+\s+)?"
     r"(sql" + _W + r"security" + _W + r"\w+\s+)?view\b", "create view"),
    (r"drop" + _W + r"view\b", "drop view"),
    (r"create" + _W + r"(global" + _W + r"|local" + _W + r")?(temporary" + _W + r")?table\b", "create table"),
    (r"drop" + _W + r"(temporary" + _W + r")?table\b", "drop table"),
    (r"truncate\b", "truncate table"),
    (r"create" + _W + r"(unique" + _W + r"|fulltext" + _W + r"|spatial" + _W + r")?index\b", "add index"),
    (r"drop" + _W + r"index\b", "drop index"),
    (r"create" + _W + r"sequence\b", "create sequence"),
    (r"alter" + _W + r"sequence\b", "alter sequence"),
    (r"drop" + _W + r"sequence\b", "drop sequence"),
    (r"(recover|flashback)" + _W + r"table\b", "recover table"),
    (r"lock" + _W + r"tables?\b", "lock table"),
    (r"unlock" + _W + r"tables?\b", "unlock table"),
    (r"admin" + _W + r"repair" + _W + r"table\b", "repair table"),
]
# ALTER TABLE clauses, tried in order.
_ALTER_CLAUSES = [
    (r"add" + _W + r"(constraint" + _W + r"(\S+" + _W + r")?)?primary" + _W + r"key\b", "add primary key"),
    (r"add" + _W + r"(constraint" + _W + r"(\S+" + _W + r")?)?foreign" + _W + r"key\b", "add foreign key"),
    (r"add" + _W + r"(constraint" + _W + r"(\S+" + _W + r")?)?(unique|fulltext|spatial|index|key)\b", "add index"),
    (r"add" + _W + r"partition\b", "add table partition"),
    (r"add\b", "add column"),
    (r"drop" + _W + r"primary" + _W + r"key\b", "drop primary key"),
    (r"drop" + _W + r"foreign" + _W + r"key\b", "drop foreign key"),
    (r"drop" + _W + r"(index|key)\b", "drop index"),
    (r"drop" + _W + r"partition\b", "drop table partition"),
    (r"drop\b", "drop column"),
    (r"truncate" + _W + r"partition\b", "truncate table partition"),
    (r"exchange" + _W + r"partition\b", "exchange table partition"),
    (r"reorganize" + _W + r"partition\b", "reorganize partition"),
    (r"remove" + _W + r"partitioning\b", "remove partitioning"),
    (r"partition" + _W + r"by\b", "alter table partitioning"),
    (r"alter" + _W + r"(column" + _W + r")?\S+" + _W + r"(set|drop)" + _W + r"default\b", "set default value"),
    (r"alter" + _W + r"index\b", "alter index visibility"),
    (r"(modify|change)\b", "modify column"),
    (r"rename" + _W + r"column\b", "modify column"),
    (r"rename" + _W + r"(index|key)\b", "rename index"),
    (r"rename\b", "rename table"),
    (r"comment\b", "modify table comment"),
    (r"auto_increment\b", "rebase auto id"),
    (r"auto_id_cache\b", "modify table auto id cache"),
    (r"auto_random_base\b", "rebase auto random base"),
    (r"shard_row_id_bits\b", "shard row id"),
    (r"set" + _W + r"tiflash" + _W + r"replica\b", "set tiflash replica"),
    (r"((default" + _W + r")?(character" + _W + r"set|charset|collate)|convert" + _W + r"to)\b",
     "modify table charset and collate"),
]
# A name, maybe quoted, and a name maybe qualified by its database.
_NAME = r"(`(?:[^`]|``)+`|[^\s`.,;()]+)"
_QUALIFIED = _NAME + r"(?:\s*\.\s*" + _NAME + r")?"
_ALTER_TABLE = re.compile(r"alter" + _W + r"(ignore" + _W + r")?table" + _W + _QUALIFIED + r"\s*", re.I | re.S)
_RENAME_TABLE = re.compile(r"rename" + _W + r"tables?\b(.*)", re.I | re.S)


@dataclass(frozen=True)
class DDLChange:
    """A DDL event: the statement, where it applies and when it committed."""

    database: str
    table: str
    query: str
    commit_ts: int
    action: str  # a key of ACTION_CODES, or "unknown"
    type_override: str | None = None


_COMMENT = re.compile(r"""('(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.)*"|`[^`]*`)|/\*(?!!|\+).*?\*/|(?:--\s|#)[^\n]*""",
                      re.S)
# ALTER TABLE options that change nothing TiCDC reports.
_NO_ACTION_CLAUSE = re.compile(r"(algorithm|lock)\s*=|force\b|(with|without)\s+validation\b", re.I)


def _strip_comments(sql: str) -> str:
    """Drop /* */, -- and # comments outside quoted text (TiDB's /*! */ and /*+ */ stay)."""
    return _COMMENT.sub(lambda m: m.group(1) or " ", sql).strip()


def _top_level_clauses(text: str) -> list[str]:
    return [c.strip() for c in split_top_level(text) if c.strip()]


def classify(statement: str) -> str:
    """The TiDB action a DDL statement performs, or ``"unknown"``."""
    sql = _strip_comments(statement)
    rename = _RENAME_TABLE.match(sql)
    if rename:
        return "rename tables" if len(_top_level_clauses(rename.group(1))) > 1 else "rename table"
    alter = _ALTER_TABLE.match(sql)
    if alter:
        clauses = [c for c in _top_level_clauses(sql[alter.end():].rstrip(";")) if not _NO_ACTION_CLAUSE.match(c)]
        # A clause that names no action continues the previous one (DROP PARTITION p1, p2).
        actions = [a for c in clauses for a in _alter_clause_actions(c)]
        if len(actions) > 1:
            return "multi-schema change"  # TiDB >= 6.2 runs every multi-clause ALTER as one
        return actions[0] if actions else "unknown"
    for pattern, action in _STATEMENTS:
        if re.match(pattern, sql, re.I):
            return action
    return "unknown"


def _alter_clause_actions(clause: str) -> list[str]:
    """The actions of one ALTER TABLE clause: ADD COLUMN (a INT, b INT) adds two columns."""
    action = _classify_alter_clause(clause)
    if action is None:
        return []
    columns = re.match(r"add\s+(column\s+)?\((.*)\)\s*$", clause, re.I | re.S)
    if action == "add column" and columns:
        return [action] * len(_top_level_clauses(columns.group(2)))
    return [action]


def _classify_alter_clause(clause: str) -> str | None:
    for pattern, action in _ALTER_CLAUSES:
        if re.match(pattern, clause, re.I):
            return action
    return None


_RENAME_PAIR = re.compile(r"\s*" + _QUALIFIED + _W + r"to" + _W + _QUALIFIED + r"\s*$", re.I | re.S)
_ALTER_RENAME = re.compile(r"rename" + _W + r"((to|as)" + _W + r")?" + _QUALIFIED + r"\s*$", re.I | re.S)
_EXCHANGE_WITH = re.compile(r"with" + _W + r"table" + _W + _QUALIFIED, re.I | re.S)
_COLUMN_DEFINITION = re.compile(_NAME + r"\s+(\w+)\s*(?:\(\s*(\d+)\s*\))?", re.S)
_NOT_A_COLUMN = re.compile(r"(constraint|primary|unique|key|index|fulltext|spatial|foreign|check)\b", re.I)
_CREATE_TABLE_COLUMNS = re.compile(r"create" + _W + r"((global|local)" + _W + r")?(temporary" + _W + r")?table"
                                   + _W + r"(if" + _W + r"not" + _W + r"exists" + _W + r")?" + _QUALIFIED + r"\s*\(",
                                   re.I | re.S)
_DEFINING_CLAUSE = re.compile(r"(add|modify|change)(" + _W + r"column)?(" + _W + r"if" + _W + r"(not" + _W
                              + r")?exists)?\s+(?P<body>.*)$", re.I | re.S)


def _inside_parentheses(sql: str, start: int) -> str:
    """The text from ``start`` up to the parenthesis that closes the one just before it."""
    for i, _, depth in outside_quotes(sql[start:]):
        if depth == -1:
            return sql[start:start + i]
    return sql[start:]


def _unquote(name: str) -> str:
    return name[1:-1].replace("``", "`") if name.startswith("`") else name


def _table_name(first: str, second: str | None, database: str) -> tuple[str, str]:
    """(database, table) of a possibly qualified name; unqualified names are in ``database``."""
    return (_unquote(first), _unquote(second)) if second else (database, _unquote(first))


def _same(a: tuple[str, str], b: tuple[str, str]) -> bool:
    return a[0].lower() == b[0].lower() and a[1].lower() == b[1].lower()


def renamed_from(ddl: DDLChange) -> tuple[str, str] | None:
    """The old (database, table) of the table a RENAME TABLE or ALTER TABLE .. RENAME made ``ddl``'s table."""
    sql = _strip_comments(ddl.query).rstrip(";")
    target = (ddl.database, ddl.table)
    rename = _RENAME_TABLE.match(sql)
    if rename:
        for clause in _top_level_clauses(rename.group(1)):
            pair = _RENAME_PAIR.match(clause)
            if pair and _same(_table_name(pair[3], pair[4], ddl.database), target):
                return _table_name(pair[1], pair[2], ddl.database)
        return None
    alter = _ALTER_TABLE.match(sql)
    if alter:
        for clause in _top_level_clauses(sql[alter.end():]):
            if _ALTER_RENAME.match(clause):
                return _table_name(alter[2], alter[3], ddl.database)
    return None


def exchanged_tables(ddl: DDLChange) -> tuple[tuple[str, str], tuple[str, str]] | None:
    """(the partitioned table, the plain one) of ALTER TABLE .. EXCHANGE PARTITION .. WITH TABLE."""
    sql = _strip_comments(ddl.query)
    alter, plain = _ALTER_TABLE.match(sql), _EXCHANGE_WITH.search(sql)
    if not (alter and plain):
        return None
    return _table_name(alter[2], alter[3], ddl.database), _table_name(plain[1], plain[2], ddl.database)


def defined_columns(statement: str) -> dict[str, tuple[str, int | None]]:
    """The columns a CREATE TABLE or ALTER TABLE ADD/MODIFY/CHANGE defines: lower-case name ->
    (lower-case type word, the number in its parentheses or None when the statement gives none)."""
    columns = {}
    for name, definition in column_definitions(statement).items():
        match = _COLUMN_DEFINITION.match(definition)
        number = match[3]
        columns[name] = (match[2].lower(), int(number) if number is not None else None)
    return columns


def column_definitions(statement: str) -> dict[str, str]:
    """The column definitions of a CREATE TABLE or ALTER TABLE ADD/MODIFY/CHANGE: lower-case name -> its text."""
    sql = _strip_comments(statement).rstrip(";")
    definitions: list[str] = []
    alter = _ALTER_TABLE.match(sql)
    if alter:
        for clause in _top_level_clauses(sql[alter.end():]):
            defining = _DEFINING_CLAUSE.match(clause)
            if not defining:
                continue
            body = defining["body"].strip()
            if defining[1].lower() == "change":
                body = re.sub(r"^" + _NAME + r"\s+", "", body, flags=re.S)  # the old name
            if body.startswith("(") and body.endswith(")"):
                definitions += _top_level_clauses(body[1:-1])
            else:
                definitions.append(body)
    else:
        create = _CREATE_TABLE_COLUMNS.match(sql)
        if create:
            definitions = _top_level_clauses(_inside_parentheses(sql, create.end()))
    columns = {}
    for definition in definitions:
        match = _COLUMN_DEFINITION.match(definition)
        if match and not _NOT_A_COLUMN.match(definition):
            columns[_unquote(match[1]).lower()] = definition
    return columns
