"""Every Kafka client the sink makes, made here, so that each gets its settings the same way."""

from __future__ import annotations

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient


def producer(settings: dict[str, object]) -> Producer:
    return Producer(settings)


def consumer(settings: dict[str, object]) -> Consumer:
    return Consumer(settings)


def admin(settings: dict[str, object]) -> AdminClient:
    return AdminClient(settings)
