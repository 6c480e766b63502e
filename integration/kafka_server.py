"""Real Apache Kafka on loopback, from Maven Central: what the guarantees and fault tests run against.

    python integration/kafka_server.py [--brokers N] [--tls | --tls-client-auth]
        [--sasl-plain USER:PASSWORD | --sasl-scram USER:PASSWORD | --sasl-oauthbearer [CLIENT_ID:SECRET]]

fetches Apache Kafka's broker (``org.apache.kafka:kafka_2.13`` at ``KAFKA_VERSION``,
with its runtime dependencies and a log4j2 binding) with ``mvn`` into a cache that
survives runs, formats KRaft storage in a temporary folder, starts one combined
broker and controller per node on free loopback ports, waits until the cluster
answers metadata with every broker, and prints the bootstrap servers as its
first line on stdout.  It runs until SIGTERM or SIGINT, then stops every JVM it
started (and the token endpoint, if any) and removes its folder.

With three or more brokers, new topics and the internal ones (consumer offsets,
transaction state) get replication factor 3 and ``min.insync.replicas=2``, so a
cluster that loses one broker keeps accepting transactional writes.

The flags secure the client listener only; the brokers and controllers talk among
themselves on plaintext listeners of their own.  One SASL mechanism at a time; with
TLS it is SASL_SSL, without it SASL_PLAINTEXT.

- ``--tls``: TLS with a broker certificate for IP 127.0.0.1 and DNS localhost,
  signed by a CA made at start (``tests/certificates.py``).
- ``--tls-client-auth``: ``--tls`` whose brokers also require a client certificate
  signed by that CA (``ssl.client.auth=required``); one is made, its key unencrypted.
- ``--sasl-plain USER:PASSWORD``: that SASL/PLAIN login.
- ``--sasl-scram USER:PASSWORD``: that SCRAM-SHA-512 login, written into the
  storage when it is formatted (the storage tool's ``--add-scram``).
- ``--sasl-oauthbearer [CLIENT_ID:SECRET]`` (default ``ticdc-sink:sink-secret``):
  OAUTHBEARER with RS256-signed JWTs, checked by Kafka's
  ``OAuthBearerValidatorCallbackHandler`` against the JWKS endpoint of a small
  identity provider in this process (``oauth_server.py``), whose token endpoint
  grants client_credentials to that client only.

stdout has one line per value, in this order, and a line only where its flag is given:

1. the bootstrap servers, ``127.0.0.1:PORT[,127.0.0.1:PORT...]`` (always);
2. the CA certificate's PEM path (``--tls`` or ``--tls-client-auth``): ``ssl.ca.location``;
3. the client certificate's PEM path (``--tls-client-auth``): ``ssl.certificate.location``;
4. the client key's PEM path (``--tls-client-auth``): ``ssl.key.location``;
5. the token endpoint's URL, ``http://127.0.0.1:PORT/token`` (``--sasl-oauthbearer``):
   ``sasl.oauthbearer.token.endpoint.url`` with ``sasl.oauthbearer.method=oidc``.

So ``--tls --sasl-oauthbearer`` prints three lines: bootstrap, CA, token endpoint.
The files live in the temporary folder and go with it.

``KafkaCluster`` is the same thing as a library: the fault suite starts a cluster
with it and kills, pauses and restarts its nodes, and its ``client_settings`` are
librdkafka's settings for whichever security it was given.  It can also accept
further logins of its SASL mechanism (``users``) and authorize every request by
Kafka's ACLs (``acls``), the SASL login being a super user.  For the failures a client must
report, its TLS brokers can also present a certificate that expired (``tls_server_certificate="expired"``) or
that names another host (``"other-host"``), which clients with ``client_settings`` refuse.
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

# Its sibling (found by name also where tests/shared_fixtures.py loads this file by its path) and the certificate
# maker, which the unit tests share; appended, so that neither folder shadows a module found before.
_HERE = Path(__file__).resolve().parent
sys.path.extend(str(folder) for folder in (_HERE, _HERE.parent / "tests"))
from oauth_server import AUDIENCE, ISSUER, TokenServer  # noqa: E402
from certificates import TlsFiles, make_tls_files  # noqa: E402

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
OAUTH_CLIENT = "ticdc-sink:sink-secret"  # --sasl-oauthbearer's client id and secret when it is given none


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
    users: dict[str, str] = field(default_factory=dict)  # further logins of the SASL mechanism: user -> password
    acls: bool = False  # requests are authorized by ACLs (StandardAuthorizer); the SASL login may do anything
    # The client listener's further security (at most one SASL mechanism; each works with or without TLS):
    tls: bool = field(default=False, kw_only=True)  # TLS with a certificate of a CA made at start (``ca``)
    tls_client_auth: bool = field(default=False, kw_only=True)  # TLS requiring a client certificate
    sasl_scram: tuple[str, str] | None = field(default=None, kw_only=True)  # (user, password): SCRAM-SHA-512
    sasl_oauthbearer: tuple[str, str] | None = field(default=None, kw_only=True)  # (client id, secret): tokens
    # The brokers' certificate (certificates.py): "loopback", or one clients refuse, "expired" or "other-host"
    tls_server_certificate: str = field(default="loopback", kw_only=True)
    startup_timeout: float = 60.0
    nodes: list[Node] = field(default_factory=list)
    directory: Path | None = None
    tls_files: TlsFiles | None = field(default=None, init=False)  # while running with TLS
    token_server: TokenServer | None = field(default=None, init=False)  # while running with OAUTHBEARER

    def __post_init__(self) -> None:
        self.tls = self.tls or self.tls_client_auth or self.tls_server_certificate != "loopback"

    @property
    def sasl_mechanism(self) -> str | None:
        logins = {"PLAIN": self.sasl_plain, "SCRAM-SHA-512": self.sasl_scram, "OAUTHBEARER": self.sasl_oauthbearer}
        return next((mechanism for mechanism, login in logins.items() if login), None)

    @property
    def sasl_login(self) -> tuple[str, str] | None:
        """The SASL login clients use (for OAUTHBEARER the token endpoint's client id and secret)."""
        return self.sasl_plain or self.sasl_scram or self.sasl_oauthbearer

    @property
    def security_protocol(self) -> str:
        return ("SASL_" if self.sasl_mechanism else "") + ("SSL" if self.tls else "PLAINTEXT")

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(node.address for node in self.nodes)

    @property
    def client_settings(self) -> dict:
        """librdkafka's settings for this cluster's client listener."""
        settings = {"bootstrap.servers": self.bootstrap_servers}
        if self.security_protocol != "PLAINTEXT":
            settings["security.protocol"] = self.security_protocol
        if self.sasl_oauthbearer:
            settings.update({"sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc",
                             "sasl.oauthbearer.client.id": self.sasl_oauthbearer[0],
                             "sasl.oauthbearer.client.secret": self.sasl_oauthbearer[1],
                             "sasl.oauthbearer.token.endpoint.url": self.token_endpoint})
        elif self.sasl_mechanism:
            settings.update({"sasl.mechanism": self.sasl_mechanism,
                             "sasl.username": self.sasl_login[0], "sasl.password": self.sasl_login[1]})
        if self.tls:
            settings["ssl.ca.location"] = str(self.ca)
        if self.tls_client_auth:
            settings.update({"ssl.certificate.location": str(self.tls_files.client_certificate),
                             "ssl.key.location": str(self.tls_files.client_key)})
        return settings

    @property
    def ca(self) -> Path | None:
        """The PEM certificate of the CA that signed the brokers' (and the client's) certificates."""
        return self.tls_files.ca if self.tls_files else None

    @property
    def token_endpoint(self) -> str | None:
        """The OAuth token endpoint (client_credentials grant) that issues the tokens the brokers accept."""
        return self.token_server.token_url if self.token_server else None

    def start(self) -> "KafkaCluster":
        java = _tool("java", "install a Java 17 runtime (Kafka's broker runs on the JVM)")
        classpath = kafka_classpath()
        self.directory = Path(tempfile.mkdtemp(prefix="ticdc-sink-kafka-"))
        try:
            self._configure()
            cluster_id = new_cluster_id()
            scram = [part for user, password in self._logins().items()
                     for part in ("--add-scram", f'SCRAM-SHA-512=[name="{user}",password="{password}"]')] \
                if self.sasl_scram else []
            formats = [subprocess.Popen([java, *JVM_OPTIONS, "-cp", classpath, "kafka.tools.StorageTool", "format",
                                         "-t", cluster_id, "-c", str(node.directory / "server.properties"), *scram],
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

    def _logins(self) -> dict[str, str]:
        return {self.sasl_login[0]: self.sasl_login[1], **self.users}

    def _configure(self) -> None:
        if sum(bool(login) for login in (self.sasl_plain, self.sasl_scram, self.sasl_oauthbearer)) > 1:
            raise KafkaServerError("choose one SASL mechanism: sasl_plain, sasl_scram or sasl_oauthbearer")
        if self.acls and not self.sasl_login:
            raise KafkaServerError("acls need a SASL login: the super user that grants them")
        if self.sasl_scram and any("," in part or '"' in part for login in self._logins().items() for part in login):
            raise KafkaServerError('SCRAM logins cannot hold "," or \'"\' (Kafka\'s storage tool splits on them)')
        if self.tls:
            self.tls_files = make_tls_files(self.directory / "tls", client=self.tls_client_auth,
                                            server=self.tls_server_certificate)
        if self.sasl_oauthbearer:
            self.token_server = TokenServer(self._logins(), _HOST).start()
        count, replicas = self.brokers, min(self.brokers, 3)
        min_isr = 2 if self.brokers >= 3 else 1
        self.nodes = [Node(i, free_port(), free_port(), free_port(), self.directory / f"node-{i}")
                      for i in range(1, count + 1)]
        voters = ",".join(f"{n.node_id}@{_HOST}:{n.controller_port}" for n in self.nodes)
        client = self.security_protocol
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
            if self.sasl_scram:
                settings.update({
                    "sasl.enabled.mechanisms": "SCRAM-SHA-512",
                    "listener.name.client.scram-sha-512.sasl.jaas.config":
                        "org.apache.kafka.common.security.scram.ScramLoginModule required;",
                })
            if self.sasl_oauthbearer:
                settings.update({
                    "sasl.enabled.mechanisms": "OAUTHBEARER",
                    "listener.name.client.oauthbearer.sasl.jaas.config":
                        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
                    "listener.name.client.oauthbearer.sasl.server.callback.handler.class":
                        "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
                    # Named, not left to the default: Kafka 4.1's DefaultJwtValidator, built without a key resolver
                    # by this handler, falls back to the client's validator, which checks no signature at all.
                    "sasl.oauthbearer.jwt.validator.class":
                        "org.apache.kafka.common.security.oauthbearer.BrokerJwtValidator",
                    "sasl.oauthbearer.jwks.endpoint.url": self.token_server.jwks_url,
                    "sasl.oauthbearer.expected.audience": AUDIENCE,
                    "sasl.oauthbearer.expected.issuer": ISSUER,
                })
            if self.tls:  # on the client listener only (ssl.client.auth of a SASL_SSL listener must be prefixed)
                settings.update({f"listener.name.client.{key}": value for key, value in {
                    "ssl.keystore.type": "PEM", "ssl.keystore.location": self.tls_files.server_keystore,
                    "ssl.truststore.type": "PEM", "ssl.truststore.location": self.tls_files.ca,
                    "ssl.client.auth": "required" if self.tls_client_auth else "none"}.items()})
            if self.acls:
                # The plaintext listeners between the nodes are ANONYMOUS: they must stay super users too.
                settings.update({"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                                 "super.users": f"User:ANONYMOUS;User:{self.sasl_login[0]}"})
            (node.directory / "server.properties").write_text(
                "".join(f"{key}={value}\n" for key, value in settings.items()))
            (node.directory / "log4j2.properties").write_text(_LOG4J2.format(log=node.log))

    def start_node(self, node: Node, java: str | None = None, classpath: str | None = None) -> None:
        """Start (or restart, with its data) one node."""
        java = java or _tool("java", "install a Java 17 runtime")
        classpath = classpath or kafka_classpath()
        # Kafka 4 fetches OAuth keys only from URLs this system property allows.
        allowed = [f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={self.token_server.jwks_url}"] \
            if self.token_server else []
        with open(node.directory / "stdout.log", "ab") as out:
            node.process = subprocess.Popen(
                [java, *JVM_OPTIONS, *allowed, f"-Dlog4j2.configurationFile={node.directory / 'log4j2.properties'}",
                 "-cp", classpath, "kafka.Kafka", str(node.directory / "server.properties")],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def wait_until_ready(self, timeout: float | None = None) -> None:
        """Until the cluster's metadata lists every running broker (and so a controller has them all)."""
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + (timeout or self.startup_timeout)
        # A certificate made to be refused is not checked here: the brokers' answer is.
        unchecked = {"enable.ssl.certificate.verification": False} if self.tls_server_certificate != "loopback" else {}
        admin = AdminClient({**self.client_settings, **unchecked, "log_level": 0, "logger": _quiet()})
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
        if self.token_server is not None:
            self.token_server.stop()
            self.token_server = None
        self.tls_files = None
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
    sasl = parser.add_mutually_exclusive_group()
    sasl.add_argument("--sasl-plain", metavar="USER:PASSWORD",
                      help="the client listener requires this SASL/PLAIN login")
    sasl.add_argument("--sasl-scram", metavar="USER:PASSWORD",
                      help="the client listener requires this SCRAM-SHA-512 login")
    sasl.add_argument("--sasl-oauthbearer", metavar="CLIENT_ID:SECRET", nargs="?", const=OAUTH_CLIENT,
                      help="the client listener requires OAUTHBEARER tokens, which a token endpoint started here "
                           f"issues to this client (default {OAUTH_CLIENT})")
    parser.add_argument("--tls", action="store_true", help="the client listener is TLS; prints the CA's PEM path")
    parser.add_argument("--tls-client-auth", action="store_true",
                        help="--tls requiring a client certificate; prints its PEM path and its key's")
    args = parser.parse_args(argv)
    if args.brokers < 1:
        parser.error("--brokers must be at least 1")

    def login(flag: str, value: str | None) -> tuple[str, str] | None:
        if value is None:
            return None
        user, _, password = value.partition(":")
        if not user or not password:
            parser.error(f"{flag} takes {'CLIENT_ID:SECRET' if flag == '--sasl-oauthbearer' else 'USER:PASSWORD'}")
        return user, password

    stopping = []

    def stop(signum, frame):
        stopping.append(signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    cluster = KafkaCluster(args.brokers, login("--sasl-plain", args.sasl_plain), tls=args.tls,
                           tls_client_auth=args.tls_client_auth, sasl_scram=login("--sasl-scram", args.sasl_scram),
                           sasl_oauthbearer=login("--sasl-oauthbearer", args.sasl_oauthbearer))
    try:
        cluster.start()
    except (KafkaServerError, ModuleNotFoundError) as e:
        print(f"kafka_server: {e}", file=sys.stderr)
        return 1
    try:
        lines = [cluster.bootstrap_servers]
        if cluster.tls:
            lines.append(cluster.ca)
        if cluster.tls_client_auth:
            lines += [cluster.tls_files.client_certificate, cluster.tls_files.client_key]
        if cluster.sasl_oauthbearer:
            lines.append(cluster.token_endpoint)
        print(*lines, sep="\n", flush=True)
        mechanism = f" ({cluster.sasl_mechanism})" if cluster.sasl_mechanism else ""
        print(f"kafka_server: Apache Kafka {KAFKA_VERSION}, {args.brokers} node(s) in {cluster.directory}, "
              f"clients on {cluster.security_protocol}{mechanism}; stop with SIGTERM or Ctrl-C",
              file=sys.stderr, flush=True)
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
