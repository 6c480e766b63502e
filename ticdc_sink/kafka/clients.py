"""Every Kafka client the sink makes, made here: each gets its settings as librdkafka takes them, the token
callback imported in place of its name (``token_callback.py``), its tokens bounded by ``within`` (the caller's
``broker-timeout-ms``, or ``tail``'s ``--timeout-seconds``)."""

from __future__ import annotations

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from .token_callback import DEFAULT_WITHIN, Within, with_callback


def producer(settings: dict[str, object], within: Within = DEFAULT_WITHIN) -> Producer:
    return Producer(with_callback(settings, within))


def consumer(settings: dict[str, object], within: Within = DEFAULT_WITHIN) -> Consumer:
    return Consumer(with_callback(settings, within))


def admin(settings: dict[str, object], within: Within = DEFAULT_WITHIN) -> AdminClient:
    return AdminClient(with_callback(settings, within))
