"""Every Kafka client the sink makes, made here: each gets its settings as librdkafka takes them, the token
callback imported in place of its name (``token_callback.py``)."""

from __future__ import annotations

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from .token_callback import with_callback


def producer(settings: dict[str, object]) -> Producer:
    return Producer(with_callback(settings))


def consumer(settings: dict[str, object]) -> Consumer:
    return Consumer(with_callback(settings))


def admin(settings: dict[str, object]) -> AdminClient:
    return AdminClient(with_callback(settings))
