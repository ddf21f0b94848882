"""The layer contract (.importlinter) is what keeps imports running downwards; these keep the
contract itself honest."""

import configparser
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _layered_apps() -> set[str]:
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    layers = config["importlinter:contract:layers"]["layers"].split()
    return {name for name in layers if name != "|"}


def test_every_app_is_in_a_layer():
    # An app missing from the contract could import anything and be imported by anything.
    apps = {f"apps.{p.parent.name}" for p in (ROOT / "apps").glob("*/__init__.py")}
    assert _layered_apps() == apps


def test_the_imports_keep_the_layers():
    # make test and .ci/run also run lint-imports; this keeps a bare pytest run (CI's PostgreSQL
    # pass) from missing an upward import.
    result = subprocess.run(
        [str(Path(sys.executable).with_name("lint-imports")), "--no-cache"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
