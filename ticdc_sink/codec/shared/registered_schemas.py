"""What the two schema registries' clients share (Confluent's ``schema_registry.py``, AWS Glue's
``glue_schema_registry.py``): the codecs use either through one small interface, so they never ask which."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Hashable

from ...errors import TiCDCSinkError

# A request's attempts share broker-timeout-ms: the first and this many retries.
DEFAULT_RETRIES = 2


def attempt_seconds(broker_timeout_ms: int, retries: int = DEFAULT_RETRIES) -> float:
    """The time of one attempt of a registry request, so that all of them fit in ``broker-timeout-ms``."""
    return broker_timeout_ms / 1000 / (retries + 1)


class SchemaRegistryFailure(TiCDCSinkError):
    """The registry refused a schema or could not be reached; the message is the registry's own.

    ``of_one_message``: the registry answered, and lacks the schema id one message names; any other failure
    (a refused login, an untrusted certificate, no answer) stops every message alike."""

    def __init__(self, message: str, of_one_message: bool = False):
        super().__init__(message)
        self.of_one_message = of_one_message


class RegisteredSchemas(ABC):
    """A registry's client as the codecs use it: a schema registered under a name gives the header of the
    messages written in it (``register``), and a message's header gives the schema it was written in (``split``,
    then ``schema_text``).

    Each schema is registered, and each id looked up, once per client: a codec
    builds its client when it first needs the registry, on the executor, and
    closes it at the end of the task, so a task asks the registry once per
    table and topic however many batches it writes.
    """

    def __init__(self):
        self._headers: dict[tuple[str, str], bytes] = {}
        self._schemas: dict[Hashable, str] = {}

    def register(self, name: str, schema_text: str, what: str) -> bytes:
        """The header of messages in ``schema_text``, registered under ``name`` the first time it is seen;
        ``what`` says which schema it is, for errors."""
        key = (name, schema_text)
        if key not in self._headers:
            self._headers[key] = self._register(name, schema_text, what)
        return self._headers[key]

    def schema_text(self, schema_id: Hashable) -> str:
        """The schema registered under ``schema_id`` (as ``split`` gives it)."""
        if schema_id not in self._schemas:
            self._schemas[schema_id] = self._look_up(schema_id)
        return self._schemas[schema_id]

    @abstractmethod
    def split(self, data: bytes) -> tuple[Hashable, bytes]:
        """(schema id, Avro record) of a key or value in this registry's wire format."""

    @property
    @abstractmethod
    def where(self) -> str:
        """The registry as errors name it, without credentials."""

    @abstractmethod
    def check_reachable(self) -> None:
        """One request, so that a wrong address or credentials fail on the driver before any task."""

    @abstractmethod
    def close(self) -> None:
        """Release the client's connections."""

    @abstractmethod
    def _register(self, name: str, schema_text: str, what: str) -> bytes:
        """Register the schema (no cache) and return its header."""

    @abstractmethod
    def _look_up(self, schema_id: Hashable) -> str:
        """Fetch a schema by id (no cache)."""
