"""What the bench's own processes use: CPU seconds per kind (the Python workers, the Spark JVM, the broker) and
the Python workers' peak RSS, read from /proc, so that a job's cost is split by who paid it."""

from __future__ import annotations

import os
import threading

from common import CORES, timed

RSS = "peak worker RSS"  # how the name of a memory run's row begins
_PROCESS_KINDS = ((b"tansu", "broker"), (b"kafka.Kafka", "broker"), (b"org.apache.spark", "JVM"),
                  (b"pyspark.daemon", "Python"), (b"multiprocessing", "Python"))


def own_processes() -> set[str]:
    """The pids of this process and its descendants (Spark's JVM and workers, the brokers it started): another
    user's Spark or Kafka on the machine is not measured."""
    parents = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                parents[pid] = f.read().rsplit(")", 1)[1].split()[1]
        except OSError:
            continue
    own, found = set(), {str(os.getpid())}
    while found:
        own |= found
        found = {pid for pid, parent in parents.items() if parent in found} - own
    return own


def cpu_by_process() -> dict[tuple[str, str], tuple[str, float]]:
    """(pid, start time) -> (kind, CPU seconds of its own so far) for the live processes of each kind."""
    tick = os.sysconf("SC_CLK_TCK")
    found = {}
    for pid in own_processes():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                command = f.read()
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        kind = next((name for marker, name in _PROCESS_KINDS if marker in command), None)
        if kind:
            found[(pid, fields[19])] = (kind, (int(fields[11]) + int(fields[12])) / tick)  # utime + stime
    return found


def broker_cpu() -> float:
    """The CPU seconds the live broker processes have used so far."""
    return sum(seconds for kind, seconds in cpu_by_process().values() if kind == "broker")


class CpuMeter:
    """CPU seconds per kind of process (broker, Spark JVM, Python workers) used during a block.

    Every process is sampled each half second, so one that exits during the block (pyspark's daemon
    ends idle workers) counts up to its last sample instead of vanishing from the sum.
    """

    def __enter__(self) -> CpuMeter:
        self._first = cpu_by_process()
        self._last = dict(self._first)
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.5):
            self._last.update(cpu_by_process())

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._sampler.join()
        self._last.update(cpu_by_process())

    def used(self) -> dict[str, float]:
        totals = dict.fromkeys(("Python", "JVM", "broker"), 0.0)
        for process, (kind, seconds) in self._last.items():
            totals[kind] += seconds - self._first.get(process, (kind, 0.0))[1]
        return totals


def cpu_note(used: dict[str, float], wall: float) -> str:
    total = sum(used.values())
    return (f"CPU s: Python {used['Python']:.1f}, JVM {used['JVM']:.1f}, broker {used['broker']:.1f} "
            f"= {total / wall / CORES * 100:.0f}% of {CORES} cores")


def timed_with_cpu(action) -> tuple[float, dict[str, float]]:
    with CpuMeter() as meter:
        seconds = timed(action)
    return seconds, meter.used()


class WorkerMemory:
    """Samples the RSS of Spark's Python workers (processes of ``pyspark.daemon``) that this process started."""

    def __init__(self, interval: float = 0.2):
        self.interval, self.peak_kb = interval, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for pid in own_processes():
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        if b"pyspark.daemon" not in f.read():
                            continue
                    with open(f"/proc/{pid}/status") as f:
                        for line in f:
                            if line.startswith("VmHWM:"):
                                self.peak_kb = max(self.peak_kb, int(line.split()[1]))
                except OSError:
                    continue
            self._stop.wait(self.interval)

    def __enter__(self) -> "WorkerMemory":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def peak(self) -> str:
        """The peak as the results show it."""
        return f"{self.peak_kb / 1024:.0f} MB"
