"""librdkafka's log lines and client errors: one line per distinct problem, kept for the error a task raises."""

from __future__ import annotations

import logging
import re
import time
from typing import Mapping

from confluent_kafka import KafkaError

from .connection_errors import Problem, classify, explained_certificate
from .token_callback import explain

# librdkafka logs a failing connection again on every retry; one line per problem is enough.
_REPEAT_AFTER_SECONDS = 300


class _OncePerProblem(logging.Filter):
    """Lets one line per distinct librdkafka problem through, again only after a quiet spell.

    Lines that differ only in numbers (ports, milliseconds, client instance) are the same problem.
    """

    def __init__(self) -> None:
        super().__init__()
        self._last_seen: dict[tuple[int, str], float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        problem = (record.levelno, re.sub(r"\d+", "#", record.getMessage()))
        now = time.monotonic()
        last = self._last_seen.get(problem)
        if len(self._last_seen) > 1000:
            self._last_seen.clear()
        self._last_seen[problem] = now
        return last is None or now - last > _REPEAT_AFTER_SECONDS


# librdkafka's own log lines (connection failures, retries) go to Python logging, not stderr.
LIBRDKAFKA_LOG = logging.getLogger("ticdc_sink.librdkafka")
LIBRDKAFKA_LOG.addFilter(_OncePerProblem())


class ProducerLog:
    """One producer's librdkafka log lines, passed on to ``LIBRDKAFKA_LOG``, keeping its fatal error's line and
    the first failure of its transaction.

    confluent-kafka raises a fatal error from the poll or flush that served it, but delivery reports served
    after it run with that exception pending and can replace it (a SystemError, an AttributeError, or no
    exception at all); librdkafka logs the error first, so the line is the reliable record.  A transaction
    that fails (a partition the broker would not add to it, say) purges its queued messages, whose delivery
    reports then say only "Purged in queue": the cause is in the log line.
    """

    def __init__(self, errors: "ClientErrors | None" = None) -> None:
        self.fatal: str | None = None
        self.transaction_failure: str | None = None
        self._errors = errors  # the producer's client errors, which learn from its log lines too

    def log(self, level: int, template: str, facility: str, client: str, line: str) -> None:
        text = line.split("]: ", 1)[-1]  # without the "[thrd:main]" prefix
        if facility == "FATAL" and self.fatal is None:
            self.fatal = text
        if facility == "TXNERR" and self.transaction_failure is None:
            self.transaction_failure = re.sub(r"^Current transaction failed in state \w+: ", "", text)
        (self._errors or LIBRDKAFKA_LOG).log(level, template, facility, client, line)


# The time and state librdkafka adds to a failed connection (and the count of the same error it held back): the
# same failure differs in them at every retry.
_ATTEMPT = re.compile(r" \(after \d+ms in state (\w+)(?:, \d+ identical error\(s\) suppressed)?\)$")
_KEPT = 5  # distinct errors kept


class ClientErrors:
    """librdkafka's client errors (its error_cb), kept for one line instead of a log line per retry.

    Its count of brokers down is left out: it says "1/1 brokers are down" and,
    as the client tries again, "0/1 brokers are down", which contradicts the
    first and says nothing the error naming the brokers does not.

    A connection that a wrong security setting breaks (an untrusted certificate, a refused login or client
    certificate, TLS spoken to a plaintext port) is one text per broker that says which setting to fix, however
    many ways librdkafka words it (``connection_errors.py``); ``named`` goes before a setting's name in it
    (``kafka.`` for the sink's options, ``-X `` for the command line's).  The client's log lines are read too:
    librdkafka logs a TLS listener hanging up on a plaintext client only as a disconnect, not as an error.
    """

    def __init__(self, named: str = "kafka.") -> None:
        self.distinct: list[str] = []
        self._named = named
        self._untrusted: dict[str, Problem] = {}  # the text of an untrusted certificate -> its problem
        self._logged: list[str] = []  # problems only the log lines told

    def __call__(self, error) -> None:
        if error.code() == KafkaError._ALL_BROKERS_DOWN:
            return
        text = self._text(error.str())
        if text not in self.distinct and len(self.distinct) < _KEPT:
            self.distinct.append(text)

    def log(self, level: int, template: str, facility: str, client: str, line: str) -> None:
        """A librdkafka log line (confluent-kafka's ``logger``): passed on to ``LIBRDKAFKA_LOG``; a failed
        connection's line kept where it shows a wrong security setting."""
        if facility == "FAIL":
            failure = line.split("]: ", 1)[-1]  # without the "[thrd:...]" prefix
            state = _ATTEMPT.search(failure)
            if classify(_ATTEMPT.sub("", failure), state and state.group(1), self._named) is not None:
                text = self._text(failure)
                if text not in self._logged and len(self._logged) < _KEPT:
                    self._logged.append(text)
        LIBRDKAFKA_LOG.log(level, template, facility, client, line)

    def _text(self, error: str) -> str:
        state = _ATTEMPT.search(error)
        text = explain(_ATTEMPT.sub("", error))
        problem = classify(text, state and state.group(1), self._named)
        if problem is None:
            return text
        if problem.address is None:
            return problem.text
        text = explained_certificate(problem, None, self._named)
        self._untrusted[text] = problem
        return text

    def cause(self, error, settings: Mapping[str, object] | None = None) -> str:
        """What a request that failed ran into: the client's own errors (a refused connection, a failed login,
        which say what to fix), else the request's error.  ``settings``, the client's librdkafka settings, let
        an untrusted certificate's line say why it is not trusted (asking the broker with the client's CA)."""
        texts = self.distinct + [text for text in self._logged if text not in self.distinct]
        texts = [explained_certificate(self._untrusted[text], settings, self._named)
                 if text in self._untrusted and settings is not None else text for text in texts]
        return "; ".join(texts) or (error.str() if isinstance(error, KafkaError) else str(error))

    @property
    def settings(self) -> dict[str, object]:
        """Client settings that route librdkafka's errors here and its logs through here to the core's logger
        (once per problem)."""
        return {"error_cb": self, "logger": self}

    def note(self) -> str:
        """The errors, as the tail of a failure's one line (empty when there were none)."""
        return f" (client errors: {'; '.join(self.distinct)})" if self.distinct else ""
