"""The Schema Registry double's error answers, with the codes and wording of the registry's Errors.java.

Clients and tests compare the codes and the messages, so each is written here once. Whatever rule fails
raises a ``RegistryError``, and the HTTP layer turns it into ``{"error_code": ..., "message": ...}``.
"""

from __future__ import annotations

SUBJECT_NOT_FOUND = 40401
VERSION_NOT_FOUND = 40402
SCHEMA_NOT_FOUND = 40403
SUBJECT_SOFT_DELETED = 40404
SUBJECT_NOT_SOFT_DELETED = 40405
VERSION_SOFT_DELETED = 40406
VERSION_NOT_SOFT_DELETED = 40407
SUBJECT_COMPATIBILITY_NOT_CONFIGURED = 40408
INVALID_SCHEMA = 42201
INVALID_VERSION = 42202
INVALID_COMPATIBILITY = 42203
REFERENCE_EXISTS = 42206


class RegistryError(Exception):
    """An answer other than 200: ``http_status`` is the response's status, ``error_code`` and ``message`` its body."""

    def __init__(self, http_status: int, error_code: int, message: str):
        super().__init__(message)
        self.http_status = http_status
        self.error_code = error_code
        self.message = message


def subject_not_found(subject) -> RegistryError:
    return RegistryError(404, SUBJECT_NOT_FOUND, f"Subject '{subject}' not found.")


def version_not_found(version) -> RegistryError:
    return RegistryError(404, VERSION_NOT_FOUND, f"Version {version} not found.")


def invalid_schema(detail) -> RegistryError:
    return RegistryError(422, INVALID_SCHEMA, f"Invalid schema: {detail}")


def reference_exists(subject, version) -> RegistryError:
    return RegistryError(422, REFERENCE_EXISTS,
                         f"One or more references exist to the schema {{subject={subject},version={version}}}")


def no_such_resource() -> RegistryError:
    """What the registry's REST layer answers for a path it does not serve."""
    return RegistryError(404, 404, "HTTP 404 Not Found")


def method_not_allowed() -> RegistryError:
    return RegistryError(405, 405, "HTTP 405 Method Not Allowed")
