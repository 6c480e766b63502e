"""What a Simple encoding provides: the one interface of the JSON and the Avro wire.

The encoder (``encoder.py``) decides which messages a batch or an event makes
and what goes into each; a wire writes them (``json_wire.py`` as Go's
encoding/json writes TiCDC's message struct, ``avro_wire.py`` in TiCDC's Avro
schema) and reads one back as the JSON encoding's fields, for the decoder.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np
import pyarrow as pa

from ...table.schema import Column
from .table_schema import SimpleTable


class SimpleWire(ABC):
    """One encoding of Simple's messages, a batch's rows a column at a time."""

    def __init__(self, time_zone: str):
        self.time_zone = time_zone

    # -- rows

    @abstractmethod
    def column_fragments(self, values: pa.Array, column: Column) -> pa.Array:
        """Each row's value of a column, as the encoding writes it in ``data`` and ``old``."""

    @abstractmethod
    def row(self, names: list[str], fragments: list[pa.Array], n: int) -> pa.Array:
        """The map of column name to value, per row."""

    @abstractmethod
    def member(self, name: str, rows: pa.Array) -> pa.Array:
        """``data`` or ``old`` present, holding ``rows``."""

    @abstractmethod
    def no_member(self, name: str) -> pa.Scalar:
        """``data`` or ``old`` absent."""

    @abstractmethod
    def dml(self, databases: pa.Array | str, tables: pa.Array | str, table_ids: np.ndarray | int, ops: np.ndarray,
            commit_ts: np.ndarray, build_ts: int, schema_version: int, data: pa.Array, old: pa.Array,
            n: int, handle_key_only: bool = False, locations: pa.Array | None = None,
            checksums: tuple[np.ndarray, np.ndarray] | None = None) -> pa.Array:
        """One DML message per row (``handle_key_only``: marked as standing for a row over max-message-bytes;
        ``locations``: and, with claim-check, where each row's whole message is; ``checksums``: each row's
        current and previous checksum, for its ``checksum``)."""

    # -- control messages

    @abstractmethod
    def table_schema(self, shape: SimpleTable, database: str, table: str, table_id: int) -> Any:
        """The ``tableSchema`` of a table, in the form ``bootstrap`` and ``ddl`` take it."""

    @abstractmethod
    def watermark(self, commit_ts: int, build_ts: int) -> str | bytes:
        ...

    @abstractmethod
    def bootstrap(self, build_ts: int, table_schema: Any) -> str | bytes:
        ...

    @abstractmethod
    def ddl(self, ddl_type: str, sql: str, commit_ts: int, build_ts: int, table_schema: Any,
            pre_table_schema: Any) -> str | bytes:
        ...

    @staticmethod
    @abstractmethod
    def read(value: bytes) -> dict:
        """A message as the JSON encoding's fields (for the decoder)."""
