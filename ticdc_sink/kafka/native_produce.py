"""The optional native producer path: a whole batch of messages handed to librdkafka in one call.

``KafkaOutput.produce`` otherwise makes one Python ``produce()`` call and one
Python delivery callback per message.  The ``ticdc-sink-native`` package
(``native/`` in the repository, ``pip install ./native``) is a C extension
that takes the Arrow buffers of ``Messages`` and enqueues every message with
librdkafka's ``rd_kafka_produce``, on the same confluent-kafka producer (so
transactions, fencing and errors stay as they are).  The extension is also a
librdkafka plugin (the producer setting ``plugin.library.paths`` names it):
its ``on_acknowledgement`` interceptor counts the deliveries of those
messages, which carry no per-message state, so confluent-kafka's own delivery
callback passes them over; ``NativeProducer.take`` hands the counts to
``KafkaOutput`` when it serves delivery reports.  Without the package the sink
is exactly as before.  The option ``native-producer`` chooses: ``auto`` (the
native path where the package is installed), ``on`` or ``off``.
"""

from __future__ import annotations

import importlib.util
import logging
from dataclasses import dataclass
from typing import Iterable

import numpy as np
import pyarrow as pa
from confluent_kafka import KafkaError, KafkaException

from ..arrow_buffers import buffer_addresses
from ..config.sink import SinkConfig
from ..errors import ConfigError
from .messages import Messages

log = logging.getLogger(__name__)

PACKAGE = "ticdc_sink_native"
NOT_INSTALLED = "ticdc-sink-native is not installed (pip install ./native)"
_INSTALL = ("pip install ./native from a clone of ticdc-sink (it needs gcc and the Python headers), or set "
            "native-producer to auto or off")
_PLUGIN_PATHS = "plugin.library.paths"


def installed() -> bool:
    """Whether the ``ticdc-sink-native`` package can be imported (without importing it)."""
    return importlib.util.find_spec(PACKAGE) is not None


def check_installed(mode: str) -> None:
    """``native-producer=on`` without the package: one ConfigError, before any task starts."""
    if mode == "on" and not installed():
        raise ConfigError("native-producer", mode, f"ticdc-sink-native is not installed: {_INSTALL}")


@dataclass(frozen=True)
class Taken:
    """What a producer's native messages did since the last ``take``."""

    acknowledged: int
    failed: int
    fenced: int  # the first fencing error code of a failed delivery, 0 for none
    failures: list[tuple[str, int, int]]  # (topic, partition, error code), each first seen since the last take
    spans: list[tuple[str, int, int, int]]  # (topic, partition, first offset, highest offset) acknowledged


class NativeProducer:
    """The native path of one confluent-kafka producer made with ``Native.plugin_settings``."""

    def __init__(self, extension, producer) -> None:
        self._extension, self.producer, self._id = extension, producer, id(producer)

    def batch(self, messages: Messages) -> "NativeBatch":
        return NativeBatch(self, messages)

    def take(self) -> Taken | None:
        """The deliveries counted since the last call; None once the producer is gone."""
        taken = self._extension.take(self._id)
        return None if taken is None else Taken(*taken)


class NativeBatch:
    """``Messages`` as the extension reads them: their buffers' addresses, the arrays held alive meanwhile."""

    def __init__(self, producer: NativeProducer, messages: Messages) -> None:
        self._producer, self.messages = producer, messages
        self._topics = tuple(topic.encode() for topic in messages.topics)
        self._topic_of = None if messages.topic_of_message is None \
            else np.ascontiguousarray(messages.topic_of_message, dtype=np.int32)
        self._partitions = np.ascontiguousarray(messages.partitions, dtype=np.int32)
        self._values, value_buffers = _binary_buffers(messages.values)
        self._keys, key_buffers = _binary_buffers(messages.keys)
        self._arguments = (producer._id, self._topics, 0 if self._topic_of is None else _address(self._topic_of),
                           _address(self._partitions), value_buffers, key_buffers)

    def produce(self, start: int, end: int) -> tuple[int, int]:
        """Enqueue messages ``start``..``end``-1 in order; returns how many were, and the error code of the
        message refused after them (0: none was).  Nothing after a refused message is enqueued."""
        if start >= end:
            return 0, 0
        return self._producer._extension.produce(*self._arguments, start, end)

    def topic(self, index: int) -> str:
        return self.messages.topics[0 if self._topic_of is None else int(self._topic_of[index])]


def refused(code: int) -> KafkaException:
    """The exception confluent-kafka's ``produce()`` raises for a message librdkafka refuses with ``code``."""
    return KafkaException(KafkaError(code, f"Unable to produce message: {KafkaError(code).str()}"))


class Native:
    """The extension, bound to the librdkafka confluent-kafka loaded (once per process)."""

    def __init__(self, extension, library: str, version: str) -> None:
        self._extension, self.library, self.version = extension, library, version

    def plugin_settings(self, settings: dict[str, object]) -> dict[str, object]:
        """The producer settings that load the extension as a librdkafka plugin, after any of the user's own."""
        own = str(settings.get(_PLUGIN_PATHS) or "")
        return {_PLUGIN_PATHS: ";".join(path for path in (own, self._extension.PLUGIN_PATH) if path)}

    def attach(self, producer) -> NativeProducer | None:
        """The native path of ``producer``, made with ``plugin_settings``; None where the plugin did not take."""
        return NativeProducer(self._extension, producer) if self._extension.registered(id(producer)) else None


_loaded: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[Native | None, str]] = {}
_told: set[str] = set()


def load(fenced: Iterable[int], purged: Iterable[int]) -> tuple[Native | None, str]:
    """The bound extension, or None and why not.  ``fenced`` and ``purged``: the error codes the delivery
    accounting notes as fencing, and counts as failed without a reason (``producer.py``'s; bound once per
    process, so every call must give the same)."""
    codes = (tuple(int(c) for c in fenced), tuple(int(c) for c in purged))
    if codes not in _loaded:
        if _loaded:
            raise ValueError(f"ticdc-sink-native is bound with the codes {next(iter(_loaded))}, not {codes}")
        _loaded[codes] = _load(*codes)
    return _loaded[codes]


def _load(fenced: tuple[int, ...], purged: tuple[int, ...]) -> tuple[Native | None, str]:
    try:
        import ticdc_sink_native as extension
    except ImportError as e:
        return None, NOT_INSTALLED if e.name == PACKAGE else f"ticdc-sink-native does not import: {e}"
    from confluent_kafka import cimpl

    try:
        library, version = extension.bind(cimpl.__file__, fenced, purged)
    except OSError as e:
        return None, f"ticdc-sink-native cannot use confluent-kafka's librdkafka: {e}"
    return Native(extension, library, version), ""


def choose(config: SinkConfig, fenced: Iterable[int], purged: Iterable[int]) -> Native | None:
    """The native path per ``native-producer``: None for ``off``, and for ``auto`` without the package (said once
    per process at INFO); ``on`` without it is a ConfigError."""
    mode = config.native_producer
    if mode == "off":
        return None
    native, why = load(fenced, purged)
    if native is None and mode == "on":
        raise ConfigError("native-producer", mode, f"{why}: {_INSTALL}")
    _tell(f"native-producer={mode}: " + (
        f"batches go to librdkafka {native.version} ({native.library}) in one call each (ticdc-sink-native)"
        if native is not None else f"one produce() call per message ({why})"))
    return native


def unattached(config: SinkConfig) -> None:
    """A producer made with the plugin that did not take it (not expected): ``on`` fails, ``auto`` says so."""
    why = "the producer was made without ticdc-sink-native's librdkafka plugin"
    if config.native_producer == "on":
        raise ConfigError("native-producer", "on", why)
    _tell(f"native-producer=auto: one produce() call per message ({why})", logging.WARNING)


def _tell(line: str, level: int = logging.INFO) -> None:
    if line not in _told:
        _told.add(line)
        log.log(level, "%s", line)


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


_SMALL = (pa.types.is_binary, pa.types.is_string)
_LARGE = (pa.types.is_large_binary, pa.types.is_large_string)


def _binary_buffers(array: pa.Array | None) -> tuple[pa.Array | None, tuple | None]:
    """(the array to hold alive, (validity, offsets, data, offset, large)) of a binary or string array; None for
    no array, or one of nulls only."""
    if array is None or pa.types.is_null(array.type):
        return None, None
    if any(test(array.type) for test in _SMALL):
        large = False
    elif any(test(array.type) for test in _LARGE):
        large = True
    else:  # another layout of bytes (a view type): its bytes, as the Python path would send them
        array, large = array.cast(pa.large_binary()), True
    return array, buffer_addresses(array, large)
