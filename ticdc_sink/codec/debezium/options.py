"""Debezium's options (TiCDC's sink-URI and ``[sink]`` settings of the same names)."""

from __future__ import annotations

from dataclasses import dataclass

from ..base import ProtocolOptions


@dataclass(frozen=True, repr=False)
class DebeziumOptions(ProtocolOptions):
    enable_tidb_extension: bool = False
    debezium_disable_schema: bool = False
    cluster_id: str = "default"  # the ``source.name`` of every message, and the first part of its schema names
