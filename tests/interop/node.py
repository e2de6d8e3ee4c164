"""Node.js plumbing for the TypeScript interop tests (tests/test_interop_typescript.py).

The pinned packages (package.json + package-lock.json beside this file; the conformance suite and
the Node 22 it needs in conformance/) are installed once per machine into a cache directory named
after the hash of those two files:

    $SPATIAL_MEMORY_TEST_NODE_CACHE, or ${XDG_CACHE_HOME:-~/.cache}/spatial-memory-mcp-tests/node
        <hash>/            node_modules, driver-<hash>.mjs, .complete
        <hash>.lock        held (flock) while one pytest process installs

An install goes to `<hash>.tmp-<pid>-<random>` and is renamed into place only once `npm ci` has
finished and the expected files are there, so a killed or failed install never leaves a half
directory that a later run would trust; a second pytest process waits on the lock and then reuses
the first one's directory. Nothing is ever installed inside the repository.

Without node or npm (or when the install fails) the tests are skipped with the reason - except
under CI (the CI environment variable set), where they fail: CI must run this layer.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import re
import shutil
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
PINNED_FILES = ("package.json", "package-lock.json")
DRIVER = HERE / "driver.mjs"
MIN_NODE_MAJOR = 20  # the SDK wants >= 18; this layer was written and run on 20
INSTALL_TIMEOUT_SECONDS = 900.0
LOCK_TIMEOUT_SECONDS = INSTALL_TIMEOUT_SECONDS + 120.0
# Captured at import (test collection), before conftest's session fixture points XDG_CACHE_HOME
# at a temporary directory: the install must outlive the test session.
_CACHE_HOME_AT_IMPORT = os.environ.get("XDG_CACHE_HOME")


def under_ci() -> bool:
    return bool(os.environ.get("CI"))


def unavailable(reason: str) -> None:
    """Skip (or, under CI, fail) the test that needs node."""
    if under_ci():
        pytest.fail(f"TypeScript interop layer cannot run under CI: {reason}", pytrace=False)
    pytest.skip(f"TypeScript interop layer not run: {reason}")


def cache_root() -> Path:
    override = os.environ.get("SPATIAL_MEMORY_TEST_NODE_CACHE")
    if override:
        return Path(override).expanduser()
    base = Path(_CACHE_HOME_AT_IMPORT) if _CACHE_HOME_AT_IMPORT else Path.home() / ".cache"
    return base / "spatial-memory-mcp-tests" / "node"


def pinned_hash(here: Path = HERE) -> str:
    digest = hashlib.sha256()
    for name in PINNED_FILES:
        digest.update(name.encode() + b"\0" + (here / name).read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def pinned_versions(here: Path = HERE) -> dict[str, str]:
    return json.loads((here / "package.json").read_text())["dependencies"]


class _FileLock:
    """An exclusive lock on a file (fcntl where there is one; elsewhere O_EXCL on a marker file)."""

    def __init__(self, path: Path, timeout: float) -> None:
        self.path = path
        self.timeout = timeout
        self._fd: int | None = None

    def __enter__(self) -> _FileLock:
        deadline = time.monotonic() + self.timeout
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            fcntl = None
        while True:
            if fcntl is not None:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    self._fd = fd
                    return self
                except OSError:
                    os.close(fd)
            else:  # pragma: no cover - Windows
                try:
                    self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
                    return self
                except FileExistsError:
                    pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"another process held {self.path} for over {self.timeout:.0f} s")
            time.sleep(0.5)

    def __exit__(self, *exc: object) -> None:
        assert self._fd is not None
        os.close(self._fd)  # releases the flock
        if not hasattr(os, "fork"):  # pragma: no cover - Windows: the marker file is the lock
            self.path.unlink(missing_ok=True)


def _version(command: list[str]) -> str | None:
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=60, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def _tail(text: str, n: int = 4000) -> str:
    return text[-n:] if len(text) > n else text


class NodeTools:
    """node, and the pinned packages installed in the cache."""

    def __init__(self, node: str, node_version: str, directory: Path) -> None:
        self.node = node
        self.node_version = node_version
        self.directory = directory
        self.driver = self._place_driver()

    @property
    def node_modules(self) -> Path:
        return self.directory / "node_modules"

    def _place_driver(self) -> Path:
        # ESM resolves bare imports from the importing file's directory: the driver must sit beside
        # node_modules. Named after its own hash, so checkouts with different drivers share the cache.
        source = DRIVER.read_bytes()
        target = self.directory / f"driver-{hashlib.sha256(source).hexdigest()[:16]}.mjs"
        if not target.exists() or target.read_bytes() != source:
            temporary = target.with_name(f"{target.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}")
            temporary.write_bytes(source)
            os.replace(temporary, target)
        return target

    def inspector_cli(self) -> list[str]:
        """The command line of `npx @modelcontextprotocol/inspector` (its launcher bin), to add --cli to."""
        package = self.node_modules / "@modelcontextprotocol" / "inspector"
        bin_ = json.loads((package / "package.json").read_text())["bin"]
        entry = bin_["mcp-inspector"] if isinstance(bin_, dict) else bin_
        return [self.node, str((package / entry).resolve())]


def _expected_files(directory: Path, here: Path = HERE) -> list[Path]:
    modules = directory / "node_modules"
    return [modules / name / "package.json" for name in pinned_versions(here)]


def _install(root: Path, key: str, here: Path = HERE, rebuild: tuple[str, ...] = ()) -> Path:
    """`npm ci` without install scripts, then `npm rebuild` of the packages named in `rebuild`
    only (their install scripts run: the `node` package's fetches its platform's binary)."""
    target = root / key
    npm = shutil.which("npm")
    if npm is None:
        unavailable("npm is not on PATH")
    temporary = root / f"{key}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    temporary.mkdir()
    try:
        for name in PINNED_FILES:
            shutil.copyfile(here / name, temporary / name)
        env = dict(os.environ)
        env.update(
            {
                "npm_config_update_notifier": "false",
                "npm_config_audit": "false",
                "npm_config_fund": "false",
                "npm_config_fetch_timeout": "120000",
                "npm_config_fetch_retries": "2",
                "npm_config_fetch_retry_mintimeout": "5000",
                "npm_config_fetch_retry_maxtimeout": "20000",
            }
        )
        commands = [[npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=warn"]]
        if rebuild:
            commands.append([npm, "rebuild", *rebuild, "--foreground-scripts", "--loglevel=warn"])
        for command in commands:
            try:
                done = subprocess.run(
                    command,
                    cwd=temporary,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=INSTALL_TIMEOUT_SECONDS,
                    stdin=subprocess.DEVNULL,
                )
            except subprocess.TimeoutExpired as exc:
                output = (exc.stdout or "") + (exc.stderr or "")
                output = output.decode(errors="replace") if isinstance(output, bytes) else output
                unavailable(
                    f"`{' '.join(command)}` in {temporary} did not finish in {INSTALL_TIMEOUT_SECONDS:.0f} s "
                    f"(is the npm registry reachable?); its output:\n{_tail(output)}"
                )
            if done.returncode != 0:
                unavailable(
                    f"`{' '.join(command)}` in {temporary} failed with exit status {done.returncode} "
                    f"(is the npm registry reachable? pinned: {pinned_versions(here)}); its output:\n"
                    f"{_tail(done.stdout + done.stderr)}"
                )
        missing = [str(p) for p in _expected_files(temporary, here) if not p.is_file()]
        if missing:
            unavailable(f"npm ci finished but these are missing: {missing}")
        (temporary / ".complete").write_text(json.dumps({"pinned": pinned_versions(here), "at": time.time()}))
        if target.exists():  # a directory without .complete: not ours to trust
            shutil.rmtree(target, ignore_errors=True)
        os.replace(temporary, target)
    finally:
        if temporary.exists():
            shutil.rmtree(temporary, ignore_errors=True)
    return target


def _remove_stale_temporaries(root: Path, key: str) -> None:
    for leftover in root.glob(f"{key}.tmp-*"):
        try:
            if time.time() - leftover.stat().st_mtime > 3600:
                shutil.rmtree(leftover, ignore_errors=True)
        except OSError:
            pass


def node_tools() -> NodeTools:
    """node plus the pinned packages, installed into the cache on first use (skip or fail when impossible)."""
    node = shutil.which("node")
    if node is None:
        unavailable("node is not on PATH")
    version = _version([node, "--version"])
    match = re.match(r"v(\d+)\.", version or "")
    if match is None:
        unavailable(f"`node --version` gave {version!r}")
    if int(match.group(1)) < MIN_NODE_MAJOR:
        unavailable(f"node {version} is too old (need {MIN_NODE_MAJOR} or newer)")
    return NodeTools(node, version or "?", installed())


def installed(here: Path = HERE, rebuild: tuple[str, ...] = ()) -> Path:
    """The cache directory holding the packages pinned in `here`, installed on first use."""
    root = cache_root()
    key = pinned_hash(here)
    target = root / key
    if not (target / ".complete").is_file():
        try:
            root.mkdir(parents=True, exist_ok=True)
            with _FileLock(root / f"{key}.lock", LOCK_TIMEOUT_SECONDS):
                if not (target / ".complete").is_file():  # another process may have installed it meanwhile
                    _remove_stale_temporaries(root, key)
                    _install(root, key, here, rebuild)
        except (OSError, TimeoutError) as exc:
            unavailable(f"could not install the pinned node packages into {root}: {exc}")
    return target


CONFORMANCE = HERE / "conformance"


def conformance_suite() -> tuple[str, Path]:
    """Node 22 (the npm package `node`, which the suite needs) and the suite's entry point, from
    the packages pinned in conformance/ (installed into the cache like the others)."""
    if shutil.which("npm") is None:
        unavailable("npm is not on PATH")
    directory = installed(CONFORMANCE, rebuild=("node",))
    node = directory / "node_modules" / "node" / "bin" / "node"
    if not node.is_file():
        unavailable(f"the npm package node did not install its binary at {node}")
    package = directory / "node_modules" / "@modelcontextprotocol" / "conformance"
    entry = json.loads((package / "package.json").read_text())["bin"]["conformance"]
    return str(node), (package / entry).resolve()


# ---- the driver ------------------------------------------------------------------------------


class DriverError(AssertionError):
    pass


class TsClient:
    """One driver process: the TypeScript SDK client connected to one server process.

    `step()` sends one step and returns the driver's answer line (see driver.mjs); `connected` is
    the first line (server info, capabilities, tools/list)."""

    def __init__(
        self,
        tools: NodeTools,
        server: dict[str, Any],
        log_path: Path,
        timeout: float = 300.0,
        header: dict[str, Any] | None = None,
    ) -> None:
        self.log_path = log_path
        self.timeout = timeout
        self._log = open(log_path, "wb")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            [tools.node, str(tools.driver)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            cwd=str(tools.directory),
        )
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        # `header`: the driver's options beside the server (its "sdk", "mode", "elicitation").
        self._send({"server": server, "timeoutMs": int(timeout * 1000), **(header or {})})
        self.connected = self._next(timeout)
        if "fatal" in self.connected or not self.connected.get("connected"):
            raise DriverError(f"the TypeScript client could not connect: {self.connected}; log:\n{self.log_tail()}")

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def _next(self, timeout: float) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            self.proc.kill()
            raise DriverError(f"no answer from the driver in {timeout:.0f} s; log:\n{self.log_tail()}") from None
        if line is None:
            self.proc.wait(30)
            raise DriverError(f"the driver exited ({self.proc.returncode}); log:\n{self.log_tail()}")
        try:
            return json.loads(line)
        except ValueError:
            raise DriverError(f"the driver printed a line that is not JSON: {line[:500]!r}") from None

    @property
    def tools(self) -> list[dict[str, Any]]:
        return self.connected["tools"]["tools"]

    def step(self, step: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        self._send(step)
        answer = self._next(self.timeout + 30 if timeout is None else timeout)
        if "fatal" in answer:
            raise DriverError(f"the driver failed: {answer}; log:\n{self.log_tail()}")
        return answer

    def steps(self, steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [self.step(s) for s in steps]

    def log_tail(self, n: int = 6000) -> str:
        self._log.flush()
        try:
            return _tail(self.log_path.read_text(errors="replace"), n)
        except OSError:
            return ""

    def close(self) -> int:
        """End the steps; the driver closes the client (which ends the server) and exits."""
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            return self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(30)
            raise DriverError(f"the driver did not exit after its last step; log:\n{self.log_tail()}") from None
        finally:
            self._reader.join(10)
            self._log.close()

    def __enter__(self) -> TsClient:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            if exc[0] is None:
                self.close()
                return
            self.proc.kill()
            self.proc.wait(30)
        if not self._log.closed:
            self._log.close()


def run_scenario(tools: NodeTools, scenario: dict[str, Any], log_path: Path, timeout: float = 600.0) -> list[dict]:
    """Run a whole scenario file (driver.mjs <file>): the connected line, then one line per step."""
    path = log_path.with_suffix(".scenario.json")
    path.write_text(json.dumps(scenario))
    with open(log_path, "wb") as log:
        done = subprocess.run(
            [tools.node, str(tools.driver), str(path)],
            stdout=subprocess.PIPE,
            stderr=log,
            stdin=subprocess.DEVNULL,
            cwd=str(tools.directory),
            timeout=timeout,
        )
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    if done.returncode != 0:
        raise DriverError(f"driver exited {done.returncode}: {lines[-1:]}; log:\n{_tail(log_path.read_text())}")
    return lines
