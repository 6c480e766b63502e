"""The soak run (``integration/soak.py``): 5,000,000 rows over 100 micro-batches with 1% of task attempts
failing, on three Kafka nodes. It takes about half an hour on two cores, so it is marked slow and runs only
when asked: ``python -m pytest -q -m slow integration/test_soak.py`` (its figures go to bench/RESULTS.md)."""

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow]


def test_five_million_rows_with_failing_tasks_lose_nothing_and_repeat_nothing():
    soak = Path(__file__).with_name("soak.py")
    result = subprocess.run([sys.executable, str(soak)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert "lost 0, duplicates 0" in result.stdout
