"""The sink's errors: each one names what the user must look at to fix it."""

from __future__ import annotations

from .redact import mask


class TiCDCSinkError(Exception):
    """Base class of every error the sink raises on purpose."""


class ConfigError(TiCDCSinkError, ValueError):
    """A bad option: names the option, the value given and what is allowed.

    A value that holds a secret is masked (``redact.mask``), in the message and in
    ``value``, since errors reach logs and Spark's UI; an ``allowed`` text that
    quotes another value masks it itself.
    """

    def __init__(self, option: str, value, allowed: str):
        value = mask(option, value)
        self.option, self.value, self.allowed = option, value, allowed
        if value is None:
            super().__init__(f"option {option!r} is not set: {allowed}")
        else:
            super().__init__(f"option {option!r}: bad value {value!r}: {allowed}")


class UnknownOptionError(ConfigError):
    """An option nothing in the sink knows (a typo, most often): named with the nearest known one; its value says
    nothing about the fix, so it is left out."""

    def __init__(self, option: str, value, suggestion: str):
        self.option, self.value, self.allowed = option, mask(option, value), suggestion
        ValueError.__init__(self, f"unknown option {option!r}; {suggestion}")


class ContractError(TiCDCSinkError, ValueError):
    """A row that breaks the input contract: names the column, the value and the row's key."""

    def __init__(self, column: str, value, row_key: str, problem: str):
        self.column, self.value, self.row_key, self.problem = column, value, row_key, problem
        super().__init__(f"column {column!r}: value {value!r} in row {row_key}: {problem}")


class MessageTooLargeError(TiCDCSinkError):
    """An encoded event larger than ``max-message-bytes`` (TiCDC's ErrMessageTooLarge)."""


class DeliveryError(TiCDCSinkError):
    """The broker did not acknowledge every message: the task must not report success."""


class TaskTimeoutError(DeliveryError):
    """A task outlived its Kafka transaction (``task-timeout-ms``)."""


class InputCutShortError(TiCDCSinkError):
    """Spark stopped feeding a task (an operator before the sink failed): the attempt must not commit."""


class ReadError(TiCDCSinkError):
    """A message a read cannot use: names its topic, partition and offset, and why."""
