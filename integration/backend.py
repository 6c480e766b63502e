"""Which backend the integration suite runs on: a cluster, Testcontainers or the embedded broker.

A module of its own, not the conftest, so that test modules can ask (``from backend import chosen``): ``conftest``
by name is the unit suite's when both suites run in one session.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from dataclasses import dataclass

KAFKA_IMAGE = "confluentinc/cp-kafka:7.6.1"
REGISTRY_IMAGE = "confluentinc/cp-schema-registry:7.6.1"


def _docker_reason() -> str | None:
    try:
        import docker

        docker.from_env().ping()
    except Exception as e:  # no engine, no socket, no permission: all mean "cannot run containers here"
        return f"no Docker engine to start Kafka in ({type(e).__name__}: {e})"
    return None


@dataclass(frozen=True)
class Backend:
    kind: str  # "external", "containers" or "embedded"
    description: str


@functools.cache
def chosen() -> Backend:
    """The backend this session runs on, chosen once: the conftest's fixtures and the tests that skip on one ask."""
    external = os.environ.get("TICDC_SINK_TEST_BOOTSTRAP_SERVERS")
    if external:
        registry = os.environ.get("TICDC_SINK_TEST_SCHEMA_REGISTRY")
        return Backend("external", f"the cluster at {external}, "
                                   + (f"Schema Registry at {registry}" if registry else "the Schema Registry TEST "
                                      "DOUBLE (TICDC_SINK_TEST_SCHEMA_REGISTRY unset)"))
    if importlib.util.find_spec("testcontainers") is None:
        missing = "Testcontainers is not installed (pip install -e '.[test,integration]')"
    else:
        missing = _docker_reason()
    if missing is None:
        return Backend("containers", f"Testcontainers: {KAFKA_IMAGE} (KRaft) and {REGISTRY_IMAGE}")
    return Backend("embedded", f"the embedded broker (Tansu) and the Schema Registry test double, because "
                               f"{missing[0].lower() + missing[1:]}; the abort-isolation checks skip")
