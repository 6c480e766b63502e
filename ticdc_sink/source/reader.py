"""The ``ticdc`` format's readers: ``spark.read`` over offset ranges, ``spark.readStream`` in consistent cuts.

A batch read gives every change between ``starting-offsets`` and
``ending-offsets``, one Spark partition per Kafka partition.

A streaming read keeps its position in Spark's checkpoint as
``{"cut": T, "partitions": {"topic:p": {"resume": r, "end": e}}}``.  Where
the protocol carries watermarks, each micro-batch ends at one commit ts T
for all partitions, the least of their last watermarks: it gives every
change with commit ts up to T and none after (TiCDC's consumers flush at the
same "global resolved ts").  Partition p is read up to its last watermark
(``end``); the next micro-batch reads it again from its last watermark at or
below T (``resume``), skipping what it gave already.  Where the protocol
carries none, a micro-batch ends at the offsets available.
"""

from __future__ import annotations

import logging
from typing import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader

from ..codec import decoder_for, recognition
from ..codec.base import RowEvent, learned_table_schemas
from ..config.reader import ReadConfig
from ..errors import ConfigError, ReadError
from .layout import ReadLayout
from .partition_read import KafkaRange, read_range
from .topics import PartitionKey, TopicsView, WatermarkSearch, split_key
from .undecodable import stops_every_message, undecodable

try:  # pyspark >= 4.2: read limits (admission control)
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows
except ImportError:  # pyspark 4.0 and 4.1
    ReadAllAvailable = ReadMaxRows = None

log = logging.getLogger(__name__)
_INFERENCE_MESSAGES = 100_000  # messages read at most to find the table's columns


def find_layout(config: ReadConfig) -> ReadLayout:
    """The layout of the read's table, from the first of its rows in the topics (from their earliest offsets).

    Prefers an INSERT or UPDATE: a DELETE may carry the key columns only.  Where no row was found, the first
    message that did not decode is named as the cause (another protocol's topic, most often), unless
    on-error=skip passes over such messages (and it is of the protocol).
    """
    decoder = decoder_for(config.sink)
    fallback, failure, read = None, None, 0
    wanted = (config.sink.database, config.sink.table)
    with TopicsView(config) as view:
        keys = view.partitions()
        bounds = view.bounds(keys)
        for key in keys:
            start, end = bounds[key]
            for message in view.messages(key, start, min(end, start + _INFERENCE_MESSAGES - read)):
                read += 1
                try:
                    events = recognition.decode(decoder, message.key(), message.value())
                except Exception as e:
                    failure = failure or (e, *split_key(key), message.offset(), message.value())
                    if stops_every_message(e):  # no later message would decode either
                        what, fix = undecodable(config.sink.protocol, *failure)
                        raise ReadError(f"{what}; {fix}") from None
                    continue
                for event in events:
                    if not isinstance(event, RowEvent):
                        continue
                    if (wanted[0] not in (None, event.database)) or (wanted[1] not in (None, event.table)):
                        continue
                    if event.type != "DELETE":
                        return ReadLayout.from_event(config, event, learned_table_schemas(decoder))
                    fallback = fallback or event
            if read >= _INFERENCE_MESSAGES:
                break
    if fallback is not None:
        return ReadLayout.from_event(config, fallback, learned_table_schemas(decoder))
    if failure is not None and (isinstance(failure[0], recognition.NotOfProtocol) or config.on_error != "skip"):
        what, fix = undecodable(config.sink.protocol, *failure)
        raise ReadError(f"{what}; {fix}")
    which = f"table {'.'.join(w for w in wanted if w)}" if any(wanted) else "any table"
    raise ConfigError("topic", config.describe_topics(),
                      f"found no row of {which} to learn its columns from; give the schema with "
                      ".schema('_op STRING, _commit_ts BIGINT, id INT, ...') (column-types for MySQL types)")


class TiCDCBatchReader(DataSourceReader):
    """Every change between ``starting-offsets`` and ``ending-offsets``: a Spark partition per Kafka partition."""

    def __init__(self, layout: ReadLayout):
        self.layout = layout

    def partitions(self) -> list[KafkaRange]:
        config = self.layout.config
        if config.ending_offsets == "earliest":
            raise ConfigError("ending-offsets", "earliest", "a read must end after it starts: latest or JSON offsets")
        with TopicsView(config) as view:
            keys = view.partitions()
            bounds = view.bounds(keys)
            starts = view.start_offsets(config.starting_offsets, keys, bounds)
            ends = view.start_offsets(config.ending_offsets, keys, bounds)
        ddl_partitions = _first_partitions(keys)
        return [KafkaRange(key, starts[key], ends[key], emits_ddl=key in ddl_partitions)
                for key in keys if starts[key] < ends[key]]

    def read(self, partition: KafkaRange) -> Iterator[pa.RecordBatch]:
        return read_range(self.layout, partition)


class TiCDCStreamReader(DataSourceStreamReader):
    """Micro-batches of changes, each a consistent cut where the protocol carries watermarks."""

    def __init__(self, layout: ReadLayout):
        self.layout = layout
        self.config = layout.config
        self.cuts = decoder_for(self.config.sink).carries_watermarks
        self._previous: dict | None = None  # pyspark < 4.2 does not say where a micro-batch starts

    def initialOffset(self) -> dict:
        with TopicsView(self.config) as view:
            keys = view.partitions()
            starts = view.start_offsets(self.config.starting_offsets, keys, view.bounds(keys))
        return {"cut": None, "partitions": {k: {"resume": s, "end": s} for k, s in starts.items()}}

    def getDefaultReadLimit(self):
        limit = self.config.max_offsets_per_trigger
        return ReadMaxRows(limit) if limit else ReadAllAvailable()

    def latestOffset(self, start: dict | None = None, limit=None) -> dict:
        start = start or self._previous or self.initialOffset()
        most = limit.max_rows if ReadMaxRows is not None and isinstance(limit, ReadMaxRows) else None
        end = self._next_end(start, most)
        if end is None and most is not None:
            log.info("no watermark within max-offsets-per-trigger=%d messages: reading to the next one", most)
            end = self._next_end(start, None)
        self._previous = end or start
        return self._previous

    def _next_end(self, start: dict, most: int | None) -> dict | None:
        """The end of the micro-batch after ``start`` (None: no cut is further than start's)."""
        with TopicsView(self.config) as view:
            keys = view.partitions()
            bounds = view.bounds(keys)
            begin = {k: start["partitions"].get(k, {}).get("resume", bounds[k][0]) for k in keys}
            ends = {k: bounds[k][1] for k in keys}
            if most is not None:
                ends = _limited(begin, ends, most)
            if not self.cuts:
                return {"cut": None, "partitions": {k: {"resume": ends[k], "end": ends[k]} for k in keys}}
            searches = {k: WatermarkSearch(view, k, begin[k], ends[k]) for k in keys}
            lasts = {k: search.last() for k, search in searches.items()}
            if not keys or any(w is None for w in lasts.values()):
                return None
            cut = min(w.ts for w in lasts.values())
            if start["cut"] is not None and cut <= start["cut"]:
                return None
            partitions = {}
            for key, search in searches.items():
                resume = search.last_at_most(cut)
                partitions[key] = {"resume": resume.offset if resume else begin[key], "end": lasts[key].offset + 1}
        return {"cut": cut, "partitions": partitions}

    def partitions(self, start: dict, end: dict) -> list[KafkaRange]:
        keys = list(end["partitions"])
        ddl_partitions = _first_partitions(keys)
        ranges = []
        for key in keys:
            begin = start["partitions"].get(key, {}).get("resume", 0)
            stop = end["partitions"][key]["end"]
            if begin < stop:
                ranges.append(KafkaRange(key, begin, stop, after_ts=start["cut"], through_ts=end["cut"],
                                         emits_ddl=key in ddl_partitions))
        return ranges

    def read(self, partition: KafkaRange) -> Iterator[pa.RecordBatch]:
        return read_range(self.layout, partition)

    def commit(self, end: dict) -> None:
        """Nothing to do: positions live in Spark's checkpoint, not in a consumer group."""


def _first_partitions(keys: list[PartitionKey]) -> set[PartitionKey]:
    """Each topic's lowest partition: where a read takes DDL rows from (TiCDC sends them to every partition)."""
    first: dict[str, PartitionKey] = {}
    for key in keys:
        topic, number = split_key(key)
        if topic not in first or number < split_key(first[topic])[1]:
            first[topic] = key
    return set(first.values())


def _limited(begin: dict[PartitionKey, int], ends: dict[PartitionKey, int], most: int) -> dict[PartitionKey, int]:
    """Ends that keep a micro-batch within ``most`` messages, shared by the partitions as their backlogs are."""
    backlog = {k: max(ends[k] - begin[k], 0) for k in ends}
    total = sum(backlog.values())
    if total <= most:
        return ends
    return {k: begin[k] + backlog[k] * most // total for k in ends}
