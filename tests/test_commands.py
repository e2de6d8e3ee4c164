"""Every command of README.md, docs/INSTALL.md and docs/CAPTURE.md runs as written on its route
(issue 43), checked in a fresh clone of the checkout.

- The route: these documents follow uv (`uv sync`), where the project's commands live in the
  checkout's .venv, so a command that runs `python` or one of ours goes through `uv run` (or uvx),
  unless it is pip's route (its chain installs with pip). That is what failed a new user:
  `python bundle/build.py` outside the environment.
- `uv`'s options exist: each `uv <command> --option` is checked against `uv <command> --help`, and
  every `uv run --directory` keeps `--frozen` (the lock, as README has it).
- The cheap ones run, in a fresh `git clone` of this checkout with an empty HOME: `--help` and
  `--version`, the bundle build, the map redraw, `setup-hooks` without `--write`, and then the
  command setup-hooks suggests. `uv run X` runs as X with this test's Python (the project installed
  as the dev setup has it): `uv run --frozen` would build a new environment, minutes per run. The
  rest (`uv sync`, pip installs, serving, the suite) only get the checks above.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCUMENTS = ("README.md", "docs/INSTALL.md", "docs/CAPTURE.md")
OURS = ("python", "spatial-memory", "spatial-memory-mcp")
STARTS = ("uv ", "uvx ", "python ", "pip ", "spatial-memory", "claude mcp ", "echo ")
CHEAP = ("--help", "--version", "-V")
# Named in the text, not commands a reader types on the uv route: why each is not `uv run ...`.
NOT_TYPED = {
    "python -m spatial_memory": "INSTALL.md: how a pip install's own python runs the server",
    "spatial-memory hook <event>": "CAPTURE.md: what the installed hooks run",
    "spatial-memory ingest": "CAPTURE.md: what a hook starts by itself",
}
# The development route: pip install -e ".[dev]" (README, Tests): the benchmarks and the suite.
DEVELOPMENT = ("python -m benchmarks.", "python -m pytest")


def _blocks(text: str) -> list[str]:
    """Commands of ```bash blocks (comments dropped) and of inline code that starts like one."""
    found = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            if line and not line.startswith("#"):
                found.append(line)
    for span in re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S).replace("\n", " ")):
        span = span.strip()
        if span.startswith(STARTS) and " " in span and not span.endswith("...") and span not in NOT_TYPED:
            found.append(span)
    return found


def documented() -> list[tuple[str, str]]:
    return [(name, command) for name in DOCUMENTS for command in _blocks((REPO / name).read_text())]


def _parts(command: str) -> list[list[str]]:
    """A command line's simple commands (split at && and |), as words; `claude mcp add ... -- X` gives X too."""
    parts = []
    for piece in re.split(r"&&|\|", command):
        words = shlex.split(piece.replace("\\", "/"))
        if words[:3] == ["claude", "mcp", "add"] and "--" in words:
            parts.append(words[words.index("--") + 1 :])
        parts.append(words)
    return [p for p in parts if p]


def _uv_command(words: list[str]) -> tuple[list[str], list[str]]:
    """(`uv` and its subcommand words, the rest) of a uv command line."""
    sub = ["uv", words[1]]
    if words[1] in ("tool", "pip") and len(words) > 2:
        sub.append(words[2])
    return sub, words[len(sub) :]


@cache
def _uv_options(sub: tuple[str, ...]) -> str:
    return subprocess.run([*sub, "--help"], capture_output=True, text=True, timeout=60).stdout


def test_the_documents_have_commands():
    commands = [c for _, c in documented()]
    assert any("bundle/build.py" in c for c in commands) and any("map.py" in c for c in commands)
    assert any(c.startswith("uv run spatial-memory setup-hooks") for c in commands)
    assert len(commands) > 20


@pytest.mark.parametrize(("document", "command"), documented())
def test_a_command_follows_its_route(document, command):
    pip_route = "pip install" in command or command.startswith(DEVELOPMENT)
    for words in _parts(command):
        if words[0] in ("uv", "uvx") or pip_route:
            continue
        if words[0] in OURS or words[0].startswith("spatial-memory"):
            pytest.fail(f"{document}: `{command}` runs {words[0]} outside `uv run` (not on PATH after `uv sync`)")


@pytest.mark.parametrize(("document", "command"), [(d, c) for d, c in documented() if " uv " in f" {c}"])
def test_a_uv_command_has_only_options_uv_knows(document, command):
    if shutil.which("uv") is None:
        pytest.skip("uv is not installed")
    for words in _parts(command):
        if words[0] != "uv":
            continue
        sub, rest = _uv_command(words)
        known = _uv_options(tuple(sub))
        assert known, f"`{' '.join(sub)} --help` printed nothing"
        for word in rest:
            if word.startswith("--"):
                option = word.split("=")[0]
                assert re.search(rf"(^|\s|,){re.escape(option)}\b", known), f"{document}: {option} in `{command}`"
            elif sub[1] == "run":  # uv run's options end at the command
                break
        if sub[1] == "run" and "--directory" in rest:
            assert "--frozen" in rest, f"{document}: `{command}` without --frozen (README uses it)"


def _settings_listed(help_text: str) -> bool:
    """The help's settings list is a list: each main setting starts its own line."""
    section = help_text.split("settings (environment variables", 1)[-1]
    names = ("PATH", "EMBEDDING_MODEL", "LOG_LEVEL", "EXPORT_DIRS", "IMPORT_DIRS")
    return all(re.search(rf"^  SPATIAL_MEMORY_{name} ", section, re.M) for name in names)


def _as_run_here(words: list[str]) -> list[str] | None:
    """The command this test runs for `uv run ...` words, or None when it is not a cheap one."""
    if words[:2] != ["uv", "run"]:
        return None
    rest = words[2:]
    while rest and rest[0].startswith("--"):
        rest = rest[2:] if rest[0] == "--directory" else rest[1:]
    if not rest:
        return None
    program, args = rest[0], rest[1:]
    if program == "python":
        if args[:1] == ["docs/images/map.py"] or args[:1] == ["bundle/build.py"]:
            return [sys.executable, *args]
        return None
    if program not in ("spatial-memory", "spatial-memory-mcp"):
        return None
    if any(flag in args for flag in CHEAP) or (args[:1] == ["setup-hooks"] and "--write" not in args):
        return [sys.executable, "-m", "spatial_memory", *args]
    return None


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """A fresh clone of this checkout's committed state (what a new user gets)."""
    target = tmp_path_factory.mktemp("fresh") / "spatial-memory-mcp"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(target)], check=True, timeout=120)
    return target


def _env(clone: Path, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPATIAL_MEMORY_")}
    env.update(HOME=str(home), PYTHONPATH=str(clone), HF_HUB_OFFLINE="1")
    env.pop("XDG_CACHE_HOME", None)
    env.pop("XDG_DATA_HOME", None)
    return env


def test_the_cheap_commands_run_as_written_in_a_fresh_clone(clone, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    ran: list[str] = []
    for document, command in documented():
        for words in _parts(command):
            run = _as_run_here(words)
            if run is None or " ".join(words) in ran:
                continue
            done = subprocess.run(run, cwd=clone, env=_env(clone, home), capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, f"{document}: `{' '.join(words)}` -> {done.returncode}\n{done.stderr[-3000:]}"
            assert "Traceback" not in done.stderr, done.stderr[-3000:]
            ran.append(" ".join(words))
            if "--help" in words:
                assert _settings_listed(done.stdout), done.stdout
            if words[2:4] == ["spatial-memory", "setup-hooks"]:
                suggested = done.stdout.rsplit("To merge this into the files above: ", 1)[1].strip()
                followed = subprocess.run(
                    shlex.split(suggested),
                    cwd=clone,
                    env=_env(clone, home),
                    capture_output=True,
                    text=True,
                    timeout=120,
                )
                assert followed.returncode == 0, f"the suggested `{suggested}`: {followed.stderr[-2000:]}"
                assert "created" in followed.stdout or "unchanged" in followed.stdout, followed.stdout
    assert any("bundle/build.py" in r for r in ran) and any("map.py" in r for r in ran), ran
    assert any("setup-hooks" in r for r in ran) and sum("--help" in r for r in ran) >= 1, ran
    assert list((clone / "dist").glob("spatial-memory-mcp-*.mcpb")), "the bundle build wrote no bundle"
    assert "<svg" in (clone / "docs" / "images" / "map.svg").read_text()[:200]
    for name in ("spatial-memory", "spatial-memory-mcp"):  # every command's help, not only those quoted
        for sub in ("", "serve", "tokens", "setup-hooks", "ingest", "backfill", "doctor", "ui"):
            done = subprocess.run(
                [sys.executable, "-m", "spatial_memory", *([sub] if sub else []), "--help"],
                cwd=clone,
                env=_env(clone, home),
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert done.returncode == 0, done.stderr
            assert _settings_listed(done.stdout), (name, sub, done.stdout)
        break
