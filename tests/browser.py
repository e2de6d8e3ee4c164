"""Headless Chromium helpers for checking what visualize draws (Debian's `chromium`)."""

from __future__ import annotations

import html
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--allow-file-access-from-files",
]
MERMAID_CACHE = Path.home() / ".cache" / "spatial-memory-mcp-tests" / "mermaid.min.js"


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def require_chromium() -> None:
    """Skip the calling test when no Chromium is installed, except under CI (the CI variable
    set), where that is a failure: .ci/run installs it so the rendering checks run on every run."""
    import pytest

    if chromium() is not None:
        return
    if in_ci():
        pytest.fail("CI is set but no Chromium is installed: the rendering checks need it (.ci/run installs it)")
    pytest.skip(
        "no Chromium installed (Debian: apt-get install chromium), so the SVG/Mermaid rendering checks did not run"
    )


def _run(args: list[str], workdir: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={workdir / 'profile'}", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=workdir,
    )


def screenshot(page: Path, png: Path, width: int = 960, height: int = 720) -> None:
    _run([f"--screenshot={png}", f"--window-size={width},{height}", page.as_uri()], png.parent)


def mermaid_js() -> Path:
    """The official mermaid bundle from the npm registry (cached)."""
    if not MERMAID_CACHE.exists():
        MERMAID_CACHE.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(
                ["npm", "pack", "mermaid@11", "--silent"], cwd=tmp, check=True, capture_output=True, timeout=300
            )
            tarball = next(Path(tmp).glob("mermaid-*.tgz"))
            with tarfile.open(tarball) as tar:
                member = tar.extractfile("package/dist/mermaid.min.js")
                MERMAID_CACHE.write_bytes(member.read())
    return MERMAID_CACHE


def mermaid_parse(text: str, workdir: Path) -> str:
    """'OK' when mermaid's own parser accepts the diagram, else 'ERR: <message>'."""
    page = workdir / "mermaid.html"
    page.write_text(
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<script src='{mermaid_js().as_uri()}'></script></head><body><pre id='out'>pending</pre><script>"
        f"const text = {json.dumps(text)};"
        "mermaid.initialize({startOnLoad:false});"
        "mermaid.parse(text).then(() => {document.getElementById('out').textContent='OK';})"
        ".catch(e => {document.getElementById('out').textContent='ERR: ' + (e.message || e);});"
        "</script></body></html>"
    )
    result = _run(["--virtual-time-budget=10000", "--dump-dom", page.as_uri()], workdir)
    start = result.stdout.find('<pre id="out">')
    if start < 0:
        return f"ERR: no output ({result.stderr[-300:]})"
    end = result.stdout.find("</pre>", start)
    return html.unescape(result.stdout[start + len('<pre id="out">') : end])
