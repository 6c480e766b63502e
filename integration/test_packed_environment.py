"""docs/usage.md's cluster recipe, as written: a packed venv shipped with ``spark-submit --archives``.

A venv gets ``pip install .`` of this checkout and ``venv-pack`` (from PyPI); its
archive is unpacked as ``./env`` in the folder the job is submitted from, and
``spark-submit --archives env.tar.gz#env`` with ``PYSPARK_PYTHON=./env/bin/python``
sends ``installed_round_trip.py`` to a standalone cluster (``spark_cluster.py``,
one Worker), writing to the session's broker and reading back.

The Workers run without ``PYSPARK_PYTHON`` and with a PATH whose ``python3``
cannot import the package (checked first): the write can only succeed if the
executors ran the archive's Python, and the app prints the interpreter they ran.

    python -m pytest -q integration/test_packed_environment.py
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from spark_cluster import SparkCluster

pytestmark = [pytest.mark.spark]

ROOT = Path(__file__).resolve().parents[1]
APP = Path(__file__).with_name("installed_round_trip.py")
SUBMIT_TIMEOUT = 600


def run(command: list, log: Path, **kwargs) -> str:
    """``command``'s stdout; on failure, the test fails with the end of its log."""
    with log.open("w") as out:
        result = subprocess.run([str(part) for part in command], stdout=subprocess.PIPE, stderr=out, text=True,
                                **kwargs)
    if result.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:])
        pytest.fail(f"{' '.join(map(str, command[:3]))} ... exited with {result.returncode}:\n{result.stdout}\n{tail}")
    return result.stdout


@pytest.fixture(scope="module")
def packed(tmp_path_factory) -> Path:
    """The recipe's first steps: a venv with ``pip install .``, packed by venv-pack into ``env.tar.gz``."""
    work = tmp_path_factory.mktemp("packed")
    venv = work / "venv"
    run([sys.executable, "-m", "venv", venv], work / "venv.log")
    run([venv / "bin" / "python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check", ROOT,
         "venv-pack"], work / "pip.log")
    run([venv / "bin" / "venv-pack", "--prefix", venv, "--output", work / "env.tar.gz", "--quiet"],
        work / "venv-pack.log")
    return work


def cluster_environment() -> dict:
    """What the Workers (and so their executors) run with: no PYSPARK_PYTHON, and no venv on PATH."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = os.pathsep.join(part for part in env.get("PATH", "").split(os.pathsep)
                                  if not (Path(part) / "activate").exists())
    return env


def test_a_packed_venv_shipped_with_archives_runs_the_sink_on_the_executors(packed, broker, topic, monkeypatch):
    env = cluster_environment()
    stranger = subprocess.run(["python3", "-c", "import ticdc_sink"], env=env, capture_output=True)
    assert stranger.returncode != 0, "the Workers' python3 imports ticdc_sink: this test could not tell it apart"
    for key in set(os.environ) - set(env):
        monkeypatch.delenv(key)
    monkeypatch.setenv("PATH", env["PATH"])
    with SparkCluster(1) as cluster:
        monkeypatch.undo()
        submit_dir = packed / "submit"  # the driver runs here (client mode): it has the same ./env
        submit_dir.mkdir()
        with tarfile.open(packed / "env.tar.gz") as archive:
            archive.extractall(submit_dir / "env", filter="tar")
        shutil.copy(APP, submit_dir / APP.name)
        venv_bin = packed / "venv" / "bin"
        submit_env = {**env, "PATH": f"{venv_bin}{os.pathsep}{env['PATH']}", "PYSPARK_PYTHON": "./env/bin/python"}
        out = run([venv_bin / "spark-submit", "--master", cluster.master_url,
                   "--archives", f"{packed / 'env.tar.gz'}#env", APP.name,
                   broker.bootstrap_servers, broker.isolation, topic],
                  packed / "spark-submit.log", cwd=submit_dir, env=submit_env, timeout=SUBMIT_TIMEOUT)
        work_dir = cluster.directory
    assert "wrote 4 changes through Spark (canal-json) and read the same 4 back" in out, out
    interpreters = re.search(r"executors' Python: (.*)", out).group(1).split(", ")
    # each executor unpacked the archive in its own folder under its Worker's work dir
    assert interpreters and all(Path(path).is_relative_to(work_dir) and path.endswith("/env/bin/python")
                                for path in interpreters), interpreters
