"""A standalone Spark cluster on loopback, from the installed pyspark: where the cluster tests run.

    python integration/spark_cluster.py [--workers N]

starts a Master and N Workers with the installed pyspark's own ``bin/spark-class``
(pyspark ships the jars and scripts a standalone cluster needs), each on free
loopback ports with a small heap and one core, waits until the Master lists
every Worker as alive, and prints the master URL (``spark://127.0.0.1:PORT``)
as its first line on stdout.  It runs until SIGTERM or SIGINT, then stops every
JVM it started (the Workers' executors with them) and removes its folder.

Executors run in JVMs of their own, with Python workers of their own: what a
cluster has and ``local[N]`` does not.  ``SparkCluster`` is the same thing as a
library, for tests that kill executors.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from processes import command, parents

_HOST = "127.0.0.1"
WORKER_MEMORY = "1g"  # what a Worker offers its executors: two of them fit two cores beside Kafka and the driver
DAEMON_MEMORY = "256m"  # the Master's and each Worker's own heap
_START_TIMEOUT_SECONDS = 90.0
_STOP_GRACE_SECONDS = 10.0


class SparkClusterError(RuntimeError):
    """The cluster could not start; the message is one line with what to do."""


def spark_home() -> Path:
    """The installed pyspark's folder: it holds ``bin/spark-class`` and the jars."""
    import pyspark

    home = Path(pyspark.__file__).resolve().parent
    if not (home / "bin" / "spark-class").exists():
        raise SparkClusterError(f"pyspark at {home} has no bin/spark-class: install pyspark from PyPI")
    return home


def free_port() -> int:
    with socket.socket() as s:
        s.bind((_HOST, 0))
        return s.getsockname()[1]


@dataclass
class Daemon:
    """A Master or Worker JVM and its log."""

    name: str
    process: subprocess.Popen
    log: Path

    @property
    def running(self) -> bool:
        return self.process.poll() is None


@dataclass
class SparkCluster:
    workers: int = 1
    directory: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="ticdc-sink-spark-")))
    port: int = field(default_factory=free_port)
    ui_port: int = field(default_factory=free_port)
    daemons: list[Daemon] = field(default_factory=list)

    @property
    def master_url(self) -> str:
        return f"spark://{_HOST}:{self.port}"

    def start(self) -> "SparkCluster":
        """The Master, then the Workers; returns once the Master lists every Worker as alive."""
        if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
            raise SparkClusterError("no java on PATH and no JAVA_HOME: install Java 17")
        self._daemon("master", "org.apache.spark.deploy.master.Master",
                     "--host", _HOST, "--port", str(self.port), "--webui-port", str(self.ui_port))
        for n in range(self.workers):
            work = self.directory / f"worker-{n}"
            work.mkdir()
            self._daemon(f"worker-{n}", "org.apache.spark.deploy.worker.Worker",
                         "--host", _HOST, "--port", str(free_port()), "--webui-port", str(free_port()),
                         "--cores", "1", "--memory", WORKER_MEMORY, "--work-dir", str(work), self.master_url)
        self._wait_for_workers()
        return self

    def _daemon(self, name: str, main_class: str, *args: str) -> None:
        log = self.directory / f"{name}.log"
        env = {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
               "SPARK_LOCAL_IP": _HOST, "SPARK_LOG_DIR": str(self.directory), "SPARK_PID_DIR": str(self.directory)}
        with log.open("wb") as out:
            # A session of its own: stopping the cluster reaches the executors the Worker started.
            process = subprocess.Popen([str(spark_home() / "bin" / "spark-class"), main_class, *args], env=env,
                                       stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                       start_new_session=True)
        self.daemons.append(Daemon(name, process, log))

    def alive_workers(self) -> int:
        """How many Workers the Master lists as alive (its web UI's JSON)."""
        try:
            with urllib.request.urlopen(f"http://{_HOST}:{self.ui_port}/json/", timeout=2) as response:
                state = json.load(response)
        except (OSError, ValueError):
            return 0
        return sum(1 for worker in state.get("workers", []) if worker.get("state") == "ALIVE")

    def _wait_for_workers(self) -> None:
        deadline = time.monotonic() + _START_TIMEOUT_SECONDS
        while self.alive_workers() < self.workers:
            exited = next((d for d in self.daemons if not d.running), None)
            if exited is not None:
                raise SparkClusterError(f"the {exited.name} exited with status {exited.process.returncode} "
                                        f"while starting; its log: {exited.log}")
            if time.monotonic() > deadline:
                raise SparkClusterError(f"{self.alive_workers()} of {self.workers} Workers registered within "
                                        f"{_START_TIMEOUT_SECONDS:.0f} s; logs in {self.directory}")
            time.sleep(0.5)

    def executor_pids(self) -> list[int]:
        """The executor JVMs the Workers started (``CoarseGrainedExecutorBackend``), oldest first."""
        workers = {d.process.pid for d in self.daemons if d.name.startswith("worker")}
        return sorted(pid for pid, parent in parents().items()
                      if parent in workers and "CoarseGrainedExecutorBackend" in command(pid))

    def stop(self) -> None:
        """Every JVM this cluster started, the Workers' executors with them; then its folder."""
        for daemon in reversed(self.daemons):
            if daemon.running:
                os.killpg(daemon.process.pid, signal.SIGTERM)
        deadline = time.monotonic() + _STOP_GRACE_SECONDS
        for daemon in reversed(self.daemons):
            try:
                daemon.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(daemon.process.pid, signal.SIGKILL)  # what is left of its session: executors, Python
            except ProcessLookupError:
                pass
            daemon.process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> "SparkCluster":
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python integration/spark_cluster.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=1, help="Workers, one core each (default 1)")
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    stopping = []
    signal.signal(signal.SIGTERM, lambda signum, frame: stopping.append(signum))
    signal.signal(signal.SIGINT, lambda signum, frame: stopping.append(signum))
    cluster = SparkCluster(args.workers)
    try:
        cluster.start()
    except SparkClusterError as e:
        cluster.stop()
        print(f"spark_cluster: {e}", file=sys.stderr)
        return 1
    try:
        print(cluster.master_url, flush=True)
        print(f"spark_cluster: pyspark's standalone Master and {args.workers} Worker(s) in {cluster.directory} "
              f"(web UI http://{_HOST}:{cluster.ui_port}); stop with SIGTERM or Ctrl-C", file=sys.stderr, flush=True)
        reported = set()
        while not stopping:
            for daemon in cluster.daemons:
                if not daemon.running and daemon.name not in reported:
                    reported.add(daemon.name)
                    print(f"spark_cluster: the {daemon.name} exited with status {daemon.process.returncode}; "
                          f"log: {daemon.log}", file=sys.stderr, flush=True)
            time.sleep(0.2)
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
