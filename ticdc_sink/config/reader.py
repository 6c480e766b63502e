"""The reader's options: which topics and offsets to read, and how; decoding takes the sink's own options.

A read takes the options its topic was written with (``protocol``,
``enable-tidb-extension``, ``schema-registry``, ``time-zone``,
``column-types``, the metadata column names, ``kafka.*``), parsed as the
sink parses them, so one option map serves both directions.  Options only a
writer uses are accepted and have no effect.  What only a reader has is
``ReadOptions``.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from typing import Mapping

from ..errors import ConfigError, UnknownOptionError
from .option_group import OptionGroup, parse_int
from .sink import SinkConfig
from .sink_options import KNOWN_OPTIONS, SPARK_OWN_OPTIONS, parse_options
from .sink_uri import parse_sink_uri

EARLIEST, LATEST = -2, -1  # Spark's Kafka source spells per-partition offsets so too
_TOPIC_NAME = re.compile(r"^[A-Za-z0-9._\-]{1,249}$")


@dataclass(frozen=True, repr=False)
class ReadOptions(OptionGroup):
    """What a reader has beyond the sink's options."""

    topic_pattern: str | None = None
    starting_offsets: str = "earliest"
    ending_offsets: str = "latest"  # batch reads only
    max_offsets_per_trigger: str | None = None  # a whole number; checked in parse_read_options
    on_error: str = field(default="fail", metadata={"choices": ("fail", "skip")})
    include_kafka_coordinates: bool = False


_READ_OPTIONS = ReadOptions.option_fields()
_ALL_OPTIONS = tuple(sorted(set(KNOWN_OPTIONS) | set(_READ_OPTIONS)))


@dataclass(frozen=True)
class ReadConfig:
    """A read, validated on the driver; picklable, so it travels to executors."""

    sink: SinkConfig  # how to decode, and the Kafka client settings
    topics: tuple[str, ...]  # empty with a topic pattern
    topic_pattern: str | None
    starting_offsets: str | dict
    ending_offsets: str | dict
    max_offsets_per_trigger: int | None
    on_error: str
    include_kafka_coordinates: bool

    @property
    def consumer_settings(self) -> dict[str, str]:
        """librdkafka settings of the read's consumers: read_committed unless ``kafka.isolation.level`` says."""
        return {"isolation.level": "read_committed", **self.sink.kafka}

    def describe_topics(self) -> str:
        return f"topics matching {self.topic_pattern!r}" if self.topic_pattern else ", ".join(self.topics)


def _suggest(name: str) -> str:
    close = difflib.get_close_matches(name, _ALL_OPTIONS, n=1, cutoff=0.6)
    if close:
        return f"did you mean {close[0]!r}?"
    return "known options are " + ", ".join(_ALL_OPTIONS) + ", and kafka.<librdkafka setting>"


def parse_read_options(options: Mapping[str, str]) -> ReadConfig:
    """Validate a read's options (Spark passes them case-insensitively); one error names the first problem."""
    given = {str(k).lower(): str(v) for k, v in options.items() if v is not None}
    for key, value in given.items():
        if (key in _ALL_OPTIONS or key in SPARK_OWN_OPTIONS or key.startswith(("kafka.", "schema-registry."))):
            continue
        raise UnknownOptionError(key, value, _suggest(key))
    read = ReadOptions(**ReadOptions.parse_values(given))

    topic = given.get("topic")
    if topic is None and "sink-uri" in given:
        topic = parse_sink_uri(given["sink-uri"])[0].get("topic")
    if (topic is None) == (read.topic_pattern is None):
        raise ConfigError("topic", topic, "give the topics to read: topic (a name or a comma-separated list) or "
                                          "topic-pattern (a regular expression), not both")
    topics: tuple[str, ...] = ()
    pattern = read.topic_pattern
    if topic is not None and "{" in topic:
        # The writer's expression, as the sink wrote it: the topic of database.table, or every topic it makes.
        topic, pattern = _expression_topics(topic, given.get("database"), given.get("table"))
    if topic is not None:
        topics = tuple(t.strip() for t in topic.split(",") if t.strip())
        bad = [t for t in topics if not _TOPIC_NAME.match(t)]
        if not topics or bad:
            raise ConfigError("topic", topic, "one Kafka topic name or several joined by commas, a writer's "
                                              "expression such as tidb_{schema}_{table}, or topic-pattern")
    else:
        try:
            re.compile(pattern)
        except re.error as e:
            raise ConfigError("topic-pattern", pattern, f"not a regular expression ({e})") from None

    rest = {k: v for k, v in given.items() if k not in _READ_OPTIONS}
    sink = parse_options({**rest, "topic": topic or pattern}, reading=True)
    limit = read.max_offsets_per_trigger
    return ReadConfig(
        sink=sink, topics=topics, topic_pattern=pattern,
        starting_offsets=_parse_offsets("starting-offsets", read.starting_offsets),
        ending_offsets=_parse_offsets("ending-offsets", read.ending_offsets),
        max_offsets_per_trigger=None if limit is None else parse_int("max-offsets-per-trigger", limit, 1),
        on_error=read.on_error, include_kafka_coordinates=read.include_kafka_coordinates,
    )


def _expression_topics(expression: str, database: str | None, table: str | None) -> tuple[str | None, str | None]:
    """A sink's topic expression read back: (the topic of ``database.table`` when both are given, or None;
    else None and a pattern of every topic the expression makes)."""
    if database is not None and table is not None:
        return expression.replace("{schema}", database).replace("{table}", table), None
    parts = re.split(r"(\{schema\}|\{table\})", expression)
    return None, "".join(".+" if part in ("{schema}", "{table}") else re.escape(part) for part in parts)


def _parse_offsets(option: str, text: str) -> str | dict:
    """``earliest``, ``latest``, or Spark's per-partition JSON ``{"topic": {"0": 23, "1": -2}}`` (-2 earliest,
    -1 latest; a partition left out starts at the earliest)."""
    word = text.strip().lower()
    if word in ("earliest", "latest"):
        return word
    try:
        parsed = json.loads(text)
        if not isinstance(parsed, dict):
            raise ValueError
        return {str(topic): {str(int(p)): int(offset) for p, offset in partitions.items()}
                for topic, partitions in parsed.items()}
    except (ValueError, TypeError, AttributeError):
        raise ConfigError(option, text, 'earliest, latest, or JSON per topic and partition such as '
                                        '{"orders": {"0": 42, "1": -2}} (-2: earliest, -1: latest)') from None
