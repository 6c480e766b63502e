"""The fault tests' view of this machine's processes, from /proc: who started whom, and who talks to Kafka.

Faults are aimed at one process (a task's Python worker, an executor, the
driver's commit), which the tests find by its place among their own processes
and by its connections to the brokers, never by a name that other runs share.
"""

from __future__ import annotations

import os
from pathlib import Path

_PROC = Path("/proc")
_ESTABLISHED = "01"


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command's name (state, parent, group, session, ...)."""
    try:
        return (_PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None  # gone


def parents() -> dict[int, int]:
    """Every process and its parent."""
    found = {}
    for entry in _PROC.iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) is not None:
            found[int(entry.name)] = int(fields[1])
    return found


def descendants(root: int) -> set[int]:
    """The processes ``root`` started, and theirs, and so on."""
    children: dict[int, list[int]] = {}
    for pid, parent in parents().items():
        children.setdefault(parent, []).append(pid)
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def in_session(session: int) -> set[int]:
    """The live processes of a session: what a process started with ``start_new_session`` and all it started,
    even those that made process groups of their own (pyspark's daemons)."""
    return {pid for pid in parents()
            if (fields := _stat(pid)) is not None and int(fields[3]) == session and fields[0] != "Z"}


def command(pid: int) -> str:
    try:
        return (_PROC / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def connected_to(ports: set[int], among: set[int]) -> set[int]:
    """Those of ``among`` with an established TCP connection to one of ``ports`` on this machine."""
    sockets = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (_PROC / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if int(fields[2].rsplit(":", 1)[1], 16) in ports and fields[3] == _ESTABLISHED:
                sockets.add(f"socket:[{fields[9]}]")
    found = set()
    for pid in among:
        try:
            descriptors = list((_PROC / str(pid) / "fd").iterdir())
        except OSError:  # gone, or not ours to read
            continue
        for fd in descriptors:
            try:
                if os.readlink(fd) in sockets:
                    found.add(pid)
                    break
            except OSError:  # closed meanwhile (librdkafka opens and closes its own)
                continue
    return found
