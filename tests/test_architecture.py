"""ARCHITECTURE.md names only what exists, and every module that exists.

The document is read as text and the code as syntax trees (``ast``: nothing is imported), so the check needs no
Spark or broker and takes about a second.  What it holds the document to:

- the layout (the list under ``## Layout``: one item per package or module, its path in backticks, nested by
  indentation) lists every package and module of ``ticdc_sink/``, each module with what it holds; an item that
  does not exist fails, and so does a module that exists and is not listed (an ``__init__.py`` only where it holds
  more than its docstring).  A name an item gives bare is the item's module's (or, for a package, one of its
  modules');
- a path written anywhere else (``sink/task.py``, ``codec/shared/``) exists: from the repository's root, or as
  the end of a path in ``ticdc_sink/``; ``<protocol>`` stands for any folder;
- a name in backticks (``ChangeBatchBuilder.build``, ``iter_range_batches``, ``codec.open_encoder``,
  ``shared/assembly.row_messages``, ``sink/task.py:WritePlan.write``) is defined in the module written with it,
  or, where none is, anywhere in ``ticdc_sink/``: a function, class, method, a variable of a module or class, an
  attribute a method sets on ``self``, or a name of the module's ``__all__``.  A name of a module or package
  (``codec``, ``order_check``) passes;
- in a table with the columns Module and Function, each Function is defined in its row's module (in every one,
  where ``<protocol>`` stands for the protocol packages);
- "N stops in M modules" counts the rows and the distinct modules of the Module/Function table of its section.

A word in backticks that is not Python must not look like a Python name: option names carry a hyphen
(``max-message-bytes``); write column names, formats and other words in quotes or plain text.
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "ticdc_sink"
DOCUMENT = ROOT / "ARCHITECTURE.md"

_SPAN = re.compile(r"`([^`\n]+)`")
_PLACEHOLDER = re.compile(r"<[^>/]+>")
# A module path in the text, in backticks or not: ``ticdc_sink/sink/task.py``, ``frames.py``, ``codec/<protocol>/x.py``.
_MODULE_PATH = re.compile(r"(?<![\w./<>-])((?:[\w<>.-]+/)*[\w<>-]+\.py)(?![\w.])")
_FILE_SPAN = re.compile(r"^[\w<>./-]+(?:/|\.(?:py|md|json|toml))$")
# A Python name: dotted, maybe after a module path with slashes (``shared/assembly.row_messages``) or a colon
# (``sink/task.py:WritePlan.write``), maybe with its arguments (``Decoder.decode(key, value)``).
_CODE_NAME = re.compile(r"^(?:(?P<path>[\w/<>]+\.py):)?(?P<name>[A-Za-z_]\w*(?:[./][A-Za-z_]\w*)*)(?:\(.*\))?$")
_ITEM = re.compile(r"^(?P<indent> *)[-*] `(?P<name>[\w.<>-]+(?:/|\.\w+))`(?P<rest>.*)$")
_STOPS = re.compile(r"\b(\w+) stops in (\w+) modules\b")
_NUMBERS = {word: n for n, word in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}


# -- the code


@functools.cache
def package_paths() -> tuple[str, ...]:
    """Every file and folder of the package, relative to the repository's root (folders end with ``/``)."""
    paths = []
    for path in sorted(PACKAGE.rglob("*")):
        if "__pycache__" in path.parts or path.suffix == ".pyc":
            continue
        relative = path.relative_to(ROOT).as_posix()
        paths.append(relative + "/" if path.is_dir() else relative)
    return tuple(paths)


def every_module() -> list[str]:
    return [p for p in package_paths() if p.endswith(".py")]


def _holds_more_than_a_docstring(path: Path) -> bool:
    body = ast.parse(path.read_text(encoding="utf-8")).body
    docstring = bool(body) and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    return len(body) > docstring


def modules_to_list() -> set[str]:
    """What the layout must list: every package, every module, and each ``__init__.py`` that holds code."""
    wanted = {"ticdc_sink/"}
    for relative in package_paths():
        path = ROOT / relative
        if relative.endswith("/"):
            if (path / "__init__.py").exists():
                wanted.add(relative)
        elif path.suffix == ".py" and (path.name != "__init__.py" or _holds_more_than_a_docstring(path)):
            wanted.add(relative)
    return wanted


def _names_assigned(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in _names_assigned(element)]
    return []


def _self_attributes(function: ast.AST) -> set[str]:
    found = set()
    for node in ast.walk(function):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
        for target in targets:
            for part in ast.walk(target):
                if isinstance(part, ast.Attribute) and isinstance(part.value, ast.Name) and part.value.id == "self":
                    found.add(part.attr)
    return found


@functools.cache
def definitions(relative: str) -> frozenset[str]:
    """The qualified names a module defines (``WritePlan``, ``WritePlan.write``, ``PROTOCOLS``), read from its
    syntax tree through ``if``/``try``/``with`` blocks; imports count only where ``__all__`` names them."""
    names: set[str] = set()

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names.add(prefix + node.name)
                if prefix:
                    names.update(prefix + attribute for attribute in _self_attributes(node))
            elif isinstance(node, ast.ClassDef):
                names.add(prefix + node.name)
                visit(node.body, f"{prefix}{node.name}.")
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                assigned = [name for target in targets for name in _names_assigned(target)]
                names.update(prefix + name for name in assigned)
                if assigned == ["__all__"] and not prefix and isinstance(node.value, (ast.List, ast.Tuple)):
                    names.update(e.value for e in node.value.elts if isinstance(e, ast.Constant))
            else:
                for field in ("body", "orelse", "finalbody"):
                    visit(getattr(node, field, None) or [], prefix)
                for handler in getattr(node, "handlers", None) or []:
                    visit(handler.body, prefix)

    visit(ast.parse((ROOT / relative).read_text(encoding="utf-8")).body, "")
    return frozenset(names)


def is_defined(name: str, modules: list[str]) -> bool:
    """Whether one of ``modules`` defines ``name``: as written, or as the end of a qualified name (a method
    written bare, ``encode_rows``)."""
    return any(q == name or q.endswith("." + name) for module in modules for q in definitions(module))


def find_paths(written: str) -> list[str]:
    """What a path as written may be, relative to the root: from the root, else the end of a package path."""
    pattern = _PLACEHOLDER.sub("*", written.strip())
    folder = pattern.endswith("/")
    found = [p.relative_to(ROOT).as_posix() + ("/" if folder else "") for p in ROOT.glob(pattern.rstrip("/"))
             if "__pycache__" not in p.parts and p.is_dir() == folder]
    if found:
        return sorted(found)
    return [p for p in package_paths() if p.endswith("/") == folder and fnmatch.fnmatchcase(p, "*/" + pattern)]


def find_modules(written: str) -> list[str]:
    """The modules a slashed module name may be (``codec``, ``order_check``, ``shared/assembly``)."""
    return [p for p in find_paths(written + ".py") + find_paths(written + "/__init__.py") if p.endswith(".py")]


# -- the document


def _lines(text: str):
    """``(line number, line, whether it is in a code block)`` of every line."""
    inside = False
    for number, line in enumerate(text.splitlines(), start=1):
        fence = line.lstrip().startswith("```")
        yield number, line, inside or fence
        if fence:
            inside = not inside


def layout_items(text: str) -> list[dict]:
    """The items of the list under ``## Layout``: each one's path (relative to the root; folders end with ``/``),
    its lines and its text (a wrapped line continues the item above it)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == "## Layout"), None)
    if start is None:
        return []
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    items: list[dict] = []
    stack: list[tuple[int, str]] = []
    for index in range(start + 1, end):
        line = lines[index]
        match = _ITEM.match(line)
        if match:
            indent = len(match["indent"])
            while stack and stack[-1][0] >= indent:
                stack.pop()
            path = (stack[-1][1] if stack else "") + match["name"]
            if path.endswith("/"):
                stack.append((indent, path))
            items.append({"path": path, "line": index + 1, "lines": [index + 1], "text": match["rest"]})
        elif items and line.startswith(" ") and line.strip() and not line.lstrip().startswith(("-", "*")):
            items[-1]["lines"].append(index + 1)
            items[-1]["text"] += " " + line.strip()
        elif line.strip():
            stack = []  # prose between lists: a new list starts from the root
    return items


def layout_problems(text: str) -> list[str]:
    problems = []
    for item in layout_items(text):
        where, path = f"ARCHITECTURE.md:{item['line']}", item["path"]
        if not (ROOT / path).exists():
            problems.append(f"{where}: the layout lists {path}, which does not exist")
            continue
        if path.endswith(".py") and not re.search(r"\w", item["text"]):
            problems.append(f"{where}: the layout lists {path} without saying what it holds")
        if path.endswith("/"):
            own = [m for m in every_module() if m.startswith(path)]
        else:
            own = [path] if path.endswith(".py") else []
        for span in _SPAN.findall(item["text"]):
            problem = _name_problem(item["line"], span, own or None)
            if problem:
                problems.append(problem)
    return problems


def missing_modules(text: str) -> list[str]:
    return sorted(modules_to_list() - {item["path"] for item in layout_items(text)})


def path_problems(text: str) -> list[str]:
    """Module paths and backticked paths (the layout's items aside: ``layout_problems``) that exist nowhere."""
    item_lines = {item["line"] for item in layout_items(text)}
    problems = []
    for number, line, in_block in _lines(text):
        if number in item_lines:
            line = _ITEM.sub(r"\g<rest>", line)
        written = set(_MODULE_PATH.findall(line))
        if not in_block:
            written |= {span for span in _SPAN.findall(line) if _FILE_SPAN.match(span)}
        for path in sorted(written):
            if not find_paths(path):
                problems.append(f"ARCHITECTURE.md:{number}: {path} names no file or folder")
    return problems


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def module_tables(text: str) -> list[dict]:
    """The tables with Module and Function columns: their section, and per row its line, module and functions."""
    lines = text.splitlines()
    tables, section, i = [], "", 0
    while i < len(lines):
        if lines[i].startswith("## "):
            section = lines[i][3:].strip()
        if (lines[i].lstrip().startswith("|") and i + 1 < len(lines) and lines[i + 1].lstrip().startswith("|")
                and set(lines[i + 1].strip()) <= set("|-: ")):
            header = [cell.lower() for cell in _cells(lines[i])]
            j = i + 2
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                j += 1
            if "module" in header and "function" in header:
                m, f = header.index("module"), header.index("function")
                rows = [(n + 1, _cells(lines[n])) for n in range(i + 2, j)]
                tables.append({"section": section, "columns": (m, f), "rows": [
                    {"line": n, "module": cells[m] if m < len(cells) else "",
                     "functions": cells[f] if f < len(cells) else ""} for n, cells in rows]})
            i = j
            continue
        i += 1
    return tables


def _name_problem(number: int, span: str, own: list[str] | None = None) -> str | None:
    """The problem of one backticked name, or None (defined, a module, or no Python name).  A name written without
    a module is looked for in ``own``, or where that is None anywhere in the package."""
    match = _CODE_NAME.match(span)
    if match is None or _FILE_SPAN.match(span):
        return None
    where, name = f"ARCHITECTURE.md:{number}: `{span}`", match["name"]
    if match["path"]:
        modules = [p for p in find_paths(match["path"]) if p.endswith(".py")]
        if not modules:
            return f"{where}: {match['path']} names no module"
        return None if is_defined(name, modules) else f"{where}: {name} is not defined in {', '.join(modules)}"
    folders, _, dotted = name.rpartition("/")
    parts = dotted.split(".")
    for k in range(len(parts), 0, -1):
        modules = find_modules("/".join(filter(None, [folders, *parts[:k]])))
        if modules:
            rest = ".".join(parts[k:])
            return None if not rest or is_defined(rest, modules) else \
                f"{where}: {rest} is not defined in {', '.join(modules)}"
    if folders:
        return f"{where}: {folders}/{parts[0]} names no module"
    if own is not None:
        return None if is_defined(dotted, own) else f"{where} is not defined in {', '.join(own)}"
    return None if is_defined(dotted, every_module()) else f"{where} is defined nowhere in ticdc_sink/"


def name_problems(text: str) -> list[str]:
    """Backticked names outside the layout not defined where the text puts them: a table's Function in its row's
    module, any other in the module written with it, else anywhere in the package."""
    problems = []
    attributed: dict[int, tuple[int, int]] = {}  # a table row's line: its Module and Function columns
    for table in module_tables(text):
        for row in table["rows"]:
            attributed[row["line"]] = table["columns"]
            written = _SPAN.findall(row["module"])
            modules = [p for w in written for p in find_paths(w) if p.endswith(".py")]
            if len(written) != 1 or not modules:
                problems.append(f"ARCHITECTURE.md:{row['line']}: the Module cell {row['module']!r} names no "
                                "module (one path in backticks, such as `sink/task.py`)")
                continue
            for span in _SPAN.findall(row["functions"]):
                match = _CODE_NAME.match(span)
                if match is None or match["path"]:
                    problems.append(f"ARCHITECTURE.md:{row['line']}: `{span}` in the Function cell is no name "
                                    "of the row's module")
                    continue
                lacking = [m for m in modules if not is_defined(match["name"], [m])]
                if lacking:
                    problems.append(f"ARCHITECTURE.md:{row['line']}: `{span}` is not defined in "
                                    f"{', '.join(lacking)}")
    in_layout = {number for item in layout_items(text) for number in item["lines"]}
    for number, line, in_block in _lines(text):
        if in_block or number in in_layout:
            continue
        if number in attributed:
            m, f = attributed[number]
            line = " | ".join(cell for i, cell in enumerate(_cells(line)) if i not in (m, f))
        for span in _SPAN.findall(line):
            problem = _name_problem(number, span)
            if problem:
                problems.append(problem)
    return problems


def _number(word: str) -> int | None:
    return int(word) if word.isdigit() else _NUMBERS.get(word.lower())


def count_problems(text: str) -> list[str]:
    """Each "N stops in M modules" against the rows and the distinct modules of its section's table."""
    problems = []
    tables = module_tables(text)
    section = ""
    for number, line, in_block in _lines(text):
        if line.startswith("## "):
            section = line[3:].strip()
        for stops, modules in _STOPS.findall(line):
            mine = [t for t in tables if t["section"] == section]
            if len(mine) != 1:
                problems.append(f"ARCHITECTURE.md:{number}: '{stops} stops in {modules} modules' needs one table "
                                f"with Module and Function columns in its section ({section!r}), found {len(mine)}")
                continue
            rows = mine[0]["rows"]
            distinct = len({row["module"] for row in rows})
            if (_number(stops), _number(modules)) != (len(rows), distinct):
                problems.append(f"ARCHITECTURE.md:{number}: '{stops} stops in {modules} modules', but the table "
                                f"of {section!r} has {len(rows)} stops in {distinct} modules")
    return problems


# -- ARCHITECTURE.md


def document() -> str:
    return DOCUMENT.read_text(encoding="utf-8")


def test_the_layout_lists_only_what_exists():
    assert layout_items(document()), "ARCHITECTURE.md has no '## Layout' list"
    problems = layout_problems(document())
    assert problems == [], "\n".join(problems)


def test_the_layout_lists_every_module_of_the_package():
    missing = missing_modules(document())
    assert missing == [], ("ARCHITECTURE.md's layout does not list " + ", ".join(missing)
                           + ": add each, with what it holds, under its package")


def test_every_path_the_document_names_exists():
    problems = path_problems(document())
    assert problems == [], "\n".join(problems)


def test_every_name_the_document_gives_is_defined_where_it_says():
    problems = name_problems(document())
    assert problems == [], "\n".join(problems)


def test_the_counted_stops_are_the_tables():
    problems = count_problems(document())
    assert problems == [], "\n".join(problems)


# -- the check itself, on small documents


_LAYOUT = """## Layout

- `ticdc_sink/`
  - `tso.py`: TiDB's timestamps, `now_tso`
  - `sink/`: the write
    - `task.py`: a task's path: `WritePlan.write`,
      `SelectedEncoders`
{extra}
## Next
"""


def test_the_check_catches_a_listed_module_that_does_not_exist():
    assert layout_problems(_LAYOUT.format(extra="")) == []
    text = _LAYOUT.format(extra="    - `no_such_module.py`: nothing\n    - `driver.py`")
    assert layout_problems(text) == [
        "ARCHITECTURE.md:8: the layout lists ticdc_sink/sink/no_such_module.py, which does not exist",
        "ARCHITECTURE.md:9: the layout lists ticdc_sink/sink/driver.py without saying what it holds"]


def test_the_check_holds_a_layout_item_to_its_module():
    text = _LAYOUT.format(extra="    - `driver.py`: `commit_batch`, `route`, `dispatch.route`,\n"
                                "      `bogus_function`\n  - `changes/`: `route`, `WritePlan`")
    assert layout_problems(text) == [
        "ARCHITECTURE.md:8: `route` is not defined in ticdc_sink/sink/driver.py",
        "ARCHITECTURE.md:8: `bogus_function` is not defined in ticdc_sink/sink/driver.py",
        "ARCHITECTURE.md:10: `WritePlan` is not defined in " + ", ".join(
            m for m in every_module() if m.startswith("ticdc_sink/changes/"))]


def test_the_check_catches_a_module_left_out_of_the_layout():
    missing = missing_modules(_LAYOUT.format(extra=""))
    assert "ticdc_sink/sink/driver.py" in missing and "ticdc_sink/codec/" in missing
    assert "ticdc_sink/tso.py" not in missing and "ticdc_sink/sink/task.py" not in missing
    assert "ticdc_sink/sink/__init__.py" not in missing  # a docstring only
    assert "ticdc_sink/codec/__init__.py" in missing  # the registry


def test_the_check_catches_paths_that_are_gone():
    text = _LAYOUT.format(extra="") + "\nrender.py, `changes/dispatch.py`, frames.py, `codec/<protocol>/decoder.py`" \
                                      ", `codec/shared/` and `ticdc_sink/nothing/`\n"
    assert path_problems(text) == ["ARCHITECTURE.md:11: render.py names no file or folder",
                                   "ARCHITECTURE.md:11: ticdc_sink/nothing/ names no file or folder"]


def test_the_check_catches_names_that_are_not_defined_where_the_text_says():
    text = ("`ChangeBatchBuilder.build` `iter_range_batches` `codec.open_encoder` `shared/assembly.row_messages` "
            "`Decoder.decode(key, value)` `sink/task.py:WritePlan.write` `PROTOCOLS` `max-message-bytes` "
            "`KafkaOutput.produce` `codec` `order_check` `Encoder.options` `ticdc_sink.order_changes`\n"
            "`ChangeBatchBuilder.bogus` `codec.route` `shared/nothing.row_messages` `sink/task.py:route` "
            "`bogus_function`\n")
    assert name_problems(text) == [
        "ARCHITECTURE.md:2: `ChangeBatchBuilder.bogus` is defined nowhere in ticdc_sink/",
        "ARCHITECTURE.md:2: `codec.route`: route is not defined in ticdc_sink/codec/__init__.py",
        "ARCHITECTURE.md:2: `shared/nothing.row_messages`: shared/nothing names no module",
        "ARCHITECTURE.md:2: `sink/task.py:route`: route is not defined in ticdc_sink/sink/task.py",
        "ARCHITECTURE.md:2: `bogus_function` is defined nowhere in ticdc_sink/",
    ]


_TABLE = """## The way

| Stop | Module | Function | What happens |
|---|---|---|---|
| 1 | `sink/task.py` | `WritePlan.write` | then `route` |
| 2 | `changes/dispatch.py` | `route` | |
| 3 | `codec/<protocol>/encoder.py` | `encode_rows` | |
| 4 | `sink/task.py` | {function} | |

{count}
"""


def test_the_check_holds_a_table_function_to_its_module():
    assert name_problems(_TABLE.format(function="`_widen`", count="")) == []
    assert name_problems(_TABLE.format(function="`route`", count="")) == [
        "ARCHITECTURE.md:8: `route` is not defined in ticdc_sink/sink/task.py"]
    problems = name_problems(_TABLE.format(function="`_widen`", count="").replace("`encode_rows`", "`encode_all`"))
    encoders = ", ".join(f"ticdc_sink/codec/{p}/encoder.py" for p in ("avro", "canal_json", "debezium",
                                                                       "open_protocol", "simple"))
    assert problems == [f"ARCHITECTURE.md:7: `encode_all` is not defined in {encoders}"]


def test_the_check_counts_stops_and_modules():
    assert count_problems(_TABLE.format(function="`_widen`", count="A batch makes four stops in 3 modules.")) == []
    assert count_problems(_TABLE.format(function="`_widen`", count="A batch makes 8 stops in 7 modules.")) == [
        "ARCHITECTURE.md:10: '8 stops in 7 modules', but the table of 'The way' has 4 stops in 3 modules"]
