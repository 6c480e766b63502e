"""A Spark Connect server on loopback, from the installed pyspark: what Databricks' serverless and shared
clusters put between a notebook and Spark.

pyspark ships the server (``SparkConnectServer`` in its jars, started by ``bin/spark-submit`` as
``sbin/start-connect-server.sh`` starts it).  It runs in a JVM of its own, and its Python workers run
``python`` (the interpreter that has the sink): the client holds no SparkContext, and finds the
``ticdc`` source, plans it and runs it only through the server.  A free port of its own, not Connect's
15002, so that runs side by side do not meet.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

_HOST = "127.0.0.1"
_START_TIMEOUT_SECONDS = 120.0
_STOP_GRACE_SECONDS = 10.0


class ConnectServerError(RuntimeError):
    """The server could not start; the message ends with its log's last lines."""


class ConnectServer:
    """``with ConnectServer(python) as server:`` a server at ``server.url`` until the block ends."""

    def __init__(self, python: str, master: str = "local[2,3]", conf: dict[str, str] | None = None):
        import pyspark

        self.spark_home = Path(pyspark.__file__).resolve().parent
        self.python, self.master, self.conf = python, master, conf or {}
        self.directory = Path(tempfile.mkdtemp(prefix="ticdc-sink-connect-"))
        self.log = self.directory / "server.log"
        self.port = _free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"sc://{_HOST}:{self.port}"

    def start(self) -> "ConnectServer":
        conf = {"spark.connect.grpc.binding.address": _HOST, "spark.connect.grpc.binding.port": str(self.port),
                "spark.ui.enabled": "false", **self.conf}
        command = [str(self.spark_home / "bin" / "spark-submit"), "--class",
                   "org.apache.spark.sql.connect.service.SparkConnectServer", "--name", "ticdc-sink-tests",
                   "--master", self.master, *[arg for k, v in conf.items() for arg in ("--conf", f"{k}={v}")]]
        # SPARK_CONNECT_MODE=0: spark-submit itself starts no client, as start-connect-server.sh has it.
        env = {**os.environ, "SPARK_HOME": str(self.spark_home), "SPARK_CONNECT_MODE": "0",
               "PYSPARK_PYTHON": self.python, "SPARK_LOCAL_IP": _HOST}
        with self.log.open("wb") as out:
            # A session of its own: stopping it reaches the Python workers it started.
            self.process = subprocess.Popen(command, env=env, cwd=self.directory, stdin=subprocess.DEVNULL,
                                            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self._wait_until_listening()
        return self

    def _wait_until_listening(self) -> None:
        deadline = time.monotonic() + _START_TIMEOUT_SECONDS
        while True:
            if self.process.poll() is not None:
                raise self._failure(f"exited with status {self.process.returncode} while starting")
            try:
                socket.create_connection((_HOST, self.port), timeout=1).close()
                return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise self._failure(f"did not listen on {self.url} within {_START_TIMEOUT_SECONDS:.0f} s")
            time.sleep(0.5)

    def _failure(self, what: str) -> ConnectServerError:
        tail = "\n".join(self.log.read_text(errors="replace").splitlines()[-20:])
        return ConnectServerError(f"the Spark Connect server {what}; the end of its log:\n{tail}")

    def stop(self) -> None:
        """The server and its Python workers, then its folder."""
        if self.process is not None:
            if self.process.poll() is None:
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(_STOP_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(self.process.pid, signal.SIGKILL)  # what is left of its session: Python workers
            except ProcessLookupError:
                pass
            self.process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> "ConnectServer":
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((_HOST, 0))
        return s.getsockname()[1]
