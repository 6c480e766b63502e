"""Real Apache Kafka on loopback, from Maven Central: what the guarantees and fault tests run against.

    python integration/kafka_server.py [--brokers N] [--sasl-plain USER:PASSWORD]

fetches Apache Kafka's broker (``org.apache.kafka:kafka_2.13`` at ``KAFKA_VERSION``,
with its runtime dependencies and a log4j2 binding) with ``mvn`` into a cache that
survives runs, formats KRaft storage in a temporary folder, starts one combined
broker and controller per node on free loopback ports, waits until the cluster
answers metadata with every broker, and prints the bootstrap servers as its
first line on stdout.  It runs until SIGTERM or SIGINT, then stops every JVM it
started and removes its folder.

With three or more brokers, new topics and the internal ones (consumer offsets,
transaction state) get replication factor 3 and ``min.insync.replicas=2``, so a
cluster that loses one broker keeps accepting transactional writes.  With
``--sasl-plain`` the client listener requires that SASL/PLAIN login (the
brokers and controllers talk among themselves on plaintext listeners of their own).
As a library it can also accept further logins (``users``) and authorize every
request by Kafka's ACLs (``acls``), the ``sasl_plain`` login being a super user.

``KafkaCluster`` is the same thing as a library: the fault suite starts a cluster
with it and kills, pauses and restarts its nodes.
"""

from __future__ import annotations

import argparse
import base64
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

KAFKA_VERSION = "4.1.1"
LOG4J_VERSION = "2.24.3"  # the log4j2 that kafka_2.13 KAFKA_VERSION depends on: its slf4j binding
CACHE = Path(os.environ.get("TICDC_SINK_KAFKA_CACHE",
                            Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ticdc-sink"))
_HOST = "127.0.0.1"
# Two cores hold three of these and Spark: small heaps, the serial collector, and only the
# first JIT tier (startup in seconds, and no compiler threads competing with the tests).
JVM_OPTIONS = ["-Xms64m", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k",
               "-Djava.awt.headless=true"]
_STOP_GRACE_SECONDS = 15.0


class KafkaServerError(RuntimeError):
    """Kafka could not be fetched, formatted or started; the message is one line with what to do."""


class ToolMissing(KafkaServerError):
    """This machine lacks ``java`` or ``mvn``: tests that need real Kafka skip, saying so."""


def _tool(name: str, hint: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise ToolMissing(f"`{name}` is not on PATH; {hint}")
    return path


def kafka_classpath(version: str = KAFKA_VERSION, cache: Path = CACHE) -> str:
    """The broker's classpath, fetched once with ``mvn`` into ``cache`` (later runs need no network)."""
    lib = cache / f"kafka_2.13-{version}" / "lib"
    if not (lib / ".complete").exists():
        mvn = _tool("mvn", "install Apache Maven to fetch Kafka's jars from Maven Central")
        work = Path(tempfile.mkdtemp(prefix="ticdc-sink-kafka-fetch-"))
        try:
            (work / "pom.xml").write_text(textwrap.dedent(f"""\
                <project xmlns="http://maven.apache.org/POM/4.0.0">
                  <modelVersion>4.0.0</modelVersion>
                  <groupId>ticdc-sink</groupId><artifactId>kafka-server</artifactId><version>1</version>
                  <dependencies>
                    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId>
                      <version>{version}</version></dependency>
                    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId>
                      <version>{LOG4J_VERSION}</version></dependency>
                  </dependencies>
                </project>"""))
            fetched = work / "lib"
            result = subprocess.run([mvn, "-q", "-B", "-f", str(work / "pom.xml"), "dependency:copy-dependencies",
                                     f"-DoutputDirectory={fetched}", "-DincludeScope=runtime"],
                                    capture_output=True, text=True)
            if result.returncode != 0:
                last = (result.stdout + result.stderr).strip().splitlines()[-1:] or ["no output"]
                raise KafkaServerError(f"mvn could not fetch org.apache.kafka:kafka_2.13:{version} "
                                       f"({last[0].strip()}); check that Maven Central is reachable")
            (fetched / ".complete").touch()
            lib.parent.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(lib, ignore_errors=True)
            shutil.move(str(fetched), lib)  # whole or not at all: a run cut short fetches again
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return str(lib / "*")  # the JVM expands it to every jar of the folder


def free_port() -> int:
    with socket.socket() as s:
        s.bind((_HOST, 0))
        return s.getsockname()[1]


@dataclass
class Node:
    """One combined broker and controller."""

    node_id: int
    port: int  # the clients' listener
    internal_port: int  # brokers among themselves
    controller_port: int
    directory: Path
    process: subprocess.Popen | None = None

    @property
    def address(self) -> str:
        return f"{_HOST}:{self.port}"

    @property
    def log(self) -> Path:
        return self.directory / "server.log"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


@dataclass
class KafkaCluster:
    """A KRaft cluster of ``brokers`` combined nodes on loopback, in a temporary folder of its own."""

    brokers: int = 1
    sasl_plain: tuple[str, str] | None = None  # (user, password) the client listener requires
    users: dict[str, str] = field(default_factory=dict)  # further logins the listener accepts: user -> password
    acls: bool = False  # requests are authorized by ACLs (StandardAuthorizer); sasl_plain's user may do anything
    startup_timeout: float = 60.0
    nodes: list[Node] = field(default_factory=list)
    directory: Path | None = None

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(node.address for node in self.nodes)

    @property
    def client_settings(self) -> dict:
        """librdkafka's settings for this cluster's client listener."""
        settings = {"bootstrap.servers": self.bootstrap_servers}
        if self.sasl_plain:
            settings.update({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                             "sasl.username": self.sasl_plain[0], "sasl.password": self.sasl_plain[1]})
        return settings

    def start(self) -> "KafkaCluster":
        java = _tool("java", "install a Java 17 runtime (Kafka's broker runs on the JVM)")
        classpath = kafka_classpath()
        self.directory = Path(tempfile.mkdtemp(prefix="ticdc-sink-kafka-"))
        try:
            self._configure()
            cluster_id = new_cluster_id()
            formats = [subprocess.Popen([java, *JVM_OPTIONS, "-cp", classpath, "kafka.tools.StorageTool", "format",
                                         "-t", cluster_id, "-c", str(node.directory / "server.properties")],
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                       for node in self.nodes]
            for node, formatting in zip(self.nodes, formats):
                output, _ = formatting.communicate()
                if formatting.returncode != 0:
                    raise KafkaServerError(f"formatting node {node.node_id}'s storage failed: "
                                           f"{output.strip().splitlines()[-1:]}")
            for node in self.nodes:
                self.start_node(node, java, classpath)
            self.wait_until_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _configure(self) -> None:
        if self.acls and not self.sasl_plain:
            raise KafkaServerError("acls need a sasl_plain login: the super user that grants them")
        count, replicas = self.brokers, min(self.brokers, 3)
        min_isr = 2 if self.brokers >= 3 else 1
        self.nodes = [Node(i, free_port(), free_port(), free_port(), self.directory / f"node-{i}")
                      for i in range(1, count + 1)]
        voters = ",".join(f"{n.node_id}@{_HOST}:{n.controller_port}" for n in self.nodes)
        client = "SASL_PLAINTEXT" if self.sasl_plain else "PLAINTEXT"
        for node in self.nodes:
            (node.directory / "data").mkdir(parents=True)
            settings = {
                "process.roles": "broker,controller",
                "node.id": node.node_id,
                "controller.quorum.voters": voters,
                "controller.listener.names": "CONTROLLER",
                "listeners": f"CLIENT://{_HOST}:{node.port},INTERNAL://{_HOST}:{node.internal_port},"
                             f"CONTROLLER://{_HOST}:{node.controller_port}",
                "advertised.listeners": f"CLIENT://{_HOST}:{node.port},INTERNAL://{_HOST}:{node.internal_port}",
                "listener.security.protocol.map": f"CLIENT:{client},INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
                "inter.broker.listener.name": "INTERNAL",
                "log.dirs": node.directory / "data",
                "num.partitions": 1,
                "default.replication.factor": replicas,
                "min.insync.replicas": min_isr,
                "offsets.topic.replication.factor": replicas,
                "offsets.topic.num.partitions": 10,
                "transaction.state.log.replication.factor": replicas,
                "transaction.state.log.min.isr": min_isr,
                "transaction.state.log.num.partitions": 10,
                "share.coordinator.state.topic.replication.factor": replicas,
                "share.coordinator.state.topic.min.isr": min_isr,
                "group.initial.rebalance.delay.ms": 0,
                "num.network.threads": 2,
                "num.io.threads": 2,
                "background.threads": 2,
                "num.recovery.threads.per.data.dir": 1,
                "log.cleaner.threads": 1,
            }
            if self.sasl_plain:
                user, password = self.sasl_plain
                logins = "".join(f' user_{name}="{secret}"' for name, secret in {user: password, **self.users}.items())
                settings.update({
                    "sasl.enabled.mechanisms": "PLAIN",
                    "listener.name.client.plain.sasl.jaas.config":
                        "org.apache.kafka.common.security.plain.PlainLoginModule required "
                        f'username="{user}" password="{password}"{logins};',
                })
            if self.acls:
                # The plaintext listeners between the nodes are ANONYMOUS: they must stay super users too.
                settings.update({"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                                 "super.users": f"User:ANONYMOUS;User:{self.sasl_plain[0]}"})
            (node.directory / "server.properties").write_text(
                "".join(f"{key}={value}\n" for key, value in settings.items()))
            (node.directory / "log4j2.properties").write_text(_LOG4J2.format(log=node.log))

    def start_node(self, node: Node, java: str | None = None, classpath: str | None = None) -> None:
        """Start (or restart, with its data) one node."""
        java = java or _tool("java", "install a Java 17 runtime")
        classpath = classpath or kafka_classpath()
        with open(node.directory / "stdout.log", "ab") as out:
            node.process = subprocess.Popen(
                [java, *JVM_OPTIONS, f"-Dlog4j2.configurationFile={node.directory / 'log4j2.properties'}",
                 "-cp", classpath, "kafka.Kafka", str(node.directory / "server.properties")],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def wait_until_ready(self, timeout: float | None = None) -> None:
        """Until the cluster's metadata lists every running broker (and so a controller has them all)."""
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + (timeout or self.startup_timeout)
        admin = AdminClient({**self.client_settings, "log_level": 0, "logger": _quiet()})
        expected = {n.node_id for n in self.nodes if n.running}
        while True:
            for node in self.nodes:
                if node.process is not None and node.process.poll() is not None and node.node_id in expected:
                    raise KafkaServerError(f"Kafka node {node.node_id} exited with status {node.process.returncode} "
                                           f"while starting; its log: {node.log} and {node.directory}/stdout.log")
            try:
                if set(admin.list_topics(timeout=2).brokers) >= expected:
                    return
            except Exception:  # not answering yet
                pass
            if time.monotonic() > deadline:
                raise KafkaServerError(f"Kafka did not answer metadata with brokers {sorted(expected)} within "
                                       f"{timeout or self.startup_timeout:.0f} s; logs in {self.directory}")
            time.sleep(0.3)

    def node(self, node_id: int) -> Node:
        return next(n for n in self.nodes if n.node_id == node_id)

    def kill(self, node_id: int) -> None:
        """``kill -9`` a node: no shutdown, no last writes."""
        node = self.node(node_id)
        node.process.kill()
        node.process.wait()

    def pause(self, node_id: int) -> None:
        self.node(node_id).process.send_signal(signal.SIGSTOP)

    def resume(self, node_id: int) -> None:
        self.node(node_id).process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        """Stop every JVM (politely, then with SIGKILL) and remove the folder. Idempotent."""
        for node in self.nodes:
            if node.running:
                node.process.send_signal(signal.SIGCONT)  # a paused node cannot stop otherwise
                node.process.terminate()
        deadline = time.monotonic() + _STOP_GRACE_SECONDS
        for node in self.nodes:
            if node.process is None:
                continue
            try:
                node.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                node.process.kill()
                node.process.wait()
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None

    def __enter__(self) -> "KafkaCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


_LOG4J2 = """\
status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.file.ref = file
"""


def new_cluster_id() -> str:
    """A cluster id as Kafka makes them: a random UUID in URL-safe base64 without padding, never starting with
    '-' (command lines would read it as an option)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def _quiet():
    import logging

    logger = logging.getLogger("ticdc_sink.kafka_server.librdkafka")
    logger.addHandler(logging.NullHandler())
    logger.propagate = False
    return logger


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python integration/kafka_server.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--brokers", type=int, default=1, help="combined broker+controller nodes (default 1)")
    parser.add_argument("--sasl-plain", metavar="USER:PASSWORD",
                        help="the client listener requires this SASL/PLAIN login")
    args = parser.parse_args(argv)
    if args.brokers < 1:
        parser.error("--brokers must be at least 1")
    login = None
    if args.sasl_plain:
        user, _, password = args.sasl_plain.partition(":")
        if not user or not password:
            parser.error("--sasl-plain takes USER:PASSWORD")
        login = (user, password)
    stopping = []

    def stop(signum, frame):
        stopping.append(signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    cluster = KafkaCluster(args.brokers, login)
    try:
        cluster.start()
    except (KafkaServerError, ModuleNotFoundError) as e:
        print(f"kafka_server: {e}", file=sys.stderr)
        return 1
    try:
        print(cluster.bootstrap_servers, flush=True)
        print(f"kafka_server: Apache Kafka {KAFKA_VERSION}, {args.brokers} node(s) in {cluster.directory}; "
              "stop with SIGTERM or Ctrl-C", file=sys.stderr, flush=True)
        reported = set()
        while not stopping:
            for node in cluster.nodes:
                if not node.running and node.node_id not in reported:
                    reported.add(node.node_id)
                    print(f"kafka_server: node {node.node_id} exited with status {node.process.returncode}; "
                          f"log: {node.log}", file=sys.stderr, flush=True)
            time.sleep(0.2)
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
