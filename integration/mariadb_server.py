"""A throwaway MariaDB server for the tests: its own data folder, a free loopback port, no grant tables.

    with MariaDB() as server:           # MariaDB.missing() says why it cannot run here, or None
        server.sql("CREATE DATABASE shop")
        server.port                     # jdbc:mysql://127.0.0.1:PORT/shop, any user and password

It needs Debian's ``mariadb-server`` (``mariadbd``, ``mariadb-install-db`` and the ``mariadb`` client), and
touches nothing of an installed server: ``mariadb-install-db`` makes a data folder in a temporary folder,
``mariadbd --no-defaults`` serves it on 127.0.0.1 only, with ``--skip-grant-tables`` (every login is let in),
until ``stop`` removes the folder.  Run as root, it runs as the package's ``mysql`` user.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

PROGRAMS = ("mariadbd", "mariadb-install-db", "mariadb")


def _program(name: str) -> str | None:
    return shutil.which(name) or next((str(p) for d in ("/usr/sbin", "/usr/bin")
                                       if (p := Path(d) / name).exists()), None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_as() -> str | None:
    """The user the server runs as: the package's ``mysql`` user under root (mariadbd refuses root), else ours."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam("mysql").pw_name
    except KeyError:
        return "root"


class MariaDB:
    def __init__(self, time_zone: str = "SYSTEM"):
        self.time_zone = time_zone
        self.folder: Path | None = None
        self.process: subprocess.Popen | None = None
        self.port = 0

    @staticmethod
    def missing() -> str | None:
        absent = [name for name in PROGRAMS if _program(name) is None]
        if absent:
            return (f"MariaDB is not installed ({', '.join(absent)} not found): apt-get install mariadb-server "
                    "(.ci/run installs it)")
        return None

    def start(self) -> MariaDB:
        user = _run_as()
        self.folder = Path(tempfile.mkdtemp(prefix="ticdc-sink-mariadb-"))
        if user not in (None, "root"):
            shutil.chown(self.folder, user)
        data = self.folder / "data"
        as_user = [f"--user={user}"] if user else []
        install = subprocess.run([_program("mariadb-install-db"), "--no-defaults", f"--datadir={data}", *as_user,
                                  "--auth-root-authentication-method=normal", "--skip-test-db"],
                                 capture_output=True, text=True, timeout=120)
        if install.returncode:
            raise RuntimeError(f"mariadb-install-db failed: {install.stderr[-2000:] or install.stdout[-2000:]}")
        self.port = _free_port()
        log = self.folder / "error.log"
        self.process = subprocess.Popen(
            [_program("mariadbd"), "--no-defaults", *as_user, f"--datadir={data}", f"--port={self.port}",
             "--bind-address=127.0.0.1", f"--socket={self.folder / 'mariadb.sock'}",
             f"--pid-file={self.folder / 'mariadb.pid'}", f"--log-error={log}", "--skip-grant-tables",
             f"--default-time-zone={self.time_zone}", "--innodb-buffer-pool-size=32M", "--skip-log-bin"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
                self.stop()
                raise RuntimeError(f"mariadbd exited with {self.process.returncode}: {tail}")
            if self._answers():
                return self
            time.sleep(0.3)
        self.stop()
        raise RuntimeError("mariadbd did not answer within 60 s")

    def _answers(self) -> bool:
        return subprocess.run(self._client("SELECT 1"), capture_output=True, timeout=30).returncode == 0

    def _client(self, statements: str, database: str = "") -> list[str]:
        return [_program("mariadb"), "--no-defaults", "--protocol=tcp", "-h127.0.0.1", f"-P{self.port}", "-uroot",
                "--batch", "--raw", "--skip-column-names", *([database] if database else []), "-e", statements]

    def sql(self, statements: str, database: str = "") -> list[list[str | None]]:
        """Run statements with the ``mariadb`` client; the last one's rows, each value as text (NULL: None)."""
        run = subprocess.run(self._client(statements, database), capture_output=True, text=True, timeout=60)
        if run.returncode:
            raise RuntimeError(f"mariadb failed: {run.stderr.strip()}")
        return [[None if v == "NULL" else v for v in line.split("\t")] for line in run.stdout.splitlines()]

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def __enter__(self) -> MariaDB:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
