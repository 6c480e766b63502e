"""Secrets masked wherever the sink shows an option: errors, log lines and reprs.

librdkafka needs the real passwords, so ``SinkConfig`` keeps them; what is
shown to people (and so reaches logs, Spark's UI and tracebacks) goes through
``mask``.  The rules lean towards masking: a hidden user name costs less than
a shown password.
"""

from __future__ import annotations

import re
from urllib.parse import unquote_plus

MASK = "***"

# Matched anywhere in a name read in lower case with '-' and '_' as '.'.  Spark's
# spark.redaction.regex words, plus the librdkafka and schema-registry settings
# that hold a secret without saying so (ssl.key.pem, sasl.oauthbearer.config,
# basic.auth.user.info, Java's sasl.jaas.config).
_SECRET_NAME = re.compile(
    r"pass(word|wd)|secret|token|credential|access\.?key|key\.pem|user\.?info|oauthbearer\.config|jaas\.config"
)
# Names whose values are URLs even when written without a scheme (sink-uri, schema-registry).
_URL_NAME = re.compile(r"(uri|url|registry)$")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
_AUTHORITY_END = re.compile(r"[/?#]")
_NEXT_URL = re.compile(r",(?=[A-Za-z][A-Za-z0-9+.\-]*://)")  # URLs joined by commas (schema-registry)


def _normal(name: str) -> str:
    return name.lower().replace("-", ".").replace("_", ".")


def is_secret_name(name: str) -> bool:
    """Whether the option, ``kafka.*`` setting or sink-uri parameter ``name`` holds a secret.

    True when the name says password (or passwd), secret, token, credential,
    access key, key.pem, user info, oauthbearer.config or jaas.config, in any
    case and with '-', '_' or '.' between words.
    """
    return _SECRET_NAME.search(_normal(name)) is not None


def mask(name: str, value):
    """``value`` of ``name`` as it may be shown: a secret as ``***``, a URL without its credentials."""
    if value is None:
        return None
    if is_secret_name(name):
        return MASK
    if isinstance(value, str) and (_URL_NAME.search(_normal(name)) or _SCHEME.match(value)):
        return mask_url(value)
    return value


def mask_url(url: str) -> str:
    """``url`` with the password of its user info and its secret query parameters masked.

    The authority ends at the first '/', '?' or '#', as urllib reads it (and so
    as the sink finds a sink-uri's brokers); ``user:password@`` keeps the user,
    a user info without ':' (a bare token) is masked whole.  Several URLs
    joined by commas are masked one by one.
    """
    urls = _NEXT_URL.split(url)
    if len(urls) > 1:
        return ",".join(mask_url(one) for one in urls)
    scheme = _SCHEME.match(url)
    start = scheme.end() if scheme else 0
    end = _AUTHORITY_END.search(url, start)
    end = end.start() if end else len(url)
    authority = url[start:end]
    userinfo, at, hosts = authority.rpartition("@")
    if at:
        user, colon, _ = userinfo.partition(":")
        authority = f"{user}:{MASK}@{hosts}" if colon else f"{MASK}@{hosts}"
    path, question, query = url[end:].partition("?")
    return url[:start] + authority + path + question + (_mask_query(query) if question else "")


def _mask_query(query: str) -> str:
    """Each ``name=value`` of a query through ``mask``; parameters that show no secret stay as written."""
    pairs = []
    for pair in query.split("&"):
        name, _, value = pair.partition("=")
        value = unquote_plus(value)
        shown = mask(unquote_plus(name), value)
        pairs.append(pair if shown == value else f"{name}={shown}")
    return "&".join(pairs)
