"""Canal-JSON's options (TiCDC's sink-URI and ``[sink]`` settings of the same names)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ...config.sink import SinkConfig
from ...errors import ConfigError
from ..base import ProtocolOptions


@dataclass(frozen=True, repr=False)
class CanalJSONOptions(ProtocolOptions):
    enable_tidb_extension: bool = False
    content_compatible: bool = False
    only_output_updated_columns: bool = False
    delete_only_output_handle_key_columns: bool = False  # a DELETE carries its handle-key columns only

    handles_large_messages = True

    def resolve(self, config: SinkConfig, *, reading: bool = False) -> "CanalJSONOptions":
        option = config.large_message_handle_option
        if not reading and option != "none" and not self.enable_tidb_extension:
            raise ConfigError("large-message-handle-option", option,
                              f"large message handle is set to {option}, protocol is canal-json, but "
                              "enable-tidb-extension is false: set enable-tidb-extension=true (the mark is in _tidb)")
        # TiCDC's rule (pkg/config/sink.go, CodecConfig): content-compatible implies only-output-updated-columns.
        return dataclasses.replace(self, only_output_updated_columns=True) if self.content_compatible else self
