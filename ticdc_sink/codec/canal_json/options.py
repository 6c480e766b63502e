"""Canal-JSON's options (TiCDC's sink-URI and ``[sink]`` settings of the same names)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ...config import SinkConfig
from ..base import ProtocolOptions


@dataclass(frozen=True, repr=False)
class CanalJSONOptions(ProtocolOptions):
    enable_tidb_extension: bool = False
    content_compatible: bool = False
    only_output_updated_columns: bool = False
    delete_only_output_handle_key_columns: bool = False  # a DELETE carries its handle-key columns only

    def resolve(self, config: SinkConfig, *, reading: bool = False) -> "CanalJSONOptions":
        # TiCDC's rule (pkg/config/sink.go, CodecConfig): content-compatible implies only-output-updated-columns.
        return dataclasses.replace(self, only_output_updated_columns=True) if self.content_compatible else self
