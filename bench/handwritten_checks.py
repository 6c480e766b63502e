"""The hand-written encoders write the sink's messages: checked on the feed's first rows before they are timed,
so that the encode-only ratios compare like for like (the encoding clock, which neither side fixes, aside)."""

from __future__ import annotations

import re

import pyarrow as pa
from common import title
from encode import encode_options, sink_messages
from feed import topic_written
from handwritten import HANDWRITTEN, STANDARD_SERIALIZER, AvroTarget, serializer_choices

CHECK_ROWS = 5_000  # rows whose hand-written messages must be the sink's


def _handwritten_messages(protocol: str, sample: pa.Table, serializer) -> list[tuple[bytes | None, bytes | None]]:
    return [(key, value) for _, key, value in HANDWRITTEN[protocol](sample.to_pylist(), serializer)]


def avro_target(table: pa.Table, registry: str) -> AvroTarget:
    """The encode-only topic's subjects and the schema texts the sink registers there, read back from the
    registry after the sink has encoded a row, so that the hand-written serialisers register the very same."""
    from confluent_kafka.schema_registry import SchemaRegistryClient

    options = encode_options("avro", registry)
    topic = topic_written(options)
    sink_messages(table.slice(0, 1), options)
    client = SchemaRegistryClient({"url": registry})
    key, value = (client.get_latest_version(f"{topic}-{part}").schema.schema_str for part in ("key", "value"))
    return AvroTarget(registry, topic, key, value)


def _same_messages(what: str, sink: list, hand: list) -> None:
    """Fails unless the hand-written ``(key, value)`` messages are the sink's, naming the first difference."""
    different = [i for i, (ours, theirs) in enumerate(zip(sink, hand)) if ours != theirs]
    if len(sink) != len(hand) or different:
        row = different[0] if different else min(len(sink), len(hand))
        raise RuntimeError(f"the {what} are not the sink's: {len(hand)} messages for the sink's {len(sink)}, "
                           f"{len(different)} differ (row {row}: sink {sink[row:row + 1]!r}, "
                           f"hand-written {hand[row:row + 1]!r})")


def _op_counts(sample: pa.Table) -> str:
    ops = sample.column("_op").value_counts().to_pylist()
    return ", ".join(f"{c['counts']:,} {c['values'].lower()}s" for c in ops)


def check_avro_baseline(table: pa.Table, target: AvroTarget, rows: int = CHECK_ROWS) -> str:
    """Fails unless the hand-written AvroSerializer's keys and values equal the sink's on the feed's first
    ``rows`` rows (inserts, updates, deletes' tombstones): then the two encode-only speeds compare like for like."""
    sample = table.slice(0, rows)
    sink = sink_messages(sample, encode_options("avro", target.registry_url))
    serializer = serializer_choices("avro", target)[STANDARD_SERIALIZER["avro"]]
    hand = _handwritten_messages("avro", sample, serializer)
    _same_messages("hand-written Avro messages", sink, hand)
    return (f"The hand-written Avro messages (AvroSerializer) equal the sink's byte for byte, keys and values, on "
            f"the feed's first {sample.num_rows:,} rows ({_op_counts(sample)}; a delete's value is a tombstone).")


# The payload's own ts_ms, the encoding clock: the first ts_ms followed by transaction (source.ts_ms, the commit
# time, is followed by snapshot).
_ENCODING_CLOCK = re.compile(rb'"ts_ms":-?[0-9]+,"transaction":')


def without_encoding_clock(messages: list[tuple[bytes | None, bytes | None]]) -> list:
    """Debezium messages with the payload's ``ts_ms`` (the wall clock when encoded) set to 0."""
    return [(key, value if value is None else _ENCODING_CLOCK.sub(b'"ts_ms":0,"transaction":', value, count=1))
            for key, value in messages]


def check_debezium_baseline(table: pa.Table, rows: int = CHECK_ROWS) -> str:
    """Fails unless each hand-written Debezium encoder's keys and values equal the sink's on the feed's first
    ``rows`` rows (inserts, updates, deletes), schemas included, the payload's encoding clock aside (neither
    has a fixed clock): then the encode-only speeds compare like for like."""
    sample = table.slice(0, rows)
    sink = without_encoding_clock(sink_messages(sample, encode_options("debezium", None)))
    choices = serializer_choices("debezium")
    for name, serializer in choices.items():
        hand = _handwritten_messages("debezium", sample, serializer)
        _same_messages(f"hand-written Debezium messages ({name})", sink, without_encoding_clock(hand))
    return (f"The hand-written Debezium messages ({', '.join(choices)}) equal the sink's byte for byte, keys and "
            f"values with their schemas, on the feed's first {sample.num_rows:,} rows ({_op_counts(sample)}), "
            "the payload's ts_ms (the clock when encoded, not source.ts_ms) set to 0 in both.")


_BUILD_TS = re.compile(rb'"buildTs":[0-9]+,')


def _without_build_ts(protocol: str, messages: list[tuple[bytes | None, bytes | None]]) -> list:
    """Simple messages with the encoding clock (``buildTs``) set to 0: JSON's text, Avro's decoded fields
    and byte length (the clock's varint has the same width in both)."""
    if protocol == "simple":
        return [(key, _BUILD_TS.sub(b'"buildTs":0,', value, count=1)) for key, value in messages]
    from ticdc_sink.codec.simple.avro_wire import SimpleAvro

    return [(key, len(value), {**SimpleAvro.read(value), "buildTs": 0}) for key, value in messages]


def check_simple_baseline(table: pa.Table, protocol: str, rows: int = CHECK_ROWS) -> str:
    """Fails unless each hand-written Simple encoder's messages are the sink's on the feed's first ``rows``
    rows, the encoding clock aside: then the encode-only speeds compare like for like."""
    sample = table.slice(0, rows)
    sink = _without_build_ts(protocol, sink_messages(sample, encode_options(protocol, None)))
    choices = serializer_choices(protocol)
    for name, serializer in choices.items():
        hand = _handwritten_messages(protocol, sample, serializer)
        _same_messages(f"hand-written {title(protocol)} messages ({name})", sink, _without_build_ts(protocol, hand))
    same = "byte for byte" if protocol == "simple" else "field for field, and in length"
    return (f"The hand-written {title(protocol)} messages ({', '.join(choices)}) equal the sink's {same} on the "
            f"feed's first {sample.num_rows:,} rows ({_op_counts(sample)}), buildTs (the encoding clock) aside.")
