"""Token callbacks the tests name in ``kafka.oauth_cb`` as ``tests.token_callbacks:<name>``: Spark's Python workers
import them too (the repository is on their path, from the editable install).

Their tokens say they are the tests' own: the tests look for them in logs and errors, where no token may show.
"""

from __future__ import annotations

import os
import threading
import time

TOKEN = "test-token-4719-never-shown"
NOT_CALLABLE = "a string, not a function"
calls: list[str | None] = []  # the sasl.oauthbearer.config of every call, in this process
broken = False  # set by a test: calls from then on raise, as a token provider whose credentials ran out
stalled = False  # set by a test: calls from then on do not return, as a token service that never answers
release = threading.Event()  # set as each test ends: the calls it left waiting return


def _stall() -> None:
    """Wait as a token service that does not answer, and has no timeout of its own: until the test ends (at most
    ten minutes)."""
    release.wait(600)


def _token_for(oauth_config: str | None, lifetime: float) -> tuple[str, float]:
    calls.append(oauth_config)
    if stalled:
        _stall()
    if broken:
        raise RuntimeError("the credentials ran out")
    return TOKEN, time.time() + lifetime


def token(oauth_config: str | None) -> tuple[str, float]:
    return _token_for(oauth_config, 3600)


def short_lived(oauth_config: str | None) -> tuple[str, float]:
    """A token that librdkafka refreshes within a second or two."""
    return _token_for(oauth_config, 2)


def record_caller(oauth_config: str | None) -> tuple[str, float]:
    """Appends who called to the file ``sasl.oauthbearer.config`` names (``file=PATH``): ``task`` within a Spark
    task, else ``planning`` (the options' check)."""
    from pyspark import TaskContext

    path = dict(pair.split("=", 1) for pair in (oauth_config or "").split(","))["file"]
    with open(path, "a") as calls_file:
        calls_file.write(f"{os.getpid()} {'task' if TaskContext.get() is not None else 'planning'}\n")
    return TOKEN, time.time() + 3600


def raises(oauth_config: str | None) -> tuple[str, float]:
    raise RuntimeError("Unable to locate credentials\n(the test's own)")


def hangs(oauth_config: str | None) -> tuple[str, float]:
    """A callable that never returns (a token service that does not answer): the test's end releases it."""
    calls.append(oauth_config)
    _stall()
    return TOKEN, time.time() + 3600


def hangs_in_tasks(oauth_config: str | None) -> tuple[str, float]:
    """A token for the options' check, none in a Spark task: a node whose token service does not answer.  The
    executor's call sleeps ten minutes (no test in that process releases it)."""
    from pyspark import TaskContext

    if TaskContext.get() is not None:
        time.sleep(600)
    return TOKEN, time.time() + 3600


def token_only(oauth_config: str | None) -> str:
    return TOKEN


def milliseconds(oauth_config: str | None) -> tuple[str, int]:
    """What MSKAuthTokenProvider.generate_auth_token gives: the expiry in milliseconds."""
    return TOKEN, int(time.time() * 1000) + 900_000


def expired(oauth_config: str | None) -> tuple[str, float]:
    return TOKEN, time.time() - 60


class Provider:
    @staticmethod
    def token(oauth_config: str | None) -> tuple[str, float, str, dict]:
        return TOKEN, time.time() + 3600, "ticdc-sink", {"traceId": "1"}
