"""Encode-only: the sink's encoders and the hand-written ones on the same rows, in this process, one core, no
broker or Spark; what each costs per row and, under cProfile, where the sink's time goes.

``sink_messages`` and ``routed_messages`` also give the other measurements the sink's own messages (the
hand-written checks, the bare producer)."""

from __future__ import annotations

import cProfile
import os
import pstats
import time

import numpy as np
import pyarrow as pa
from common import TOPIC_PARTITIONS, Result, in_turns, profile_text, say
from feed import sink_options, spark_schema, topic_written
from handwritten import HANDWRITTEN, AvroTarget, serializer_choices

from ticdc_sink.changes.contract import ChangeBatchBuilder, InputLayout
from ticdc_sink.changes.dispatch import PartitionDispatcher, Routing, TopicRouter, route
from ticdc_sink.codec import encoder_for
from ticdc_sink.config.sink_options import parse_options
from ticdc_sink.kafka.producer import python_bytes

ENCODE_BATCH_ROWS = 10_000  # an encode-only run's Arrow batches
ENCODE_TOPIC = "bench"  # the topic (avro: its stem) of the encode-only runs, which write nowhere
ENCODE_TURNS = 3


def one_partition(changes, topic: str) -> Routing:
    """Every row to partition 0 of one topic: the encoder's work without the dispatcher's."""
    zeros = np.zeros(changes.num_rows, dtype=np.int32)
    return Routing([topic], zeros, zeros, {topic: 1})


def encode_options(protocol: str, registry: str | None) -> dict[str, str]:
    """The options of the encode-only runs (no broker is reached; avro registers its schemas)."""
    return sink_options("127.0.0.1:1", ENCODE_TOPIC, protocol=protocol, schema_registry=registry)


def encode_sink(table: pa.Table, protocol: str, registry: str | None = None,
                profile: cProfile.Profile | None = None, extra: dict[str, str] | None = None,
                name: str | None = None) -> Result:
    """The sink's encode-only run of ``table`` (``extra``: more options, and the row's ``name`` says which)."""
    options = {**encode_options(protocol, registry), **(extra or {})}
    config, topic = parse_options(options), topic_written(options)
    layout = spark_layout(config)

    def fresh_encode():
        builder, encoder = ChangeBatchBuilder(layout, config), encoder_for(config, layout.table)

        def encode(batch: pa.RecordBatch) -> int:
            changes, _ = builder.build(batch)
            return int(encoder.encode_rows(changes, one_partition(changes, topic)).byte_lengths().sum())

        return encode

    batches = table.to_batches(max_chunksize=ENCODE_BATCH_ROWS)
    fresh_encode()(batches[0])  # a warm-up by an encoder of its own: first calls import and look up kernels
    encode = fresh_encode()
    if profile:
        profile.enable()
    started = time.perf_counter()
    size = sum(encode(batch) for batch in batches)
    elapsed = time.perf_counter() - started
    if profile:
        profile.disable()
    return Result("encode", name or f"ticdc-sink {protocol}", table.num_rows, elapsed, size / 1e6)


def encode_handwritten(table: pa.Table, protocol: str, name: str, serializer) -> Result:
    rows = table.to_pylist()  # the rows a foreachPartition loop gets, made before timing
    started = time.perf_counter()
    size = sum(len(value or b"") + len(key or b"") for _, key, value in HANDWRITTEN[protocol](rows, serializer))
    elapsed = time.perf_counter() - started
    return Result("encode", f"hand-written {protocol}, dict per row + {name}", table.num_rows, elapsed, size / 1e6)


def sink_messages(table: pa.Table, options: dict[str, str]) -> list[tuple[bytes | None, bytes | None]]:
    """The sink's ``(key, value)`` messages of the rows, as encode-only makes them, in Python bytes."""
    return [(key, value) for _, key, value in _encoded(table, options, one_partition)]


def routed_messages(table: pa.Table, options: dict[str, str]) -> list[tuple[int, bytes | None, bytes | None]]:
    """The sink's ``(partition, key, value)`` messages of the rows, each in the partition the sink's dispatcher
    gives it on a topic of ``TOPIC_PARTITIONS`` partitions."""
    config = parse_options(options)
    router, dispatcher = TopicRouter(config), PartitionDispatcher(config, spark_layout(config).table)
    return _encoded(table, options, lambda changes, _topic: route(changes, router, dispatcher,
                                                                  lambda _name: TOPIC_PARTITIONS))


def spark_layout(config) -> InputLayout:
    return InputLayout.from_spark_schema(spark_schema(), config)


def _encoded(table: pa.Table, options: dict[str, str], routing_of) -> list[tuple[int, bytes | None, bytes | None]]:
    config = parse_options(options)
    layout = spark_layout(config)
    builder = ChangeBatchBuilder(layout, config)
    encoder = encoder_for(config, layout.table)
    messages = []
    for batch in table.to_batches(max_chunksize=10_000):
        changes, _ = builder.build(batch)
        encoded = encoder.encode_rows(changes, routing_of(changes, topic_written(options)))
        keys = python_bytes(encoded.keys) if encoded.keys is not None else [None] * len(encoded)
        messages += zip(encoded.partitions.tolist(), keys, python_bytes(encoded.values))
    return messages


def encode_runs(table: pa.Table, protocol: str, registry: str | None, avro: AvroTarget | None,
                turns: int) -> tuple[list[Result], str]:
    """A protocol's encode-only rows (the sink, each hand-written serialiser, ``in_turns``) and the sink's
    profile."""
    runs = {"the sink": lambda: encode_sink(table, protocol, registry)}
    for name, serializer in serializer_choices(protocol, avro).items():
        runs[f"hand-written ({name})"] = lambda name=name, serializer=serializer: encode_handwritten(
            table, protocol, name, serializer)
    results = in_turns(runs, turns, f"encode-only {protocol}")
    say(f"encode-only {protocol} under cProfile")
    return results, encoder_profile(table, protocol, registry)


def encoder_profile(table: pa.Table, protocol: str, registry: str | None) -> str:
    """cProfile of a run of its own (the profiler slows the encoder down), by cumulative time and by concern."""
    profile = cProfile.Profile()
    encode_sink(table, protocol, registry, profile)
    return profile_text(profile, profile_shares)


def profile_shares(stats: pstats.Stats) -> str:
    """The encoder's time by concern, from its profile (cumulative seconds of the entry points)."""
    concerns = {  # label: (where the function is, under ticdc_sink/; its name)
        "JSON columns as TiDB's JSON text (changes/tidb_json.tidb_json_column)": ("changes/tidb_json.py",
                                                                                  "tidb_json_column"),
        "input contract and canonical values (ChangeBatchBuilder.build, JSON included)": ("changes/contract.py",
                                                                                           "build"),
        "rendering and assembling messages (Encoder.encode_rows)": ("codec/", "encode_rows"),
        "  of which Go-quoted binary strings (json_text.go_quoted_fragments)": ("codec/shared/json_text.py",
                                                                               "go_quoted_fragments"),
        "  of which framing events per partition (open_protocol/frames.pack_events)": ("codec/open_protocol/frames.py",
                                                                                      "pack_events"),
        "  of which Avro encodings of the columns (avro/encoder.column_binary)": ("codec/avro/encoder.py",
                                                                                "column_binary"),
        "  of which joining fragments into records (avro_binary.concat)": ("codec/shared/avro_binary.py", "concat"),
        "  of which Debezium column values, new and old rows (debezium/field_types.value_fragments)":
            ("codec/debezium/field_types.py", "value_fragments"),
        "  of which Debezium op and old rows, their values included (debezium/encoder._op_and_old_rows)":
            ("codec/debezium/encoder.py", "_op_and_old_rows"),
        "  of which Simple column values, new and old rows (simple/json_wire, avro_wire column_fragments)":
            ("codec/simple/", "column_fragments"),
    }
    total = stats.total_tt or 1.0
    lines = [f"Encoder time {total:.2f} s (under the profiler), of which:"]
    for label, (place, function) in concerns.items():
        seconds = sum(entry[3] for (path, _, name), entry in stats.stats.items()
                      if name == function and f"ticdc_sink{os.sep}{place}".replace("/", os.sep) in path)
        if seconds or not label.startswith(" "):
            lines.append(f"  {seconds / total * 100:5.1f}%  {label}")
    return "\n".join(lines)
