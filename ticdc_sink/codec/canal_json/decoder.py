"""Canal-JSON, as TiCDC writes it (spec: ticdc-canal-json-protocol.md; reference section 3).

A DML message is one row, with TiCDC's field order: ``id, database, table,
pkNames, isDdl, type, es, ts, sql, sqlType, mysqlType, old, data[, _tidb]``.
Values are JSON strings (``null`` for NULL), binary values read as
ISO-8859-1.  The encoder assembles every message of a batch column by column
with Arrow string kernels: each column is rendered and JSON-quoted once for the
whole batch, and the messages are the element-wise concatenation of those
fragments with the constant parts.  Kafka keys are empty; DDL goes to
partition 0; TIDB_WATERMARK events exist only with ``enable-tidb-extension``.
"""

from __future__ import annotations

import json

from ..base import DDLEvent, Decoder, RowEvent, WatermarkEvent
from ..shared.decoding import text_value, typed_row


class CanalJSONDecoder(Decoder):
    def decode(self, key: bytes | None, value: bytes) -> list:
        doc = json.loads(value)
        extension = doc.get("_tidb") or {}
        if doc.get("isDdl"):
            return [DDLEvent(doc["database"], doc["table"], doc["sql"], doc["type"], extension.get("commitTs"))]
        if doc.get("type") == "TIDB_WATERMARK":
            return [WatermarkEvent(extension["watermarkTs"])]
        types = doc.get("mysqlType") or {}

        def typed(row: dict | None) -> dict | None:
            return typed_row(row, lambda name, text: text_value(text, types.get(name, "")))

        data = doc["data"][0] if doc.get("data") else None
        old = doc["old"][0] if doc.get("old") else None
        return [RowEvent(
            type=doc["type"],
            database=doc["database"],
            table=doc["table"],
            commit_ts=extension.get("commitTs"),
            columns=typed(data),
            old=typed(old),
            primary_keys=list(doc.get("pkNames") or []),
            mysql_types=dict(types),
        )]
