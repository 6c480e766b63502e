"""The unit suite's backend (the embedded broker or a cluster, the Schema Registry test double, moto's AWS Glue)
and the fixtures it shares with the integration suite (shared_fixtures.py)."""

from __future__ import annotations

import os

import pytest
from shared_fixtures import (BrokerUnderTest, broker_that_goes_away, hides_aborted_transactions,  # noqa: F401
                             pytest_collection_modifyitems, spark, tls_files, topic, under_test)


@pytest.fixture(scope="session")
def broker():
    """A real Kafka-compatible broker for the whole session.

    The cluster named by ``TICDC_SINK_TEST_BOOTSTRAP_SERVERS``, read as TiCDC's
    consumers read it (read_committed); or the embedded one (Tansu) on a free
    loopback port, read uncommitted: its read_committed view shows aborted
    transactions anyway, and stops for good at a partition where two
    transactions ended at the same moment (docs/limits.md), so it would
    only add waits and flakes, not checks.
    """
    external = os.environ.get("TICDC_SINK_TEST_BOOTSTRAP_SERVERS")
    if external:
        yield BrokerUnderTest(external, "read_committed")
        return
    from ticdc_sink.embedded.broker import EmbeddedBroker

    with EmbeddedBroker() as running:
        yield BrokerUnderTest(running.bootstrap_servers, "read_uncommitted")


@pytest.fixture
def schema_registry():
    """A fresh Schema Registry TEST DOUBLE (ticdc_sink/embedded/schema_registry.py): ids start at 1."""
    from ticdc_sink.embedded.schema_registry import SchemaRegistryDouble

    with SchemaRegistryDouble() as double:
        yield double


@pytest.fixture(scope="session")
def glue_api():
    """AWS Glue's Schema Registry API: moto's server in this process (tests/glue_api.py)."""
    from glue_api import GlueAPI

    with GlueAPI() as api:
        yield api


@pytest.fixture
def glue_registry(glue_api):
    """A fresh registry in ``glue_api``; moto's Glue is reset after the test."""
    yield glue_api.new_registry()
    glue_api.reset()
