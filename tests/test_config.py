"""Settings: env names, defaults, and one clear line for a bad setting."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from spatial_memory.config import Settings


def test_path_from_either_env_name(monkeypatch, tmp_path):
    monkeypatch.setenv("SPATIAL_MEMORY_PATH", str(tmp_path / "a"))
    assert Settings().path == (tmp_path / "a").resolve()
    monkeypatch.delenv("SPATIAL_MEMORY_PATH")
    monkeypatch.setenv("SPATIAL_MEMORY_MEMORY_PATH", str(tmp_path / "b"))
    assert Settings().path == (tmp_path / "b").resolve()


def test_default_path_is_per_user_not_cwd(monkeypatch, tmp_path):
    monkeypatch.delenv("SPATIAL_MEMORY_PATH", raising=False)
    monkeypatch.delenv("SPATIAL_MEMORY_MEMORY_PATH", raising=False)
    monkeypatch.chdir(tmp_path)
    path = Settings().path
    assert path.is_absolute()
    assert tmp_path.resolve() not in path.parents and path != tmp_path.resolve()
    assert "spatial-memory-mcp" in str(path)


def test_dotenv_file_is_read(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SPATIAL_MEMORY_LOG_LEVEL", raising=False)
    (tmp_path / ".env").write_text("SPATIAL_MEMORY_LOG_LEVEL=DEBUG\n")
    assert Settings().log_level == "DEBUG"


def test_exports_default_under_data_dir(tmp_path):
    settings = Settings(path=tmp_path)
    assert settings.allowed_export_dirs == [tmp_path.resolve() / "exports"]


def test_bad_setting_fails_with_one_line(tmp_path):
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        "SPATIAL_MEMORY_PATH": str(tmp_path),
        "SPATIAL_MEMORY_MAX_BATCH_SIZE": "lots",
        "SPATIAL_MEMORY_TOOLS": "core,rememberr",  # an unknown tool stops start-up, never ignored
    }
    proc = subprocess.run(
        [sys.executable, "-m", "spatial_memory"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "SPATIAL_MEMORY_MAX_BATCH_SIZE" in lines[0], proc.stderr
    assert "SPATIAL_MEMORY_TOOLS: " in lines[0] and "'rememberr'" in lines[0], proc.stderr


def test_a_store_path_that_is_a_file_is_a_setting_error_not_a_failure_on_every_call(tmp_path):
    import pytest
    from pydantic import ValidationError

    taken = tmp_path / "notes.txt"
    taken.write_text("not a store")
    for field in ("path", "local_path"):
        with pytest.raises(ValidationError, match="exists and is not a directory"):
            Settings(**{field: taken})
    assert Settings(path=tmp_path / "new").path == (tmp_path / "new").resolve()  # missing: created later
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": os.environ.get("PYTHONPATH", ""), "SPATIAL_MEMORY_PATH": str(taken)}
    proc = subprocess.run(
        [sys.executable, "-m", "spatial_memory"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    (line,) = proc.stderr.strip().splitlines()
    assert "SPATIAL_MEMORY_PATH" in line and "is not a directory" in line, proc.stderr


def test_env_example_lists_every_setting():
    text = (Path(__file__).parents[1] / ".env.example").read_text()
    for name in Settings.model_fields:
        assert f"SPATIAL_MEMORY_{name.upper()}=" in text, name


def test_the_settings_page_is_generated_from_the_field_descriptions():
    """docs/SETTINGS.md is what `python -m spatial_memory.settings_doc` prints: it cannot drift."""
    page = Path(__file__).parents[1] / "docs" / "SETTINGS.md"
    done = subprocess.run(
        [sys.executable, "-m", "spatial_memory.settings_doc"], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout == page.read_text(), (
        "docs/SETTINGS.md is stale: python -m spatial_memory.settings_doc > docs/SETTINGS.md"
    )
    for name, info in Settings.model_fields.items():
        assert f"`SPATIAL_MEMORY_{name.upper()}`" in done.stdout and info.description, name
