"""``kafka.oauth_cb``: an OAUTHBEARER token callback (AWS MSK IAM, any token provider), named ``module:function``.

An option is a string and confluent-kafka's ``oauth_cb`` a Python callable, so the option names one and each
process imports it where it makes a Kafka client: the driver, and every executor's Python worker, which gets the
name with the other settings (nothing callable is pickled).  The import is cached per process.

confluent-kafka calls the callable with ``sasl.oauthbearer.config`` from a librdkafka thread as a client is made
(the constructor waits up to 10 s for that token) and again before the token expires.  What the callable raises
there it drops, telling librdkafka only "OAuth callback raised exception".  So a client's first token is fetched
here, for the caller, where a failure is one line at once instead of a 10 s wait, and a later failure's reason is
kept for the error the expired token leads to.  Every call, the driver's check's too, is bounded (``Within``: the
sink's ``broker-timeout-ms``, ``tail``'s ``--timeout-seconds``): a callable that never returns (a token service
that does not answer, with no timeout of its own) fails in one line instead of holding the client, and the
process, forever.  It runs in a daemon thread of its own, which is left behind where it does not return.  No error
or log line holds a token.
"""

from __future__ import annotations

import functools
import importlib
import threading
import time
from dataclasses import dataclass
from typing import Callable, Mapping

from ..config.sink import SinkConfig
from ..errors import ConfigError

SETTING = "oauth_cb"
OPTION = f"kafka.{SETTING}"
_CONFIG = "sasl.oauthbearer.config"  # what confluent-kafka hands the callable
_FORM = "write module:function, e.g. my_company.kafka_auth:msk_token"
_RESULT = "(token, expiry_epoch_seconds) or (token, expiry, principal, extensions)"
# What confluent-kafka tells librdkafka when the callable raised (oauth_cb in its confluent_kafka.c).
_DROPPED = "OAuth callback raised exception"
# An expiry beyond this (the year 5138) is milliseconds, as MSKAuthTokenProvider gives it, not seconds.
_LAST_SECOND = 1e11

_last_failure: str | None = None  # why this process's latest token refresh failed, until one succeeds


@dataclass(frozen=True)
class Within:
    """How long the callable may take to give a token, and the setting that says so (for the error)."""

    seconds: float
    setting: str  # as the user gives it: "broker-timeout-ms=30000", "--timeout-seconds=10"


def broker_timeout(milliseconds: int) -> Within:
    """The bound of the sink's clients: its ``broker-timeout-ms``."""
    return Within(milliseconds / 1000, f"broker-timeout-ms={milliseconds}")


DEFAULT_WITHIN = broker_timeout(SinkConfig.broker_timeout_ms)  # where no broker-timeout-ms is given


def check(settings: Mapping[str, str], prefix: str = "kafka.", within: Within = DEFAULT_WITHIN) -> None:
    """Refuse a token callback that cannot work before any client is made: one that is not importable, raises,
    returns no token or none ``within`` its bound, or that librdkafka would never call (every client would wait
    10 s for its token).

    ``prefix`` is how the settings are given: ``kafka.`` (options) or ``-X `` (the command line).
    """
    spec = settings.get(SETTING)
    if spec is None:
        return
    option = prefix + SETTING
    if settings.get("sasl.mechanism") != "OAUTHBEARER" \
            or str(settings.get("security.protocol", "")).lower() not in ("sasl_ssl", "sasl_plaintext"):
        raise ConfigError(option, spec, f"librdkafka asks for a token only with {prefix}security.protocol=SASL_SSL "
                                        f"(or SASL_PLAINTEXT) and {prefix}sasl.mechanism=OAUTHBEARER")
    _fetch_within(spec, settings.get(_CONFIG), option, within)


def with_callback(settings: dict[str, object], within: Within = DEFAULT_WITHIN) -> dict[str, object]:
    """``settings`` as a client takes them: the callable their ``oauth_cb`` names in its place, each token it gives
    bounded by ``within``."""
    spec = settings.get(SETTING)
    if not isinstance(spec, str):
        return settings
    return {**settings, SETTING: TokenCallback(spec, settings.get(_CONFIG), within)}


class TokenCallback:
    """The named callable as one client's ``oauth_cb``: its first token fetched already, every token checked and
    bounded, and the reason of a failed refresh kept."""

    def __init__(self, spec: str, oauth_config: str | None, within: Within = DEFAULT_WITHIN):
        self.spec = spec
        self.within = within
        self._first: tuple | None = _fetch_within(spec, oauth_config, OPTION, within)

    def __call__(self, oauth_config: str | None) -> tuple:
        global _last_failure
        if self._first is not None:
            token, self._first = self._first, None
            return token
        try:
            token = _fetch_within(self.spec, oauth_config, OPTION, self.within)
        except ConfigError as e:
            _last_failure = f"{OPTION} {self.spec!r}: {e.allowed}"
            raise
        _last_failure = None
        return token

    def __repr__(self) -> str:  # never the token it holds
        return f"TokenCallback({self.spec!r})"


def explain(client_error: str) -> str:
    """A client error with the reason confluent-kafka dropped from it: what the token callback raised."""
    if _last_failure is None or _DROPPED not in client_error:
        return client_error
    return client_error.replace(_DROPPED, _last_failure)


def failure_note() -> str:
    """The failed token refresh behind an error that does not show client errors, as its tail (or empty)."""
    return f" (the token callback failed: {_last_failure})" if _last_failure is not None else ""


@functools.cache
def _imported(spec: str) -> Callable:
    """The callable ``module:attribute[.attribute]`` names, imported once per process; ValueError says why not."""
    module_name, colon, path = spec.partition(":")
    if not colon or not module_name or not path:
        raise ValueError(_FORM)
    try:
        target = importlib.import_module(module_name)
    except Exception as e:  # not only ImportError: the module's own code may fail
        raise ValueError(f"cannot import module {module_name!r} ({_one_line(e)}): install it where Spark's Python "
                         "runs, on the driver and every executor") from None
    for name in path.split("."):
        try:
            target = getattr(target, name)
        except AttributeError:
            raise ValueError(f"module {module_name!r} has no attribute {path!r}") from None
    if not callable(target):
        raise ValueError(f"{path} is a {type(target).__name__}, not a callable")
    return target


def _fetch_within(spec: str, oauth_config: str | None, option: str, within: Within) -> tuple:
    """``_fetch`` in a daemon thread of its own, waited for ``within`` its bound: a callable (or a module import)
    that does not return by then is left running there, and refused."""
    outcome: list = []

    def fetch() -> None:
        try:
            outcome.append(_fetch(spec, oauth_config, option))
        except BaseException as e:  # given to the caller below
            outcome.append(e)

    thread = threading.Thread(target=fetch, name=f"{OPTION} {spec}", daemon=True)
    thread.start()
    thread.join(within.seconds)
    if not outcome:
        raise ConfigError(option, spec, f"no token within {within.setting}")
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


def _fetch(spec: str, oauth_config: str | None, option: str) -> tuple:
    """A token from the callable ``spec`` names, checked as confluent-kafka would take it."""
    try:
        function = _imported(spec.strip())
    except ValueError as e:
        raise ConfigError(option, spec, str(e)) from None
    try:
        result = function(oauth_config)
    except Exception as e:
        raise ConfigError(option, spec, f"calling it raised {_one_line(e)}") from None
    problem = _problem(result)
    if problem is not None:
        raise ConfigError(option, spec, problem)
    return result


def _problem(result) -> str | None:
    """What confluent-kafka or librdkafka would refuse in ``result``, in words that never show the token."""
    if not isinstance(result, tuple) or len(result) not in (2, 4):
        size = f" of {len(result)}" if isinstance(result, (tuple, list)) else ""
        return f"it returned a {type(result).__name__}{size}, not {_RESULT}"
    token, expiry = result[:2]
    if not isinstance(token, str) or not token:
        return "its token is not a non-empty str"
    if isinstance(expiry, bool) or not isinstance(expiry, (int, float)):
        return f"its expiry is a {type(expiry).__name__}, not seconds since the epoch"
    if expiry > _LAST_SECOND:
        return (f"its expiry {expiry:.0f} is in milliseconds (MSKAuthTokenProvider's is: divide it by 1000), "
                "not seconds since the epoch")
    if expiry <= time.time():
        return f"its token expired {time.time() - expiry:.0f} s ago"
    if len(result) == 4 and (not isinstance(result[2], str) or not isinstance(result[3], dict)):
        return f"it returned (token, expiry, {type(result[2]).__name__}, {type(result[3]).__name__}), not {_RESULT}"
    return None


def _one_line(error: Exception) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
