"""docs/recipes.md's JDBC backfill, run as written on its MySQL path, against a MySQL-compatible server.

    python integration/jdbc_backfill.py JDBC_PORT BOOTSTRAP_SERVERS TOPIC

The recipe's block builds its own Spark session, whose ``spark.jars.packages`` (MySQL's Connector/J, from
Maven Central, cached by Ivy) must be given when the JVM starts, so the block runs in a process of its own
(``test_jdbc_backfill.py`` starts it).  Only the server's address and ``on_tidb = False`` are changed; the block
gets ``options`` (the README's) and ``password``, as the recipe's readers bring them.  It prints one JSON line:
the block's ``column_types``, ``tso`` and ``create_table``, and the nullability of its ``rows``.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

RECIPES = Path(__file__).resolve().parents[1] / "docs" / "recipes.md"
HEADING = "## A TiDB or MySQL table, before a changefeed starts (backfill)"
DOCUMENTED_URL = '"jdbc:mysql://tidb:4000/shop?'


def recipe_block() -> str:
    """The first python block under the backfill heading of docs/recipes.md."""
    section = RECIPES.read_text().split(HEADING, 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def on_mysql(block: str, port: int) -> str:
    """The block with the server at 127.0.0.1:port and its MySQL path chosen, and nothing else changed."""
    for old in (DOCUMENTED_URL, "on_tidb = True"):
        assert block.count(old) == 1, f"docs/recipes.md's backfill block no longer has {old!r} once"
    return block.replace(DOCUMENTED_URL, f'"jdbc:mysql://127.0.0.1:{port}/shop?') \
        .replace("on_tidb = True", "on_tidb = False")


def main(port: int, bootstrap_servers: str, topic: str) -> None:
    options = {"kafka.bootstrap.servers": bootstrap_servers, "protocol": "canal-json", "topic": topic,
               "database": "shop", "table": "orders", "primary-key": "id", "enable-tidb-extension": "true"}
    names = {"options": options, "password": "unused: the server skips its grant tables"}
    exec(compile(on_mysql(recipe_block(), port), str(RECIPES), "exec"), names)
    print(json.dumps({"column_types": names["column_types"], "tso": names["tso"],
                      "create_table": names["create_table"],
                      "nullable": {f.name: f.nullable for f in names["rows"].schema}}))


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2], sys.argv[3])
