"""Exactly-once under broker and task faults, on a three-node Apache Kafka cluster of the suite's own.

Each test runs the streaming query of ``exactly_once_checks.py`` (exactly-once,
Canal-JSON, a change feed of ``KEYS`` keys, each with one change per micro-batch)
in the suite's local Spark session, and injects one fault while a micro-batch's
tasks are inside their transactions (a filter before the sink fires it once, at
a chosen row).  Then every row is read back ``read_committed`` and counted by
key: nothing lost, nothing twice, and each key's changes in commit order within
its Kafka partition.

Each test records the time from the fault to the commit of the micro-batch it
hit, and the error a user sees (the failed task's line in Spark's log, or the
query's own error); the table goes to ``integration/.results/faults.md``, and
from there to docs/delivery.md.

    python -m pytest -q integration/test_faults.py

The cluster comes from ``integration/kafka_server.py`` (Maven Central through
``mvn``, then cached); without ``java`` and ``mvn`` the suite skips, saying so.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import threading
import time
import uuid
from pathlib import Path

import processes
import pytest
from exactly_once_checks import (ARROW_BATCH_ROWS, BROKER_TIMEOUT_MS, KEYS, Results, Run, assert_exactly_once_in_order,
                                 batch_committed_at, new_run, sink_options, start_query)
from started_kafka import started_kafka
from processes import command, connected_to, descendants, parents
from pyspark import cloudpickle
from pyspark.sql import functions as F
from pyspark.sql import types as T

pytestmark = [pytest.mark.spark]
# The faults run in Spark's Python workers, which cannot import this file or processes.py: they travel by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])
cloudpickle.register_pickle_by_value(processes)

FAULTED_STEP = 1  # the micro-batch the fault hits
RESULTS = Results("faults")
record = RESULTS.record


@pytest.fixture(scope="module")
def cluster():
    yield from started_kafka("three-node Kafka for the fault suite", 3)
    RESULTS.write()


@pytest.fixture(scope="module", autouse=True)
def streamed_arrow_batches(spark):
    """Small Arrow batches: the sink gets (and sends) rows while its task is still reading, so a fault at a row
    lands inside the task's transaction."""
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(ARROW_BATCH_ROWS))
    yield
    spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")


@pytest.fixture(scope="module")
def task_failures(spark, tmp_path_factory):
    """Spark's 'Lost task' lines (the failed task's error), in a file of their own."""
    path = tmp_path_factory.mktemp("spark-log") / "task-failures.log"
    jvm = spark._jvm
    core, level = jvm.org.apache.logging.log4j.core, jvm.org.apache.logging.log4j.Level.WARN
    context = jvm.org.apache.logging.log4j.LogManager.getContext(False)
    config = context.getConfiguration()
    layout = core.layout.PatternLayout.newBuilder().withPattern("%m%n").build()
    appender = core.appender.FileAppender.newBuilder().setName("ticdc-sink-task-failures") \
        .withFileName(str(path)).setLayout(layout).build()
    appender.start()
    config.addAppender(appender)
    logger = core.config.LoggerConfig("org.apache.spark.scheduler.TaskSetManager", level, False)
    logger.addAppender(appender, level, None)
    config.addLogger("org.apache.spark.scheduler.TaskSetManager", logger)
    context.updateLoggers()
    return path


def log_position(log: Path) -> int:
    return log.stat().st_size if log.exists() else 0


def what_users_saw(log: Path, since: int, otherwise: str, most: int = 3) -> str:
    """The lost tasks' errors after byte ``since`` of the log, one line each, or ``otherwise``."""
    return "; ".join(f"{kind}: {text}" for kind, text in first_errors(log, since)[:most]) or otherwise


def restart(cluster, node) -> None:
    """Bring a killed node back with its data, and wait until the cluster lists it again."""
    node.process.wait()
    cluster.start_node(node)
    cluster.wait_until_ready()


def first_errors(log: Path, since: int) -> list[str]:
    """The sink's (or Spark's) one-line errors of the tasks lost after byte ``since`` of the log."""
    text = log.read_text(errors="replace")[since:] if log.exists() else ""
    return [(kind, line) for kind, line in re.findall(r"^(?:\w+\.)*(\w+(?:Error|Exception)): (.+)$", text, flags=re.M)
            if kind != "PythonException"]


def fault_filter(run: Run, action, at_key: int, partition: int | None = None):
    """A filter that runs ``action(context)`` once, at ``at_key`` of the faulted micro-batch, in the first attempt
    (of Spark ``partition`` if given), then lets every row through."""
    armed, fired = str(run.armed), str(run.fired)

    def keep(key, step):
        from pyspark import TaskContext

        context = TaskContext.get()
        if (step == FAULTED_STEP and key >= at_key and context.attemptNumber() == 0
                and (partition is None or context.partitionId() == partition)):
            try:
                os.unlink(armed)
            except FileNotFoundError:
                return True  # fired already
            with open(fired, "w") as out:
                out.write(repr(time.time()))
            action(context)
        return True

    run.armed.touch()
    return F.udf(keep, T.BooleanType(), useArrow=False).asNondeterministic()


def run_query(spark, run: Run, options: dict, keep=None, timeout: float = 420):
    query = start_query(spark, run, options, keep)
    try:
        query.awaitTermination(timeout)
    except Exception:  # read from query.exception()
        pass
    if query.isActive:
        query.stop()
        pytest.fail(f"the query did not end within {timeout} s")
    return query


def leader_of(cluster, topic: str, partition: int) -> int:
    from confluent_kafka.admin import AdminClient

    metadata = AdminClient(cluster.client_settings).list_topics(topic, timeout=10)
    return metadata.topics[topic].partitions[partition].leader


def transaction_coordinator(cluster, transactional_id: str) -> int:
    """The node leading the ``__transaction_state`` partition of ``transactional_id`` (Kafka's own hash)."""
    h = 0
    for unit in transactional_id.encode("utf-16-be").hex(" ", 2).split():  # Java's String.hashCode
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    partitions = int(_broker_setting(cluster, "transaction.state.log.num.partitions"))
    return leader_of(cluster, "__transaction_state", (h & 0x7FFFFFFF) % partitions)


def _broker_setting(cluster, name: str) -> str:
    return next(line.split("=", 1)[1].strip() for line in
                (cluster.nodes[0].directory / "server.properties").read_text().splitlines()
                if line.startswith(name + "="))


def warm_transactions(cluster) -> None:
    """One transaction, so that ``__transaction_state`` exists and its leaders can be looked up."""
    from confluent_kafka import Producer

    producer = Producer({**cluster.client_settings, "transactional.id": f"warm-{uuid.uuid4().hex}"})
    producer.init_transactions(60)


def signal_later(run: Run, pid: int, signum: int, after: float) -> threading.Thread:
    """Send ``signum`` to ``pid`` ``after`` seconds past the fault (resuming a paused broker, say)."""

    def wait_and_signal():
        deadline = time.monotonic() + 600
        while not run.fired.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(after)
        os.kill(pid, signum)

    thread = threading.Thread(target=wait_and_signal, daemon=True)
    thread.start()
    return thread


def kill_pids(pids: list[int], signum: int = signal.SIGKILL):
    def action(context):
        for pid in pids:
            os.kill(pid, signum)
    return action


def recovered(query, run: Run) -> str:
    return f"{batch_committed_at(query.recentProgress, FAULTED_STEP) - run.fired_at():.1f} s"


# -- the faults


def test_the_leader_of_a_data_partition_killed_mid_transaction_then_restarted(spark, cluster, tmp_path,
                                                                              task_failures):
    run = new_run(cluster, tmp_path)
    victim = cluster.node(leader_of(cluster, run.topic, 0))
    log_start = log_position(task_failures)
    query = run_query(spark, run, sink_options(cluster, run),
                      fault_filter(run, kill_pids([victim.process.pid]), at_key=KEYS // 3))
    assert query.exception() is None, query.exception()
    took = recovered(query, run)
    restart(cluster, victim)
    assert_exactly_once_in_order(cluster, run)
    record(f"leader of partition 0 (node {victim.node_id}) killed -9 mid-transaction, restarted after the query",
           took, what_users_saw(task_failures, log_start, "nothing: the producer moved to the new leader"))


def test_the_transaction_coordinator_killed_as_the_task_commits(spark, cluster, tmp_path, task_failures):
    run = new_run(cluster, tmp_path)
    warm_transactions(cluster)
    coordinator = cluster.node(transaction_coordinator(cluster, f"{run.prefix}-0"))
    log_start = log_position(task_failures)
    # The task of Spark partition 0 reaches its last keys: the next thing it does is commit, to a dead coordinator.
    query = run_query(spark, run, sink_options(cluster, run),
                      fault_filter(run, kill_pids([coordinator.process.pid]), at_key=KEYS - 30, partition=0))
    assert query.exception() is None, query.exception()
    took = recovered(query, run)
    restart(cluster, coordinator)
    assert_exactly_once_in_order(cluster, run)
    record(f"transaction coordinator of Spark partition 0 (node {coordinator.node_id}) killed -9 as the task "
           "commits", took, what_users_saw(task_failures, log_start, "nothing: the commit went to the new coordinator"))


def test_a_broker_paused_past_the_timeouts_then_resumed(spark, cluster, tmp_path, task_failures):
    run = new_run(cluster, tmp_path)
    victim = cluster.node(leader_of(cluster, run.topic, 0))
    pause_s = 2.5 * BROKER_TIMEOUT_MS / 1000
    log_start = log_position(task_failures)
    resumer = signal_later(run, victim.process.pid, signal.SIGCONT, pause_s)
    try:
        query = run_query(spark, run, sink_options(cluster, run),
                          fault_filter(run, kill_pids([victim.process.pid], signal.SIGSTOP), at_key=KEYS // 3))
    finally:
        resumer.join()
    assert query.exception() is None, query.exception()
    took = recovered(query, run)
    cluster.wait_until_ready()
    assert_exactly_once_in_order(cluster, run)
    record(f"leader of partition 0 (node {victim.node_id}) paused (SIGSTOP) {pause_s:.0f} s, past "
           f"broker-timeout-ms={BROKER_TIMEOUT_MS}, then resumed", took,
           what_users_saw(task_failures, log_start, "nothing: the cluster moved leadership away"))


def test_a_task_outliving_its_transaction_timeout_fails_in_one_line_and_its_retry_commits(spark, cluster, tmp_path,
                                                                                          task_failures):
    run = new_run(cluster, tmp_path)
    timeout_ms = 8000
    log_start = log_position(task_failures)
    # The coordinator aborts a transaction older than transaction.timeout.ms (task-timeout-ms) on its next check
    # (every 10 s): the task stalls long enough for that, then carries on into the aborted transaction.
    query = run_query(spark, run, sink_options(cluster, run, **{"task-timeout-ms": str(timeout_ms)}),
                      fault_filter(run, lambda context: time.sleep(timeout_ms / 1000 + 14), at_key=KEYS // 3))
    assert query.exception() is None, query.exception()
    took = recovered(query, run)
    assert_exactly_once_in_order(cluster, run)
    errors = first_errors(task_failures, log_start)
    sink_errors = [text for kind, text in errors if kind == "TaskTimeoutError"]
    assert sink_errors and all(f"task-timeout-ms={timeout_ms}" in text for text in sink_errors), errors
    assert all("\n" not in text for text in sink_errors)
    record(f"a task stalls past transaction.timeout.ms (task-timeout-ms={timeout_ms}): the coordinator aborts",
           took, f"TaskTimeoutError: {sink_errors[0]}")


ZOMBIE = """
import sys, time, json
from ticdc_sink.config.sink_options import parse_options
from ticdc_sink.kafka.transactions import TransactionalOutput
from ticdc_sink.kafka.messages import Messages
options, transactional_id, marker_group, ready, outcome, release = json.loads(sys.argv[1])
zombie = TransactionalOutput(parse_options(options), transactional_id, marker_group)
zombie.start()
zombie.begin()
zombie.produce(Messages.one(options["topic"], 0, None, b"zombie"))
zombie.flush()
open(ready, "w").close()
deadline = time.monotonic() + 300
while not __import__("os").path.exists(release) and time.monotonic() < deadline:
    time.sleep(0.2)
try:
    zombie.commit(0, input_rows=0)
    result = "committed"
except Exception as e:
    result = f"{type(e).__name__}: {e}"
finally:
    zombie.close()
open(outcome, "w").write(result)
"""


def sink_worker_pid(broker_ports: set[int], timeout: float = 60) -> int:
    """The pyspark worker (not this one) holding open connections to the brokers: the sink's, mid-transaction.

    Spark forks the sink's worker and a UDF's from daemons of their own, so it is looked for among the Python
    workers of the JVM that runs this one, by its sockets; the UDF may run ahead of the sink, so it is waited for.
    """
    jvm = parents()[os.getppid()]  # this worker's daemon's parent
    deadline = time.monotonic() + timeout
    while True:
        workers = {pid for pid in descendants(jvm) if pid != os.getpid() and "pyspark.daemon" in command(pid)}
        connected = connected_to(broker_ports, workers)
        if connected:
            return min(connected)
        if time.monotonic() > deadline:
            raise RuntimeError("no pyspark worker with connections to the brokers")
        time.sleep(0.2)


def test_a_task_killed_mid_transaction_is_retried_and_a_zombie_of_it_is_fenced(spark, cluster, tmp_path,
                                                                               task_failures):
    run = new_run(cluster, tmp_path)
    options = sink_options(cluster, run)
    ports = {node.port for node in cluster.nodes}
    zombie_files = [str(tmp_path / name) for name in ("zombie-ready", "zombie-outcome", "zombie-release")]
    script, prefix = ZOMBIE, run.prefix  # what the fault needs of the run, as values: Spark's workers cannot import Run

    def kill_the_sink_and_raise_a_zombie(context):
        import json as json_
        import subprocess as subprocess_
        import sys as sys_
        import time as time_

        victim = sink_worker_pid(ports)
        query_id = context.getLocalProperty("sql.streaming.queryId")
        arguments = [options, f"{prefix}-{context.partitionId()}",
                     f"ticdc-sink-{query_id}-{context.partitionId()}", *zombie_files]
        os.kill(victim, signal.SIGKILL)  # the attempt dies with its transaction open
        with open(zombie_files[1] + ".log", "wb") as log:
            subprocess_.Popen([sys_.executable, "-c", script, json_.dumps(arguments)], start_new_session=True,
                              stdout=log, stderr=subprocess_.STDOUT)
        deadline = time_.monotonic() + 60  # the zombie takes the transactional.id over before Spark's retry
        while not os.path.exists(zombie_files[0]) and time_.monotonic() < deadline:
            time_.sleep(0.1)

    log_start = log_position(task_failures)
    query = run_query(spark, run, options, fault_filter(run, kill_the_sink_and_raise_a_zombie, at_key=KEYS // 3))
    Path(zombie_files[2]).touch()  # the zombie now tries to commit what it sent
    deadline = time.monotonic() + 60
    while not Path(zombie_files[1]).exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert query.exception() is None, query.exception()
    took = recovered(query, run)
    assert Path(zombie_files[1]).exists(), Path(zombie_files[1] + ".log").read_text()[-2000:]
    zombie = Path(zombie_files[1]).read_text()
    assert zombie.startswith("DeliveryError") and "taken over by a newer attempt" in zombie, zombie
    assert_exactly_once_in_order(cluster, run)
    record("a task's Python worker killed -9 mid-transaction; a zombie with its transactional.id opens a "
           "transaction before the retry", took,
           what_users_saw(task_failures, log_start, "Spark: Python worker exited unexpectedly (crashed)", most=1)
           + f"; the zombie's commit: {zombie}")


def test_the_marker_topics_leader_dies_between_produce_and_commit(spark, cluster, tmp_path, task_failures):
    run = new_run(cluster, tmp_path)
    options = sink_options(cluster, run)
    # The first micro-batch creates the marker topic; the fault looks its leader up when it fires.
    markers = options["marker-topic"]
    settings = cluster.client_settings
    pids = {node.node_id: node.process.pid for node in cluster.nodes}
    killed = tmp_path / "killed"

    def kill_the_marker_leader(context):
        from confluent_kafka.admin import AdminClient as Admin

        leader = Admin(settings).list_topics(markers, timeout=10).topics[markers].partitions[0].leader
        with open(killed, "w") as out:
            out.write(str(leader))
        os.kill(pids[leader], signal.SIGKILL)

    log_start = log_position(task_failures)
    query = run_query(spark, run, options, fault_filter(run, kill_the_marker_leader, at_key=KEYS - 30))
    assert query.exception() is None, query.exception()
    took = recovered(query, run)
    victim = cluster.node(int(killed.read_text()))
    restart(cluster, victim)
    assert_exactly_once_in_order(cluster, run)
    record(f"the marker topic's leader (node {victim.node_id}) killed -9 between the rows and the commit", took,
           what_users_saw(task_failures, log_start, "nothing"))


def test_the_whole_cluster_down_fails_the_query_in_one_line_and_a_restart_loses_nothing(spark, cluster, tmp_path):
    run = new_run(cluster, tmp_path)
    options = sink_options(cluster, run)
    attempts = int(spark.sparkContext.master.split(",")[1].rstrip("]")) if "," in spark.sparkContext.master else 1
    query = run_query(spark, run, options,
                      fault_filter(run, kill_pids([n.process.pid for n in cluster.nodes]), at_key=KEYS // 3))
    failed_after = time.time() - run.fired_at()
    error = query.exception()
    assert error is not None
    line = next(line for line in str(error).splitlines() if line.startswith("ticdc_sink.errors.DeliveryError: "))
    assert f"broker-timeout-ms={BROKER_TIMEOUT_MS}" in line or "not acknowledged" in line, line
    # Each of Spark's attempts gives up within broker-timeout-ms (plus librdkafka's flush margin).
    assert failed_after < attempts * (BROKER_TIMEOUT_MS / 1000 + 10) + 15, failed_after
    for node in cluster.nodes:
        node.process.wait()
        cluster.start_node(node)
    cluster.wait_until_ready(120)
    restarted = time.time()
    again = run_query(spark, run, options)
    assert again.exception() is None, again.exception()
    assert_exactly_once_in_order(cluster, run)
    record("every broker killed -9 mid-batch, for longer than the query's timeouts; restarted, then the query "
           "restarted from its checkpoint",
           f"failed {failed_after:.0f} s after the fault ({attempts} task attempts); the restart wrote the rest "
           f"in {time.time() - restarted:.0f} s", line.strip())
