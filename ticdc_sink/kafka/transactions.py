"""A producer whose messages become visible all at once, with a record of what it committed (exactly-once).

Each task and each driver commit is one Kafka transaction whose
``transactional.id`` survives restarts, so that a new attempt fences the old
one; the transaction also commits the marker of its batch (``markers.py``).
"""

from __future__ import annotations

import logging
import time

from confluent_kafka import KafkaException

from ..config.sink import SinkConfig
from ..errors import DeliveryError, TaskTimeoutError
from .markers import Marker, committed_marker, ensure_marker_topic, marker_consumer, marker_positions
from .producer import FENCED_ERRORS, FENCED_TEXTS, KafkaOutput

log = logging.getLogger(__name__)


class TransactionalOutput(KafkaOutput):
    """A producer whose messages become visible all at once, with a record of what it committed.

    Every transaction also commits the offsets of a consumer group of the sink
    (the marker group) on the marker topic: the batch id + 1 with the watermark
    (the driver) or the number of input rows (a task).  A later attempt with the
    same ``transactional.id`` first fences the earlier one (its open transaction
    is aborted), then reads that marker to learn what was committed before it.
    """

    def __init__(self, config: SinkConfig, transactional_id: str, marker_group: str):
        settings: dict[str, object] = {"transactional.id": transactional_id,
                                       "transaction.timeout.ms": config.task_timeout_ms}
        if "message.timeout.ms" not in config.kafka:  # librdkafka wants it within the transaction timeout
            settings["message.timeout.ms"] = min(config.broker_timeout_ms, config.task_timeout_ms)
        super().__init__(config, settings)
        self.transactional_id, self.marker_group = transactional_id, marker_group
        self._started = time.monotonic()
        self._group_metadata = None
        self._open = False

    def start(self) -> Marker:
        """Fence earlier attempts; return what the marker group recorded."""
        ensure_marker_topic(self)
        self._transaction_call("init_transactions", self._producer.init_transactions, self._timeout)
        consumer = marker_consumer(self, self.marker_group)
        try:
            marker = committed_marker(self, consumer, self.marker_group)
            self._group_metadata = consumer.consumer_group_metadata()
        finally:
            consumer.close()
        return marker

    def fence(self, timeout_s: float) -> None:
        """Abort the transaction an earlier attempt with this ``transactional.id`` left open."""
        self._transaction_call("init_transactions", self._producer.init_transactions, timeout_s)

    def begin(self) -> None:
        self._transaction_call("begin_transaction", self._producer.begin_transaction)
        self._open = True

    def check_deadline(self) -> None:
        """Fail before the broker aborts a transaction that outlived ``transaction.timeout.ms``."""
        elapsed_ms = (time.monotonic() - self._started) * 1000
        if elapsed_ms > self.config.task_timeout_ms:
            raise TaskTimeoutError(
                f"the task has run {elapsed_ms / 1000:.0f} s, longer than task-timeout-ms="
                f"{self.config.task_timeout_ms}, the Kafka transaction timeout: the broker aborts such a "
                "transaction, so its rows are not committed. Raise task-timeout-ms (at most the brokers' "
                "transaction.max.timeout.ms) or give the query more, smaller partitions"
            )

    def commit(self, batch_id: int, watermark: int | None = None, input_rows: int | None = None) -> None:
        """Commit every produced message together with the marker of ``batch_id`` (and its watermark or rows)."""
        self.flush()
        self.check_deadline()
        self._transaction_call("send_offsets_to_transaction", self._producer.send_offsets_to_transaction,
                               marker_positions(self.config, batch_id, watermark, input_rows),
                               self._group_metadata, self._timeout)
        self._transaction_call("commit_transaction", self._producer.commit_transaction, self._timeout)
        self._open = False

    def discard(self) -> None:
        """Abort the open transaction on purpose: none of its messages becomes visible."""
        self._transaction_call("abort_transaction", self._producer.abort_transaction, self._timeout)
        self._open = False

    def close(self) -> None:
        """Abort an open transaction (best effort: the next attempt fences it anyway).

        A fenced one was aborted by the newer attempt already.
        """
        if self._open and self._fenced_by is not None:
            self._open = False
        if self._open:
            self._open = False
            try:
                self._producer.abort_transaction(min(self._timeout, 10))
            except KafkaException as e:
                log.warning("could not abort the transaction of %s: %s", self.transactional_id, e.args[0].str())
        super().close()

    @property
    def _timeout(self) -> float:
        return self.config.broker_timeout_ms / 1000

    def _raise_if_failed(self) -> None:
        if self._fenced_by is not None:  # a refused produce is the same takeover as a fenced transaction call
            self._raise_taken_over("produce", self._fenced_by)
        failure = self._log.transaction_failure  # this object's one transaction: it is never reused
        if failure is not None:
            if any(text in failure for text in FENCED_TEXTS):
                self._raise_taken_over("the transaction", failure)
            unacknowledged = (f"{self._failed} message(s) were not acknowledged ({self._failure_reasons}), and "
                              if self._failed else "")
            raise DeliveryError(f"{unacknowledged}the transaction of transactional.id {self.transactional_id!r} "
                                f"failed on {self.config.bootstrap_servers}, so none of its messages is committed: "
                                f"{failure}{self._client_errors.note()}")
        super()._raise_if_failed()

    def _raise_taken_over(self, what: str, detail: str) -> None:
        self.check_deadline()  # a timed-out transaction also shows up as fenced
        raise DeliveryError(f"{what}: transactional.id {self.transactional_id!r} was taken over by a newer "
                            f"attempt of this task, so this attempt stops without committing ({detail})")

    def _transaction_call(self, what: str, call, *args) -> None:
        try:
            call(*args)
        except KafkaException as e:
            self._take_native()  # the delivery reports the call served (its flush, an abort's purge)
            error = e.args[0]
            if error.code() in FENCED_ERRORS:
                self._raise_taken_over(what, error.str())
            raise DeliveryError(f"{what} failed on {self.config.bootstrap_servers} for transactional.id "
                                f"{self.transactional_id!r}: {error.str()}{self._client_errors.note()}") from None
        self._take_native()
