"""A message as confluent-kafka's consumer hands it to the reader: what the reader's unit tests feed a task."""

from __future__ import annotations


class Message:
    def __init__(self, key: bytes | None, value: bytes | None, offset: int):
        self._key, self._value, self._offset = key, value, offset

    def key(self):
        return self._key

    def value(self):
        return self._value

    def offset(self):
        return self._offset
