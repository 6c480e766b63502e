"""The bare limit of the output path: the sink's own messages, encoded before timing, produced by bare
confluent-kafka loops (``produce_all``), by each of the produce calls."""

from __future__ import annotations

import time


PRODUCE_CALLS = {  # the ways confluent-kafka takes messages, each timed by ``produce_all``
    "produce": "produce() per message, a delivery callback each",
    "produce, error reports only": "produce() per message, delivery reports of failures only",
    "produce_batch": "produce_batch() per partition, a dict per message",
}


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
    producer = Producer(settings)
    started = time.perf_counter()
    if call == "produce_batch":
        _produce_batches(producer, topic, messages, on_delivery)
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

