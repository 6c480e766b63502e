"""Builds ChangeBatches straight from Python rows, without a Spark session."""

from __future__ import annotations

import dataclasses

import pyarrow as pa
from pyspark.sql import types as T

from ticdc_sink.changes.contract import ChangeBatchBuilder, InputLayout
from ticdc_sink.codec import PROTOCOL_OPTIONS
from ticdc_sink.config.sink_options import parse_options
from ticdc_sink.table.spark_types import arrow_schema_of

BASE_OPTIONS = {"kafka.bootstrap.servers": "127.0.0.1:1", "protocol": "canal-json", "topic": "t"}


def schema(*fields: tuple) -> T.StructType:
    """``schema(("id", T.IntegerType(), False), ("name", T.StringType()))``."""
    return T.StructType([T.StructField(f[0], f[1], f[2] if len(f) > 2 else True,
                                       f[3] if len(f) > 3 else None) for f in fields])


def build(spark_schema: T.StructType, rows: list[dict], **options):
    """(config, layout, ChangeBatch, ddls) for ``rows`` under ``spark_schema`` and options."""
    opts = {**BASE_OPTIONS, **{k.replace("_", "-"): str(v) for k, v in options.items()}}
    config = parse_options(opts)
    layout = InputLayout.from_spark_schema(spark_schema, config)
    record_batch = pa.RecordBatch.from_pylist(rows, schema=arrow_schema_of(spark_schema))
    changes, ddls = ChangeBatchBuilder(layout, config).build(record_batch)
    return config, layout, changes, ddls


def configured(config, **changes):
    """``config`` with ``changes``, the protocol's own options among them, for the protocol it then has."""
    options_class = PROTOCOL_OPTIONS[changes.get("protocol", config.protocol)]
    own = {f.name for f in dataclasses.fields(options_class)}
    options = config.protocol_options if isinstance(config.protocol_options, options_class) else options_class()
    options = dataclasses.replace(options, **{k: v for k, v in changes.items() if k in own})
    return dataclasses.replace(config, protocol_options=options, **{k: v for k, v in changes.items() if k not in own})
