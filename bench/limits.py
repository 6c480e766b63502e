"""The limits of the output path: the sink's own messages, encoded before timing, produced by bare
confluent-kafka loops (``produce_all``) with each of the produce calls, then with the fastest in one process
and in one per core. The faster of the two is the rate no sink can beat on this machine."""

from __future__ import annotations

import functools
import multiprocessing
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa
from common import CORES, Result, create_topic, delete_topic, in_turns, read_feed, say, unique_topic
from encode import routed_messages
from feed import sink_options, topic_written
from process_meters import broker_cpu

from ticdc_sink.kafka import native_produce
from ticdc_sink.kafka.messages import Messages
from ticdc_sink.kafka.producer import FENCED_ERRORS, PURGED

BARE = "bare producer"
CHOOSING = ", one run, to choose the call"  # a comparison run's tail where the limit is taken in turns


PRODUCE_CALLS = {  # the ways confluent-kafka takes messages, each timed by ``produce_all``
    "produce": "produce() per message, a delivery callback each",
    "produce, error reports only": "produce() per message, delivery reports of failures only",
    "produce_batch": "produce_batch() per partition, a dict per message",
}
NATIVE_BATCH = "native batch"
if native_produce.installed():  # the sink's own call where the package is installed
    PRODUCE_CALLS[NATIVE_BATCH] = ("ticdc-sink-native, one call per 10,000 messages of Arrow buffers, deliveries "
                                   "counted in C")


def produce_all(settings: dict, topic: str, messages: list[tuple[int, bytes | None, bytes | None]],
                call: str = "produce") -> float:
    """Produce ``(partition, key, value)`` messages with a bare idempotent producer, by one of
    ``PRODUCE_CALLS``; the seconds until all are acknowledged (none may fail)."""
    from confluent_kafka import Producer

    failures, delivered = [], [0]

    def on_delivery(error, _message):
        if error is not None:
            failures.append(error)
        else:
            delivered[0] += 1

    settings = {**settings, "enable.idempotence": True, "acks": "all", "linger.ms": 5}
    if call == "produce, error reports only":
        settings.update({"delivery.report.only.error": True, "on_delivery": on_delivery})
    native = None
    if call == NATIVE_BATCH:
        native, _ = native_produce.load(FENCED_ERRORS, PURGED)
        settings.update(native.plugin_settings(settings))
        batches = _arrow_batches(topic, messages)  # as the sink's encoders hand them over, made before timing
    producer = Producer(settings)
    attached = None if native is None else native.attach(producer)
    started = time.perf_counter()
    if call == "produce_batch":
        _produce_batches(producer, topic, messages, on_delivery)
    elif attached is not None:
        _produce_native(producer, attached, batches)
    else:
        callback = on_delivery if call == "produce" else None
        for count, (partition, key, value) in enumerate(messages):
            while True:
                try:
                    producer.produce(topic, value, key, partition, on_delivery=callback)
                    break
                except BufferError:
                    producer.poll(0.05)
            if count % 1000 == 0:
                producer.poll(0)
    remaining = producer.flush(120)
    elapsed = time.perf_counter() - started
    if attached is not None:
        taken = attached.take()
        delivered[0] += taken.acknowledged
        if taken.failed:
            failures.append(taken.failures)
    if call != "produce, error reports only" and delivered[0] != len(messages):
        raise RuntimeError(f"bare producer ({call}): {delivered[0]} of {len(messages)} acknowledged")
    if failures or remaining:
        raise RuntimeError(f"bare producer ({call}): {len(failures)} failed, {remaining} unacknowledged")
    return elapsed


def _produce_batches(producer, topic: str, messages: list[tuple[int, bytes | None, bytes | None]],
                     on_delivery, size: int = 10_000) -> None:
    """``produce_batch`` over runs of up to ``size`` messages per partition, as a task would hand over an
    Arrow batch's messages; the messages a full queue refused go again once it has room."""
    from confluent_kafka import KafkaError

    for start in range(0, len(messages), size):
        by_partition: dict[int, list[dict]] = {}
        for partition, key, value in messages[start:start + size]:
            by_partition.setdefault(partition, []).append({"key": key, "value": value})
        for partition, batch in by_partition.items():
            while batch:
                taken = producer.produce_batch(topic, batch, partition=partition, on_delivery=on_delivery)
                refused = [m for m in batch if "_error" in m] if taken < len(batch) else []
                for message in refused:
                    if message.pop("_error").code() != KafkaError._QUEUE_FULL:
                        raise RuntimeError("bare producer (produce_batch): a message was refused")
                if refused:
                    producer.poll(0.05)
                batch = refused
            producer.poll(0)


def _arrow_batches(topic: str, messages: list[tuple[int, bytes | None, bytes | None]],
                   size: int = 10_000) -> list[Messages]:
    """The messages as ``Messages`` of up to ``size`` each, keys and values in Arrow arrays."""
    return [Messages([topic], None, np.array([partition for partition, _, _ in run], dtype=np.int32),
                     pa.array([key for _, key, _ in run], pa.binary()),
                     pa.array([value for _, _, value in run], pa.binary()))
            for run in (messages[start:start + size] for start in range(0, len(messages), size))]


def _produce_native(producer, native, batches: list[Messages]) -> None:
    """Each batch to librdkafka in one call (the rest of a batch a full queue refused goes again once it has
    room), the deliveries counted by the extension's interceptor."""
    from confluent_kafka import KafkaError

    for messages in batches:
        batch, done = native.batch(messages), 0
        while done < len(messages):
            enqueued, refusal = batch.produce(done, len(messages))
            done += enqueued
            if refusal == KafkaError._QUEUE_FULL:
                producer.poll(0.05)
            elif refusal:
                raise RuntimeError(f"bare producer ({NATIVE_BATCH}): a message was refused ({KafkaError(refusal)})")
        producer.poll(0)


def _bare_producer_worker(args) -> tuple[float, float]:
    """The seconds of producing one share of the messages, and the CPU the process (librdkafka's threads
    included) spent on it."""
    options, path, part, parts, call = args
    table = read_feed(path)
    rows = table.num_rows
    mine = table.slice(part * rows // parts, (part + 1) * rows // parts - part * rows // parts)
    messages = routed_messages(mine, options)
    cpu = time.process_time()
    seconds = produce_all({"bootstrap.servers": options["kafka.bootstrap.servers"]}, topic_written(options),
                          messages, call)
    return seconds, time.process_time() - cpu


def processes_text(processes: int) -> str:
    """How a bare producer run's name ends: its process count."""
    return f"{processes} process{'es' * (processes > 1)}"


def bare_producer(bootstrap_servers: str, protocol: str, path: Path, rows: int, registry: str | None,
                  call: str, processes: int) -> Result:
    """The protocol's messages (the sink's, in the partitions its dispatcher gives them), encoded before timing,
    produced by bare loops making ``call`` (``limits.PRODUCE_CALLS``), in ``processes`` processes, each
    with its share of the rows, to a topic of ``TOPIC_PARTITIONS`` partitions."""
    options = sink_options(bootstrap_servers, unique_topic(f"bench-bare-{protocol}"), protocol=protocol,
                           schema_registry=registry)
    create_topic(bootstrap_servers, topic_written(options))
    context = multiprocessing.get_context("spawn")
    with context.Pool(processes) as pool:
        started, broker_before = time.perf_counter(), broker_cpu()  # the broker idles while the messages are encoded
        shares = pool.map(_bare_producer_worker, [(options, path, p, processes, call) for p in range(processes)])
        wall, broker_used = time.perf_counter() - started, broker_cpu() - broker_before
    delete_topic(bootstrap_servers, topic_written(options))
    used = {"Python": sum(cpu for _, cpu in shares), "JVM": 0.0, "broker": broker_used}
    return Result("e2e", f"{BARE} {protocol}, {PRODUCE_CALLS[call]}, {processes_text(processes)}",
                  rows, max(seconds for seconds, _ in shares), cpu=used,
                  note=f"produce time only (the whole step, encoding included, took {wall:.1f} s); CPU s while "
                       f"producing: Python and librdkafka {used['Python']:.1f}, broker {broker_used:.1f}")


def bare_producer_runs(bootstrap_servers: str, protocols: list[str], path: Path, rows: int,
                       registry: str | None, turns: int = 1, turned: tuple[str, ...] = ()) -> list[Result]:
    """The produce calls compared in one process on Canal-JSON's messages (one per row), or the first protocol's;
    then with the fastest call, every protocol in one process and in one per core. The limit is the faster.

    The protocols of ``turned``, whose limit a target compares with jobs taken in turns, have theirs taken so too
    (``turns`` times in rotation, each its median turn; ``in_turns``): the fastest of single runs, each varying by
    a quarter, would hold medians to a lucky run. Their comparison's runs then only choose the call."""
    first = "canal-json" if "canal-json" in protocols else protocols[0]
    first_turned = first in turned and turns > 1
    say(f"bare producer: the produce calls compared ({first}, one process)")
    compared = {call: bare_producer(bootstrap_servers, first, path, rows, registry, call, 1)
                for call in PRODUCE_CALLS}
    best = min(compared, key=lambda call: compared[call].seconds)
    results = [replace(r, name=r.name + CHOOSING) if first_turned else r for r in compared.values()]
    for protocol in protocols:
        runs = {f"{protocol}, {processes_text(processes)}": functools.partial(
            bare_producer, bootstrap_servers, protocol, path, rows, registry, best, processes)
            for processes in sorted({1, CORES})
            if not (protocol == first and processes == 1 and not first_turned)}  # else measured among the calls
        results += in_turns(runs, turns if protocol in turned else 1, "bare producer limit")
    return results


def bare_limit(results: list[Result], protocol: str, section: str = "e2e") -> Result | None:
    """The fastest bare producer run of ``protocol`` in ``section`` (of those that may be limits): the output
    limit."""
    return max((r for r in results if r.section == section and r.name.startswith(f"{BARE} {protocol},")
                and not r.name.endswith(CHOOSING)), key=lambda r: r.rows_per_second, default=None)
