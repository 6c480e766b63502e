"""Canal-JSON messages back into events, each row typed by the message's ``mysqlType`` (layout: ``encoder.py``).

A row's or DDL's commit ts is the TiDB extension's ``commitTs``; without the
extension, where TiCDC's decoder gives 0, it is the TSO of ``es`` (the
commit's physical milliseconds, logical part 0), so that such a topic can
still be ordered.  ``_tidb.rowkey`` (TiCDC's ``output-row-key``) is the
event's ``row_key``, its bytes; the reader's ``columns.py`` passes over it.
"""

from __future__ import annotations

import base64
import json

from ...table.type_grammar import carried_type
from ...tso import tso_from_unix_ms
from ..base import DDLEvent, Decoder, MessageColumns, RowEvent, WatermarkEvent
from ..shared.decoding import text_value, typed_row
from .columns import decode_columns


class CanalJSONDecoder(Decoder):
    def __init__(self, config=None):
        super().__init__(config)
        self._column_types: dict[tuple, dict] = {}  # a table's mysqlType map -> its parsed types

    @property
    def carries_watermarks(self) -> bool:
        return bool(self.options and self.options.enable_tidb_extension)

    def decode(self, key: bytes | None, value: bytes) -> list:
        doc = json.loads(self.decompressed(value))
        extension = doc.get("_tidb") or {}
        if doc.get("isDdl"):
            return [DDLEvent(doc["database"], doc["table"], doc["sql"], doc["type"], commit_ts(doc))]
        if doc.get("type") == "TIDB_WATERMARK":
            return [WatermarkEvent(extension["watermarkTs"])]
        if extension.get("claimCheckLocation"):  # the row's whole message is in the claim-check storage
            return self.decode(*self.claimed(extension["claimCheckLocation"]))
        types = doc.get("mysqlType") or {}

        def typed(row: dict | None) -> dict | None:
            return typed_row(row, lambda name, text: text_value(text, types.get(name, "")))

        data = doc["data"][0] if doc.get("data") else None
        old = doc["old"][0] if doc.get("old") else None
        return [RowEvent(
            type=doc["type"],
            database=doc["database"],
            table=doc["table"],
            commit_ts=commit_ts(doc),
            columns=typed(data),
            old=typed(old),
            primary_keys=list(doc.get("pkNames") or []),
            column_types=self._types_of(types),
            handle_key_only=bool(extension.get("onlyHandleKey")),
            row_key=base64.b64decode(extension["rowkey"]) if extension.get("rowkey") else None,
        )]

    def decode_columns(self, keys: list, values: list[bytes], types: dict) -> MessageColumns | None:
        return decode_columns(self.decompressed_all(values), types)

    def _types_of(self, mysql_types: dict[str, str]) -> dict:
        key = tuple(mysql_types.items())
        parsed = self._column_types.get(key)
        if parsed is None:
            parsed = self._column_types[key] = {name: carried_type(text) for name, text in mysql_types.items()}
        return parsed


def commit_ts(doc: dict) -> int | None:
    """A row's or DDL's commit ts: ``_tidb.commitTs``, else ``es`` as a TSO (the module's docstring)."""
    extension = doc.get("_tidb") or {}
    if "commitTs" in extension:
        return extension["commitTs"]
    return None if doc.get("es") is None else tso_from_unix_ms(doc["es"])
