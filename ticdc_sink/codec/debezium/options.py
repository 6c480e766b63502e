"""Debezium's options (TiCDC's sink-URI and ``[sink]`` settings of the same names)."""

from __future__ import annotations

from dataclasses import dataclass

from ..base import ProtocolOptions


@dataclass(frozen=True, repr=False)
class DebeziumOptions(ProtocolOptions):
    enable_tidb_extension: bool = False
    debezium_disable_schema: bool = False
    cluster_id: str = "default"  # the ``source.name`` of every message, and the first part of its schema names
    # TiCDC's [sink.debezium] output-old-value: false leaves an UPDATE's "before" out, even where the input has it.
    debezium_output_old_value: bool = True
    debezium_include_start_ts: bool = False  # the source block's start_ts (the input's _start_ts)
