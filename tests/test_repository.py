"""The repository stands alone: users clone it without the team's folder beside it.

The team keeps its protocol documents and reference in a sibling folder that is
never published, so no test, script or runtime path may point there.  The
folder's name is kept in a variable so that this file does not match its own
patterns.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECKED = ["tests", "integration", "bench", "ticdc_sink", ".ci", "pyspark_ticdc.py"]
TEAM_FOLDER = "shared"
TEAM_FOLDER_REFERENCES = re.compile("|".join([
    rf"\.\.[/\\]{TEAM_FOLDER}\b",  # a relative path out of the repository
    rf"\b{TEAM_FOLDER}[/\\](?:specs|reference|hooks|DESIGN\.md)",  # one of the folder's files
    rf"/work/{TEAM_FOLDER}\b",  # the absolute path on the team's machines
    rf"""[/,(]\s*["']{TEAM_FOLDER}["']""",  # a path joined with pathlib's / or os.path.join
]))


def checked_files() -> list[Path]:
    files = []
    for name in CHECKED:
        path = ROOT / name
        candidates = [path] if path.is_file() else path.rglob("*")
        files += [f for f in candidates if f.is_file() and "__pycache__" not in f.parts]
    return files


def team_folder_references(text: str) -> list[str]:
    return [m.group(0) for m in TEAM_FOLDER_REFERENCES.finditer(text)]


def test_no_file_refers_to_the_team_folder():
    offenders = {}
    for path in checked_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # binary data holds no paths
        found = team_folder_references(text)
        if found:
            offenders[str(path.relative_to(ROOT))] = found
    assert offenders == {}


@pytest.mark.parametrize("line", [
    f'SPEC = Path(__file__).resolve().parents[2] / "{TEAM_FOLDER}" / "specs" / "x.md"',
    f"Goldens come from ``../{TEAM_FOLDER}/specs/ticdc-canal-json-protocol.md``",
    f"see {TEAM_FOLDER}/reference/TICDC-ENCODING-FACTS.md",
    f"open('/work/{TEAM_FOLDER}/DESIGN.md')",
    f"os.path.join(root, '{TEAM_FOLDER}', 'specs')",
])
def test_the_check_catches_the_ways_a_path_is_written(line):
    assert team_folder_references(line)


def test_the_check_ignores_the_word_in_prose():
    assert not team_folder_references("Rendering helpers shared by the codecs; the shared test helpers")


def test_every_package_of_the_sink_is_installed():
    """pyproject lists the packages: one left out works from a clone but not from a wheel."""
    import tomllib

    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    packages = {".".join(init.parent.relative_to(ROOT).parts) for init in (ROOT / "ticdc_sink").rglob("__init__.py")}
    assert set(setuptools["packages"]) == packages
    for package, files in setuptools["package-data"].items():
        for name in files:
            assert (ROOT / package.replace(".", "/") / name).exists(), (package, name)


DOCUMENTS = ["README.md", "CONTRIBUTING.md", "ARCHITECTURE.md", "bench/README.md", "docs"]
_RELATIVE_LINK = re.compile(r"\]\((?!https?://|#)([^)#\s]+)(?:#[^)]*)?\)")


def test_every_relative_link_of_the_documentation_resolves():
    files = [f for name in DOCUMENTS for f in ([ROOT / name] if (ROOT / name).is_file()
                                               else sorted((ROOT / name).rglob("*.md")))]
    assert len(files) > 10
    broken = [f"{f.relative_to(ROOT)}: {target}" for f in files
              for target in _RELATIVE_LINK.findall(f.read_text(encoding="utf-8"))
              if not (f.parent / target).resolve().exists()]
    assert broken == []


def test_the_readme_is_read_in_minutes_and_opens_with_the_quickstart():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.encode()) < 20_000
    assert readme.split("\n## ")[1].startswith("Quickstart")
    assert readme.splitlines().index("```python") < 80
