"""The toolkit is the standard library's: every module imports with `python3 -S` (no
site-packages at all) from the source tree, and brings in nothing else."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import TOOLKIT_SRC

PROBE = """
import importlib, pkgutil, sys
import frozen_lifecycle
names = [m.name for m in pkgutil.walk_packages(frozen_lifecycle.__path__, "frozen_lifecycle.")]
for name in names:
    if not name.endswith("__main__"):
        importlib.import_module(name)
outside = {m.split(".")[0] for m in sys.modules} - set(sys.stdlib_module_names)
print(len(names), sorted(outside - {"frozen_lifecycle", "__main__"}))
"""


def test_every_module_imports_with_nothing_but_the_standard_library() -> None:
    env = {**os.environ, "PYTHONPATH": str(TOOLKIT_SRC)}
    done = subprocess.run(
        [sys.executable, "-S", "-c", PROBE], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    count, outside = done.stdout.split(" ", 1)
    assert int(count) >= 20  # every module of the package, the gate's included
    assert outside.strip() == "[]"


def test_the_package_declares_no_dependency() -> None:
    import tomllib

    project = tomllib.loads((TOOLKIT_SRC.parent / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["dependencies"] == []
    assert project["project"]["name"] == "frozen-lifecycle"
