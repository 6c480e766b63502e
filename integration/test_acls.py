"""The ACLs docs/security.md lists are what the sink needs on a cluster that authorizes by ACLs.

A private one-node Apache Kafka (``kafka_server.py``) whose SASL/PLAIN listener
authorizes every request with Kafka's StandardAuthorizer: the admin login may do
anything and grants the sink's login exactly the documented ACLs. With them the
sink writes exactly-once and reads back; without any one of them the write fails
in one line naming what the broker refused. (Describe needs no ACL of its own:
Kafka implies it from Read and Write.)
"""

from __future__ import annotations

import subprocess
import sys
import uuid

import pytest
from pyspark.errors import PySparkException

from started_kafka import started_kafka
from test_spark_sink import CHANGES, row
from ticdc_sink.errors import TiCDCSinkError

pytestmark = [pytest.mark.spark, pytest.mark.broker]

ADMIN, SINK = ("admin", "admin-secret"), ("ticdc-sink", "sink-secret")
ROWS = [row(i, ts=i) for i in range(1, 5)]
LATER_ROWS = [row(i, ts=10 + i) for i in range(1, 5)]


@pytest.fixture(scope="module")
def cluster():
    yield from started_kafka("Apache Kafka with an authorizer", 1, ADMIN, users=dict([SINK]), acls=True)


@pytest.fixture
def names():
    """A topic and a marker topic of this test's own (absent until made)."""
    suffix = uuid.uuid4().hex[:8]
    return {"topic": f"orders-{suffix}", "marker": f"markers-{suffix}"}


def documented_acls(names: dict) -> dict[str, tuple]:
    """docs/security.md's list, for the login ``SINK``: (resource type, name, pattern, operation)."""
    return {
        "Write on the topic": ("TOPIC", names["topic"], "LITERAL", "WRITE"),
        "Read on the topic (the reader)": ("TOPIC", names["topic"], "LITERAL", "READ"),
        "Write on the transactional ids": ("TRANSACTIONAL_ID", "ticdc-sink-", "PREFIXED", "WRITE"),
        "Read on the marker groups": ("GROUP", "ticdc-sink-", "PREFIXED", "READ"),
        "Read on the marker topic": ("TOPIC", names["marker"], "LITERAL", "READ"),
        "Create on the marker topic": ("TOPIC", names["marker"], "LITERAL", "CREATE"),
    }


@pytest.fixture(scope="module")
def admin(cluster):
    from confluent_kafka.admin import AdminClient

    return AdminClient({**cluster.client_settings, "log_level": 0})  # quiet once the cluster is gone


def grant(admin, acls) -> None:
    """Exactly ``acls`` for ``SINK``, in place of any granted before."""
    from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType,
                                       ResourcePatternType, ResourceType)

    for deleted in admin.delete_acls([AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None,
                                                        None, AclOperation.ANY, AclPermissionType.ANY)]).values():
        deleted.result()
    bindings = [AclBinding(ResourceType[kind], name, ResourcePatternType[pattern], f"User:{SINK[0]}", "*",
                           AclOperation[operation], AclPermissionType.ALLOW)
                for kind, name, pattern, operation in acls]
    for created in admin.create_acls(bindings).values():
        created.result()


def create_topic(admin, topic: str) -> None:
    from confluent_kafka.admin import NewTopic

    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result()


def sink_options(cluster, names: dict, **extra) -> dict:
    return {"kafka.bootstrap.servers": cluster.bootstrap_servers, "kafka.security.protocol": "SASL_PLAINTEXT",
            "kafka.sasl.mechanism": "PLAIN", "kafka.sasl.username": SINK[0], "kafka.sasl.password": SINK[1],
            "protocol": "canal-json", "topic": names["topic"], "marker-topic": names["marker"],
            "database": "shop", "table": "orders", "primary-key": "id", "enable-tidb-extension": "true",
            "broker-timeout-ms": "10000", **extra}


def write(spark, options, rows=ROWS) -> None:
    spark.createDataFrame(rows, CHANGES).coalesce(1).write.format("ticdc").mode("append").options(**options).save()


def test_the_documented_acls_let_the_sink_write_exactly_once_and_read_back(spark, cluster, admin, names):
    create_topic(admin, names["topic"])
    grant(admin, documented_acls(names).values())
    options = sink_options(cluster, names)
    write(spark, options, ROWS)  # creates the marker topic
    write(spark, options, LATER_ROWS)  # finds it
    back = spark.read.format("ticdc").options(**options).load()
    assert [(r["_commit_ts"], r["id"]) for r in back.orderBy("_commit_ts", "id").collect()] == [
        (r["_commit_ts"], r["id"]) for r in ROWS + LATER_ROWS]


def test_a_transactional_id_prefix_needs_its_own_acl_and_the_marker_groups_keep_theirs(spark, cluster, admin, names):
    create_topic(admin, names["topic"])
    acls = documented_acls(names)
    acls["Write on the transactional ids"] = ("TRANSACTIONAL_ID", "orders-sink-", "PREFIXED", "WRITE")
    grant(admin, acls.values())
    options = sink_options(cluster, names, **{"transactional-id-prefix": "orders-sink"})
    write(spark, options)
    back = spark.read.format("ticdc").options(**options).load()
    assert [(r["_commit_ts"], r["id"]) for r in back.orderBy("_commit_ts", "id").collect()] == [
        (r["_commit_ts"], r["id"]) for r in ROWS]


@pytest.mark.parametrize("missing, refusal", [
    ("Write on the topic", "Topic authorization failed"),
    ("Write on the transactional ids", "Transactional Id authorization failed"),
    ("Read on the marker groups", "Group authorization failed"),
    ("Read on the marker topic", "Topic authorization failed"),
    ("Create on the marker topic", "marker-topic"),
])
def test_without_any_one_of_them_the_write_fails_in_one_line_naming_the_refusal(spark, cluster, admin, names, missing,
                                                                                 refusal):
    create_topic(admin, names["topic"])
    grant(admin, [acl for name, acl in documented_acls(names).items() if name != missing])
    with pytest.raises((PySparkException, TiCDCSinkError)) as failure:
        write(spark, sink_options(cluster, names))
    text = f"{type(failure.value).__module__}.{type(failure.value).__name__}: {failure.value}"
    line = next((line for line in text.splitlines() if line.startswith("ticdc_sink.errors.")), text)
    assert refusal in line and "Purged in queue" not in line, text[-3000:]


def test_at_least_once_needs_all_but_the_transactional_ids_and_a_read_only_read_on_the_topic(
        spark, cluster, admin, names):
    # The driver keeps the last watermark in its marker group's offsets whatever the delivery.
    acls = documented_acls(names)
    del acls["Write on the transactional ids"]
    grant(admin, [*acls.values(), ("TOPIC", names["topic"], "LITERAL", "CREATE")])
    write(spark, sink_options(cluster, names, delivery="at-least-once"))  # the topic is made by the sink
    grant(admin, [("TOPIC", names["topic"], "LITERAL", "READ")])  # the reader commits no offsets: no group ACL
    back = spark.read.format("ticdc").options(**sink_options(cluster, names)).load()
    assert sorted(r["id"] for r in back.collect()) == [r["id"] for r in ROWS]
    login = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": SINK[0],
             "sasl.password": SINK[1]}
    tail = subprocess.run([sys.executable, "-m", "ticdc_sink", "tail", "--bootstrap-servers", cluster.bootstrap_servers,
                           "--topic", names["topic"], "--protocol", "canal-json", "-o", "enable-tidb-extension=true",
                           "--idle-seconds", "2", *[part for item in login.items() for part in ("-X", "=".join(item))]],
                          capture_output=True, text=True, timeout=120)
    assert tail.returncode == 0 and tail.stdout.count("INSERT shop.orders") == len(ROWS), tail.stdout + tail.stderr
