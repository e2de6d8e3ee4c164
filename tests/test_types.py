"""The package type-checked: basedpyright over spatial_memory/ ([tool.basedpyright] in pyproject.toml:
standard mode, strict where types cross a boundary: the store's surface, the tools' context and calls).
No errors anywhere (issue 47): the test lists every one it finds.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STRICT = ("storage/surface.py", "storage/protocol.py", "tools/calls.py", "tools/types.py")


_started: list[subprocess.Popen[str]] = []


def checker() -> list[str]:
    found = shutil.which("basedpyright")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("basedpyright is not installed: CI installs the dev extra (pip install -e .[dev])")
        pytest.skip("basedpyright is not installed (pip install -e .[dev])")
    return [found]


def _spawn(command: list[str]) -> subprocess.Popen[str]:
    run = subprocess.Popen(
        [*command, "--outputjson"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT
    )
    atexit.register(run.kill)  # a session that ends early leaves no checker behind
    return run


def start_in_background() -> None:
    """Called by conftest.py once the session's tests are collected, when this module's are among
    them: the check (tens of seconds of CPU, one process) runs beside the tests before it, and the
    test collects its report, instead of the whole suite waiting for it."""
    if not _started and shutil.which("basedpyright") is not None:
        _started.append(_spawn(checker()))


def test_the_package_type_checks():
    run = _started[0] if _started else _spawn(checker())
    out, _ = run.communicate(timeout=900)
    report = json.loads(out)
    errors = [d for d in report["generalDiagnostics"] if d["severity"] == "error"]
    shown = [
        f"{Path(d['file']).relative_to(ROOT)}:{d['range']['start']['line'] + 1}: {d['message'].splitlines()[0]}"
        f" ({d.get('rule', '')})"
        for d in errors
    ]
    assert not shown, f"{len(shown)} type errors:\n" + "\n".join(shown)


def test_the_check_is_not_loosened():
    """Zero errors counts only under the agreed settings: standard mode, strict at the boundaries."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["basedpyright"]
    assert config["typeCheckingMode"] == "standard"
    assert set(config["strict"]) >= {f"spatial_memory/{f}" for f in STRICT}
    assert config["include"] == ["spatial_memory"]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
