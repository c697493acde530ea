"""The pure core needs nothing but the standard library: every module of `reportexport.core`
imports under `python -S` (no site-packages) with only the source trees on the path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "src" / "reportexport" / "core"

IMPORT_EVERY_MODULE = """
import importlib, pkgutil, sys
import reportexport.core as core
names = [info.name for info in pkgutil.walk_packages(core.__path__, "reportexport.core.")]
for name in names:
    importlib.import_module(name)
print(len(names))
"""


def test_every_core_module_imports_with_the_standard_library_alone() -> None:
    path = os.pathsep.join([str(ROOT / "src"), str(ROOT / "packages" / "frozen-lifecycle" / "src")])
    done = subprocess.run(
        [sys.executable, "-S", "-c", IMPORT_EVERY_MODULE],
        env={"PYTHONPATH": path, "PATH": os.environ.get("PATH", "")},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    modules = sorted(p.stem for p in CORE.glob("*.py") if p.stem != "__init__")
    assert int(done.stdout) == len(modules) > 10


def test_a_third_party_import_in_the_core_would_be_refused(tmp_path: Path) -> None:
    """The check above can fail: a core module that imports a third-party package does not
    import under `python -S`."""
    package = tmp_path / "reportexport"
    (package / "core").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "core" / "__init__.py").write_text("")
    (package / "core" / "leaning.py").write_text("import pydantic\n")
    done = subprocess.run(
        [sys.executable, "-S", "-c", IMPORT_EVERY_MODULE],
        env={"PYTHONPATH": str(tmp_path), "PATH": os.environ.get("PATH", "")},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert "No module named 'pydantic'" in done.stderr
