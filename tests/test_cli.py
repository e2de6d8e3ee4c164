"""The command line: --help, --version, and unknown arguments refused before anything starts."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from spatial_memory import __version__, cli


def run(*args: str, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SPATIAL_MEMORY_")}
    return subprocess.run(
        [sys.executable, "-m", "spatial_memory", *args],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        env={**environ, **env},
    )


@pytest.mark.parametrize("args", [["--no-such-flag"], ["serve", "--no-such-flag"], ["no-such-command"], ["serve", "x"]])
def test_unknown_arguments_exit_2_with_a_message_on_stderr(args):
    done = run(*args)
    assert done.returncode == 2
    assert done.stdout == ""  # stdout is the protocol
    assert "usage:" in done.stderr
    assert ("unrecognized arguments" in done.stderr) or ("invalid choice: 'no-such-command'" in done.stderr)
    assert args[-1] in done.stderr


def test_help_lists_the_main_settings_and_no_file_an_install_lacks():
    done = run("--help")
    assert done.returncode == 0 and done.stderr == ""
    for name in (
        "SPATIAL_MEMORY_PATH",
        "SPATIAL_MEMORY_EMBEDDING_MODEL",
        "SPATIAL_MEMORY_LOG_LEVEL",
        "SPATIAL_MEMORY_EXPORT_DIRS",
        "SPATIAL_MEMORY_IMPORT_DIRS",
    ):
        assert name in done.stdout
    assert ".env.example" not in done.stdout
    assert "docs/SETTINGS.md" in done.stdout and "--version" in done.stdout and "serve" in done.stdout
    assert run("serve", "--help").returncode == 0


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(flag):
    done = run(flag)
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout == f"spatial-memory-mcp {__version__}\n"


def test_help_and_version_import_nothing_heavy():
    code = (
        "import sys, contextlib, io\n"
        "from spatial_memory.cli import main\n"
        "for args in (['--help'], ['--version']):\n"
        "    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "        main(args)\n"
        "print(sorted(m for m in ('pydantic', 'mcp', 'lancedb', 'numpy', 'onnxruntime') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_no_command_and_serve_both_serve():
    parser = cli.build_parser()
    assert parser.parse_args([]).handler is cli._serve_command
    assert parser.parse_args(["serve"]).handler is cli._serve_command


def test_a_bad_setting_stops_the_server_with_one_line():
    done = run(SPATIAL_MEMORY_LOG_LEVEL="LOUD")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "SPATIAL_MEMORY_LOG_LEVEL" in done.stderr


_BLAS_THREADS = (
    "import json, sys; {before}"
    "from spatial_memory.runtime.blas_threads import one_blas_thread; one_blas_thread(); "
    "import numpy, threadpoolctl; print(json.dumps([lib['num_threads'] for lib in threadpoolctl.threadpool_info() "
    "if lib['user_api'] == 'blas']))"
)


@pytest.mark.parametrize(
    ("env", "before", "threads"),
    [({}, "", 1), ({"OPENBLAS_NUM_THREADS": "2"}, "", 2), ({}, "import numpy; ", None)],
    ids=["set", "the user's kept", "too late"],
)
def test_servers_run_blas_on_one_thread(env, before, threads):
    """A server's BLAS runs on one thread (set before numpy loads); a value the user set is kept, and
    once numpy has loaded nothing is changed."""
    import json

    clean = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    out = subprocess.run(
        [sys.executable, "-c", _BLAS_THREADS.format(before=before)],
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    counts = json.loads(out)
    assert counts, "numpy's BLAS is found"
    expected = threads if threads is not None else min(len(os.sched_getaffinity(0)), 64)  # OpenBLAS's own
    assert all(c == expected for c in counts), counts
