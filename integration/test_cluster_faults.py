"""Exactly-once when Spark's own processes die: an executor, or the driver, on a standalone cluster and real Kafka.

Each test runs the streaming query of ``exactly_once_checks.py`` (exactly-once,
Canal-JSON, ``KEYS`` keys with one change per micro-batch) as an application of
its own (``cluster_query.py``, a driver in a process session of its own) on
pyspark's standalone Master and two Workers (``spark_cluster.py``), writing to a
one-node Apache Kafka (``kafka_server.py``), and kills one of its processes with
SIGKILL at a chosen point of a micro-batch, found from the outside: what the
topic shows ``read_uncommitted`` and ``read_committed``, the checkpoint, and the
processes' connections to the broker.  The application is restarted from its
checkpoint where the driver died.  Then every row is read back
``read_committed`` and counted by key: nothing lost, nothing twice, each key's
changes in commit order, each micro-batch's watermark once.

Each test records the time from the kill to the commit of the micro-batch it hit
and what a user sees; the table goes to ``integration/.results/cluster-faults.md``,
and from there to docs/delivery.md.

    python -m pytest -q integration/test_cluster_faults.py

Without ``java`` and ``mvn`` (Kafka's jars come from Maven Central, then a cache)
the suite skips, saying so.
"""

from __future__ import annotations

import collections
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import IsolationLevel

from exactly_once_checks import (KEYS, STEPS, Results, Run, assert_exactly_once_in_order, batch_committed_at,
                                 new_run, read_back, sink_options, watermark_of)
from kafka_server import KafkaCluster
from started_kafka import started_kafka
from processes import command, connected_to, descendants, in_session, parents
from spark_cluster import SparkCluster

pytestmark = [pytest.mark.spark]

FAULTED_STEP = 1  # the first micro-batch a fault is aimed at (the first one also starts the executors' workers)
CLUSTER_QUERY = Path(__file__).with_name("cluster_query.py")
COMMIT_RUNNER = "pyspark.sql.worker.python_streaming_sink_runner"  # the driver's Python side of a commit
APPLICATION_TIMEOUT = 300
RESULTS = Results("cluster-faults")


@pytest.fixture(scope="module")
def kafka():
    yield from started_kafka("Kafka for the cluster fault suite", 1)
    RESULTS.write()


@pytest.fixture(scope="module")
def spark_cluster(kafka):  # after Kafka, which found java
    with SparkCluster(2) as cluster:
        yield cluster


class Driver:
    """One run of ``cluster_query.py``: the application's driver (the program, its JVM, its Python workers), in a
    process session of its own, with its stderr (Spark's log) and stdout (the progress) in the run's folder."""

    def __init__(self, spark_cluster: SparkCluster, kafka: KafkaCluster, run: Run, name: str):
        self.log, self.output = run.tmp / f"{name}.log", run.tmp / f"{name}.out"
        self.started = time.time()
        with self.log.open("wb") as log, self.output.open("wb") as output:
            self.process = subprocess.Popen(
                [sys.executable, str(CLUSTER_QUERY), "--master", spark_cluster.master_url, "--run", str(run.tmp),
                 "--options", json.dumps(sink_options(kafka, run))],
                stdin=subprocess.DEVNULL, stdout=output, stderr=log, start_new_session=True)

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> float:
        """SIGKILL every process of the driver at once (pyspark's daemons have process groups of their own, not
        sessions); returns when."""
        killed_at = time.time()
        while pids := in_session(self.process.pid):
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            if self.process.pid in pids:
                self.process.wait()
        self.process.wait()
        return killed_at

    def pause(self) -> None:
        """SIGSTOP every process of the driver: nothing it does from now on reaches Kafka or the checkpoint."""
        signal_all(in_session(self.process.pid), signal.SIGSTOP)

    def finish(self) -> list[dict]:
        """Wait for the query to end; its micro-batches' progress."""
        try:
            self.process.wait(APPLICATION_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"the application did not end within {APPLICATION_TIMEOUT} s; its log: {self.log}")
        assert self.process.returncode == 0, self.log.read_text(errors="replace")[-3000:]
        return [json.loads(line) for line in self.output.read_text().splitlines()]

    def commit_workers(self) -> set[int]:
        """The Python workers that run the sink's commit on the driver (forked by their pyspark daemon)."""
        runners = {pid for pid in in_session(self.process.pid) if COMMIT_RUNNER in command(pid)}
        family = parents()
        return {pid for pid in runners if family.get(pid) in runners}

    def lost_tasks(self) -> list[str]:
        """Spark's lines of the tasks it lost, without the log's time and level."""
        return re.findall(r"WARN TaskSetManager: (?:\[[^]]*\] )*(Lost task .+)$", self.log.read_text(errors="replace"),
                          flags=re.M)


@pytest.fixture
def drivers(spark_cluster, kafka):
    """Starts drivers (``drivers(run, name)``); whatever is left of them is killed after the test."""
    started: list[Driver] = []

    def start(run: Run, name: str) -> Driver:
        started.append(Driver(spark_cluster, kafka, run, name))
        return started[-1]

    yield start
    for driver in started:
        driver.kill()


class TopicWatch:
    """The run's topic as it grows, to a reader of one isolation level: the keys of each step it shows, and
    whether a transaction is open (a partition's last stable offset behind its end)."""

    def __init__(self, kafka: KafkaCluster, topic: str, isolation: str):
        from confluent_kafka import Consumer, TopicPartition
        from confluent_kafka.admin import AdminClient

        from ticdc_sink.codec import decoder_for

        # A fetch answered at once: a watch that waits for data races the tasks' commits.
        self.reader = Consumer({**kafka.client_settings, "group.id": f"{topic}-watch", "enable.auto.commit": False,
                                "isolation.level": isolation, "fetch.wait.max.ms": 10})
        self.admin = AdminClient(kafka.client_settings)
        count = len(self.reader.list_topics(topic, timeout=10).topics[topic].partitions)
        self.partitions = [TopicPartition(topic, p, 0) for p in range(count)]
        self.reader.assign(self.partitions)
        self.decoder = decoder_for("canal-json")
        self.keys: dict[int, set[int]] = collections.defaultdict(set)

    def wait_for(self, step: int, keys: int, driver: Driver) -> None:
        """Until ``keys`` keys of ``step`` are visible, while the driver runs."""
        from ticdc_sink.codec.base import RowEvent

        deadline = time.monotonic() + APPLICATION_TIMEOUT
        while len(self.keys[step]) < keys:
            assert driver.running, f"the application ended first: {driver.log.read_text(errors='replace')[-3000:]}"
            assert time.monotonic() < deadline, f"{len(self.keys[step])} of {keys} keys of step {step} arrived"
            for message in self.reader.consume(1000, timeout=0.05):
                if message.error() is None:
                    for event in self.decoder.decode(message.key(), message.value()):
                        if isinstance(event, RowEvent):
                            self.keys[int(event.columns["step"])].add(int(event.columns["id"]))

    def transaction_open(self) -> bool:
        """Whether a transaction holds messages on the topic that it has not committed or aborted yet."""
        return self._ends(IsolationLevel.READ_COMMITTED) != self._ends(IsolationLevel.READ_UNCOMMITTED)

    def _ends(self, isolation) -> list[int]:
        """The partitions' ends to a reader of ``isolation``: the last stable offsets, or the high watermarks."""
        from confluent_kafka.admin import OffsetSpec

        futures = self.admin.list_offsets({p: OffsetSpec.latest() for p in self.partitions},
                                          isolation_level=isolation, request_timeout=10)
        return [futures[p].result().offset for p in self.partitions]

    def close(self) -> None:
        self.reader.close()


def committed_in_checkpoint(run: Run, batch_id: int) -> bool:
    """Whether Spark recorded micro-batch ``batch_id`` as done (its commit log entry)."""
    return (run.checkpoint / "commits" / str(batch_id)).exists()


def next_fresh_batch(run: Run) -> int:
    """The first micro-batch from ``FAULTED_STEP`` on that Spark has not planned yet: none of its tasks ran."""
    return max(FAULTED_STEP, len(list((run.checkpoint / "offsets").glob("[0-9]*"))))


def signal_all(pids: set[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass


@dataclass
class KilledExecutor:
    """An executor the test killed."""

    pid: int
    executor_id: str
    workers: set[int]  # its Python daemons and workers
    at: float


def launched_executors(spark_cluster: SparkCluster) -> list[str]:
    """The executors the Master launched so far (its log's lines)."""
    log = next(daemon.log for daemon in spark_cluster.daemons if daemon.name == "master")
    return re.findall(r"Launching executor (\S+)", log.read_text(errors="replace"))


def executors(spark_cluster: SparkCluster) -> dict[int, set[int]]:
    """The cluster's executor JVMs, each with its Python daemons and workers."""
    return {executor: descendants(executor) for executor in spark_cluster.executor_pids()}


def kill_an_executor_mid_transaction(kafka: KafkaCluster, trees: dict[int, set[int]],
                                     watch: TopicWatch) -> KilledExecutor | None:
    """SIGKILL an executor JVM (of ``trees``, from ``executors``) whose sink worker holds connections to the
    broker while a transaction is open on the topic, or None where there is none.  The executors pause
    (SIGSTOP, with their Python workers) while one is chosen, so that none commits meanwhile, and resume after."""
    paused = set(trees).union(*trees.values())
    signal_all(paused, signal.SIGSTOP)
    try:
        trees = {executor: descendants(executor) for executor in trees}  # and what they started since
        signal_all(set().union(*trees.values()) - paused, signal.SIGSTOP)
        paused |= set().union(*trees.values())
        time.sleep(0.05)  # what they sent reaches the broker
        if not watch.transaction_open():
            return None
        ports = {node.port for node in kafka.nodes}
        victim = next((executor for executor, tree in trees.items() if connected_to(ports, tree)), None)
        if victim is None:
            return None
        executor_id = re.search(r"--executor-id (\S+)", command(victim)).group(1)
        os.kill(victim, signal.SIGKILL)
        return KilledExecutor(victim, executor_id, trees[victim], time.time())
    finally:
        signal_all(paused, signal.SIGCONT)


def kill_the_driver(run: Run, kafka: KafkaCluster, drivers, stop_in_window) -> tuple[int, float]:
    """Run the application and kill it (``Driver.kill``) where ``stop_in_window(driver, watch, run, step)``
    stopped it, once micro-batch ``step``'s tasks have all committed; returns the step and when.

    ``stop_in_window`` returns whether it caught the window; a miss kills the application too, and its restart
    tries the next micro-batch none of whose tasks ran.
    """
    for attempt in range(len(STEPS) - FAULTED_STEP):
        step = next_fresh_batch(run)
        if step >= len(STEPS):
            break
        driver = drivers(run, f"driver-{attempt}")
        watch = TopicWatch(kafka, run.topic, "read_committed")
        try:
            watch.wait_for(step, KEYS, driver)  # every task of micro-batch `step` committed
            caught = stop_in_window(driver, watch, run, step)
            killed_at = driver.kill()
            if caught:
                return step, killed_at
        finally:
            watch.close()
    pytest.fail("every kill came after Spark had recorded its micro-batch")


def stop_before_the_checkpoint(driver: Driver, watch: TopicWatch, run: Run, batch_id: int) -> bool:
    """Stop the driver at once: True unless Spark had recorded the micro-batch already."""
    driver.pause()
    return not committed_in_checkpoint(run, batch_id)


def stop_inside_the_drivers_transaction(driver: Driver, watch: TopicWatch, run: Run, batch_id: int) -> bool:
    """Let the driver's commit of ``batch_id`` run a millisecond at a time (SIGCONT, SIGSTOP) until it holds an
    open transaction on the topic: True, with it stopped there; False if the batch got committed first.

    The tasks committed already, and the next micro-batch starts only after Spark records this one, so an open
    transaction on the topic is the driver's.  After each stop the broker is given time to finish what was sent.
    """
    workers: set[int] = set()
    while driver.running and not committed_in_checkpoint(run, batch_id):
        started = driver.commit_workers() - workers  # pyspark forks one per commit, or reuses one
        signal_all(started, signal.SIGSTOP)
        workers |= started
        time.sleep(0.05)
        if watch.transaction_open() and not committed_in_checkpoint(run, batch_id):
            time.sleep(0.5)  # a commit already sent would end it by now
            if watch.transaction_open():
                return True
        signal_all(workers, signal.SIGCONT)
        time.sleep(0.001)
        signal_all(workers, signal.SIGSTOP)
    signal_all(workers, signal.SIGCONT)
    return False


def watermarks_sent(kafka: KafkaCluster, run: Run, step: int) -> collections.Counter:
    """How many watermarks of micro-batch ``step`` each partition holds, committed or aborted."""
    from ticdc_sink.codec import decoder_for
    from ticdc_sink.codec.base import WatermarkEvent

    decoder, watermarks = decoder_for("canal-json"), collections.Counter()
    for message in read_back(kafka, run, "read_uncommitted"):
        for event in decoder.decode(message.key(), message.value()):
            if isinstance(event, WatermarkEvent) and event.ts == watermark_of(step):
                watermarks[message.partition()] += 1
    return watermarks


def recovery(restarted: Driver, progress: list[dict], step: int, killed_at: float) -> str:
    """From the kill to the replayed micro-batch's commit, and how much of it the restart took."""
    committed = batch_committed_at(progress, step)
    replay = next(p for p in progress if p["batchId"] == step)["durationMs"]["triggerExecution"] / 1000
    return (f"{committed - killed_at:.1f} s from the kill to the replayed micro-batch's commit: the application's "
            f"restart {committed - replay - restarted.started:.1f} s, the micro-batch {replay:.1f} s")


def what_a_restart_says(driver: Driver) -> str:
    """The restarted application's warnings and errors in Spark's log (besides its start-up notes), or that there
    were none."""
    lines = re.findall(r"^\S+ \S+ (?:WARN|ERROR) (\S+: .+)$", driver.log.read_text(errors="replace"), flags=re.M)
    notes = [line for line in lines if not line.startswith(("NativeCodeLoader", "Utils", "ResolveWriteToStream"))]
    return "; ".join(notes[:3]) or "nothing: the restarted query runs the micro-batch again and goes on"


# -- the faults


def test_an_executor_killed_mid_transaction_and_its_task_run_again(spark_cluster, kafka, drivers, tmp_path):
    run = new_run(kafka, tmp_path)
    launched = len(launched_executors(spark_cluster))
    driver = drivers(run, "driver")
    uncommitted = TopicWatch(kafka, run.topic, "read_uncommitted")
    try:
        for step in range(FAULTED_STEP, len(STEPS)):
            uncommitted.wait_for(step - 1, KEYS, driver)  # the executors' Python workers run
            trees = executors(spark_cluster)  # looked up ahead: the fault races the tasks' commits
            uncommitted.wait_for(step, 1, driver)  # the micro-batch's tasks are sending rows in their transactions
            killed = kill_an_executor_mid_transaction(kafka, trees, uncommitted)
            if killed is not None:
                break
        else:
            pytest.fail("no executor was found mid-transaction")
    finally:
        uncommitted.close()
    deadline = time.monotonic() + 30
    while killed.workers & parents().keys():  # its Python workers see their JVM gone and exit
        assert time.monotonic() < deadline, f"the killed executor's Python workers {killed.workers} are left"
        time.sleep(0.1)
    progress = driver.finish()
    took = batch_committed_at(progress, step) - killed.at
    lost = [line for line in driver.lost_tasks() if f"executor {killed.executor_id})" in line]
    assert lost, f"Spark lost no task on executor {killed.executor_id}: {driver.lost_tasks()}"
    # The application's two executors, and one the Master started in place of the killed one.
    assert len(launched_executors(spark_cluster)) - launched == 3, launched_executors(spark_cluster)
    assert_exactly_once_in_order(kafka, run)
    RESULTS.record(f"an executor JVM killed -9 while its task's transaction of micro-batch {step} is open (its "
                   "Python workers exit with it); Spark runs the lost task again, and the Master starts a new "
                   "executor", f"{took:.1f} s", lost[0])


def test_the_driver_killed_after_the_tasks_committed_before_the_checkpoint_records_them(drivers, kafka, tmp_path):
    run = new_run(kafka, tmp_path)
    step, killed_at = kill_the_driver(run, kafka, drivers, stop_before_the_checkpoint)
    restarted = drivers(run, "restarted")
    progress = restarted.finish()
    # The restarted query ran the micro-batch again; its tasks found it written, and aborted their copy.
    assert progress[0]["batchId"] == step, progress[0]
    assert_exactly_once_in_order(kafka, run)
    RESULTS.record(f"the driver (the whole application) killed -9 once micro-batch {step}'s tasks had committed, "
                   "before the checkpoint recorded it; restarted from the checkpoint",
                   recovery(restarted, progress, step, killed_at), what_a_restart_says(restarted))


def test_the_driver_killed_while_its_own_transaction_is_open(drivers, kafka, tmp_path):
    run = new_run(kafka, tmp_path)
    step, killed_at = kill_the_driver(run, kafka, drivers, stop_inside_the_drivers_transaction)
    watch = TopicWatch(kafka, run.topic, "read_committed")
    try:
        # Nobody ends it now: the transaction stays open until the restarted driver takes its transactional.id over.
        assert watch.transaction_open() and not committed_in_checkpoint(run, step)
    finally:
        watch.close()
    restarted = drivers(run, "restarted")
    progress = restarted.finish()
    assert progress[0]["batchId"] == step, progress[0]
    assert_exactly_once_in_order(kafka, run)
    # The killed transaction's watermarks are on the topic too, aborted: twice in a partition, once read_committed.
    assert max(watermarks_sent(kafka, run, step).values()) == 2
    RESULTS.record(f"the driver (the whole application) killed -9 while its transaction of micro-batch {step}'s "
                   "watermarks is open; restarted from the checkpoint",
                   recovery(restarted, progress, step, killed_at), what_a_restart_says(restarted))
