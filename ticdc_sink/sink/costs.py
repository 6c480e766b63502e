"""Where a task's CPU goes: the Python thread's time per stage of the pipeline, and librdkafka's threads.

On a worker the Python thread, the JVM and the brokers share the cores, so a
row's microseconds of CPU are what bounds throughput.  A task's stages are laps
of one clock (``time.thread_time``, a few calls per Arrow batch): what the
thread spent since the previous lap goes to the stage just finished.  The
progress log, the driver's summary of a batch and the benchmark read them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

# In pipeline order: taking the next Arrow batch from Spark, the input contract (ChangeBatch), the topic and
# partition of every row, the codec (and the size check), and handing messages to librdkafka and serving its
# delivery reports.
STAGES = ("receive", "input", "dispatch", "encode", "produce")
LIBRDKAFKA = "librdkafka"  # the CPU of the process's other threads: librdkafka's, which compress and send


@dataclass
class StageCosts:
    """CPU seconds per stage (``STAGES``, then ``LIBRDKAFKA``), summed over the batches of a task or tasks."""

    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys((*STAGES, LIBRDKAFKA), 0.0))

    def add(self, other: "StageCosts") -> None:
        for stage, seconds in other.seconds.items():
            self.seconds[stage] = self.seconds.get(stage, 0.0) + seconds

    def per_row(self, rows: int) -> dict[str, float]:
        """Microseconds per row of each stage."""
        return {stage: seconds * 1e6 / max(rows, 1) for stage, seconds in self.seconds.items()}

    def describe(self, rows: int) -> str:
        """``receive 0.9, input 2.1, ... µs/row`` for a log line."""
        return ", ".join(f"{stage} {micros:.1f}" for stage, micros in self.per_row(rows).items()) + " µs/row"


class StageClock:
    """Laps of the Python thread's CPU clock, each added to a stage of ``costs``."""

    def __init__(self) -> None:
        self.costs = StageCosts()
        self._thread = self._thread_started = time.thread_time()
        self._process_started = time.process_time()

    def lap(self, stage: str) -> None:
        """Charge the thread's CPU since the previous lap to ``stage``."""
        now = time.thread_time()
        self.costs.seconds[stage] += now - self._thread
        self._thread = now

    def stop(self) -> StageCosts:
        """The costs so far, with the CPU of the process's other threads (librdkafka's) since the start."""
        process = time.process_time() - self._process_started
        thread = time.thread_time() - self._thread_started
        self.costs.seconds[LIBRDKAFKA] = max(0.0, process - thread)
        return self.costs
