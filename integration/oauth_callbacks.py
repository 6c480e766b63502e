"""Token callbacks the integration tests name in ``kafka.oauth_cb`` as ``integration.oauth_callbacks:<name>``.

Spark's Python workers, ``tail`` and the driver each import this module by that name themselves: the repository
is on their path (the editable install's ``.pth``), as ``tests.token_callbacks`` is for the unit tests.  What a
callable needs comes in ``kafka.sasl.oauthbearer.config``, the string confluent-kafka hands it, so nothing is kept
in a process but the import.
"""

from __future__ import annotations

from integration.oauth_server import fetch_token


def client_credentials(oauth_config: str | None) -> tuple[str, float]:
    """A client_credentials token and its expiry (epoch seconds) from the token endpoint that
    ``sasl.oauthbearer.config`` names: ``token_url=URL,client_id=ID,client_secret=SECRET``."""
    given = dict(pair.split("=", 1) for pair in (oauth_config or "").split(",") if pair)
    return fetch_token(given["token_url"], given["client_id"], given["client_secret"])
