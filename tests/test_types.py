"""The package type-checked: basedpyright over spatial_memory/ ([tool.basedpyright] in pyproject.toml:
standard mode, strict where types cross a boundary: the store's surface, the tools' context and calls).
No errors anywhere (issue 47): the test lists every one it finds.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STRICT = ("storage/surface.py", "storage/protocol.py", "tools/calls.py", "tools/types.py")


def checker() -> list[str]:
    found = shutil.which("basedpyright")
    if found is None:
        pytest.skip("basedpyright is not installed (pip install -e .[dev])")
    return [found]


def test_the_package_type_checks():
    run = subprocess.run(
        [*checker(), "--outputjson"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=900,
    )
    report = json.loads(run.stdout)
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
