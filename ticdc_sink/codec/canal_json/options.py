"""Canal-JSON's options (TiCDC's sink-URI and ``[sink]`` settings of the same names)."""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass

from ...config.sink import SinkConfig
from ...errors import ConfigError
from ..base import ProtocolOptions

log = logging.getLogger(__name__)


@dataclass(frozen=True, repr=False)
class CanalJSONOptions(ProtocolOptions):
    enable_tidb_extension: bool = False
    content_compatible: bool = False
    only_output_updated_columns: bool = False
    delete_only_output_handle_key_columns: bool = False  # a DELETE carries its handle-key columns only
    output_row_key: bool = False  # _tidb.rowkey: the row's TiKV key (``table/row_key.py``)
    table_id: int = 0  # the table's id in TiDB, which the row key starts with

    handles_large_messages = True

    def resolve(self, config: SinkConfig, *, reading: bool = False) -> "CanalJSONOptions":
        option = config.large_message_handle_option
        if not reading and option != "none" and not self.enable_tidb_extension:
            raise ConfigError("large-message-handle-option", option,
                              f"large message handle is set to {option}, protocol is canal-json, but "
                              "enable-tidb-extension is false: set enable-tidb-extension=true (the mark is in _tidb)")
        resolved = self._resolve_row_key(config, reading)
        # TiCDC's rule (pkg/config/sink.go, CodecConfig): content-compatible implies only-output-updated-columns.
        return dataclasses.replace(resolved, only_output_updated_columns=True) if self.content_compatible else resolved

    def _resolve_row_key(self, config: SinkConfig, reading: bool) -> "CanalJSONOptions":
        """TiCDC writes the row key in ``_tidb`` only, and says nothing without it (canal_json_encoder.go): off
        then, with a line in the log.  With it, the key needs the table's id, which the input does not carry."""
        if not self.output_row_key or reading:
            return self
        if not self.enable_tidb_extension:
            log.warning("canal-json: output-row-key is set but enable-tidb-extension is not, so no message carries "
                     "the row key (_tidb.rowkey), as in TiCDC")
            return dataclasses.replace(self, output_row_key=False)
        if not self.table_id:
            raise ConfigError("table-id", None,
                              "output-row-key needs the table's id in TiDB, which starts each row key: "
                              "SELECT TIDB_TABLE_ID FROM information_schema.tables WHERE TABLE_SCHEMA = '<database>' "
                              "AND TABLE_NAME = '<table>' (a partitioned table's rows are keyed by their partition's "
                              "id: write each partition with its own)")
        if not (config.database and config.table):
            raise ConfigError("table" if config.database else "database", None,
                              f"table-id {self.table_id} is one table's id: name that table with the options "
                              "database and table, so that rows of another table are refused")
        return self
