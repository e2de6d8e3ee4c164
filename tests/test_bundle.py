"""The MCP Bundle (bundle/build.py): reproducible, valid for the official `mcpb validate`, and - unpacked
by `mcpb unpack` as a host unpacks it, started by its manifest's own command - a working server that
answers tools/list with the tools its manifest lists.

The start runs `uv run --frozen` in the unpacked directory, as Claude Desktop does: the first run
installs the locked dependencies from PyPI into the bundle's .venv (uv's cache in the tests' cache
directory makes later runs quick). Without uv, or node/npm, these tests are skipped, except under CI.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import anyio

from .interop.node import cache_root, node_tools, unavailable

ROOT = Path(__file__).resolve().parent.parent


def build(output: Path, *options: str) -> Path:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bundle" / "build.py"), "--output", str(output), *options],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.splitlines()[0])


def mcpb(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    tools = node_tools()
    package = tools.node_modules / "@anthropic-ai" / "mcpb"
    entry = json.loads((package / "package.json").read_text())["bin"]
    entry = entry["mcpb"] if isinstance(entry, dict) else entry
    return subprocess.run(
        [tools.node, str(package / entry), *args], capture_output=True, text=True, timeout=300, cwd=cwd
    )


def test_the_bundle_is_reproducible_and_holds_the_package_and_its_lock(tmp_path):
    first = build(tmp_path / "a")
    second = build(tmp_path / "b")
    assert first.read_bytes() == second.read_bytes()
    with zipfile.ZipFile(first) as archive:
        names = set(archive.namelist())
        manifest = json.loads(archive.read("manifest.json"))
    assert {
        "manifest.json",
        "pyproject.toml",
        "uv.lock",
        "spatial_memory/cli.py",
        "spatial_memory/__main__.py",
    } <= names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert manifest["manifest_version"] == "0.4" and manifest["server"]["type"] == "uv"
    assert manifest["server"]["entry_point"] in names
    assert "--frozen" in manifest["server"]["mcp_config"]["args"]


def test_mcpb_validate_accepts_the_manifest_and_refuses_a_broken_one(tmp_path):
    bundle = build(tmp_path / "dist")
    with zipfile.ZipFile(bundle) as archive:
        manifest = json.loads(archive.read("manifest.json"))
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    done = mcpb("validate", "manifest.json", cwd=tmp_path)
    assert done.returncode == 0 and "validation passes" in done.stdout, done.stdout + done.stderr
    del manifest["server"]["mcp_config"]
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    assert mcpb("validate", "manifest.json", cwd=tmp_path).returncode != 0  # the check can fail


def test_unpacked_as_a_host_does_it_starts_and_lists_its_tools(tmp_path):
    if shutil.which("uv") is None:
        unavailable("uv is not on PATH (pip install uv)")
    bundle = build(tmp_path / "dist")
    done = mcpb("unpack", str(bundle), str(tmp_path / "installed"), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    installed = tmp_path / "installed"
    manifest = json.loads((installed / "manifest.json").read_text())
    config = manifest["server"]["mcp_config"]
    args = [a.replace("${__dirname}", str(installed)) for a in config["args"]]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPATIAL_MEMORY_", "VIRTUAL_ENV", "PYTHONPATH"))}
    env.update(
        {
            "SPATIAL_MEMORY_PATH": str(tmp_path / "store"),
            "UV_CACHE_DIR": str(cache_root().parent / "uv"),
            "SPATIAL_MEMORY_PRELOAD": "false",
        }
    )

    async def list_tools() -> list[str]:
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters

        params = StdioServerParameters(command=shutil.which(config["command"]), args=args, env=env, cwd=str(tmp_path))
        with anyio.fail_after(900):  # the first run installs the locked dependencies
            async with Client(params, mode="legacy") as client:
                listed = [t.name for t in (await client.list_tools()).tools]
                stats = await client.call_tool("stats", {})
                assert not stats.is_error, stats.content[0].text
                return listed

    listed = anyio.run(list_tools)
    assert listed == [t["name"] for t in manifest["tools"]]
    # The bundle's own environment ran it, not this checkout's.
    assert (installed / ".venv").is_dir()


def test_the_registry_entry_validates_against_the_registry_schema(tmp_path):
    import hashlib

    import jsonschema

    bundle = build(tmp_path, "--repository", "https://github.com/example-owner/spatial-memory-mcp")
    entry = json.loads((tmp_path / "server.json").read_text())
    schema = json.loads((ROOT / "tests" / "fixtures" / "registry" / "server.schema.json").read_text())
    validator = jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    assert list(validator.iter_errors(entry)) == []
    package = entry["packages"][0]
    assert entry["name"] == "io.github.example-owner/spatial-memory-mcp"
    assert package["fileSha256"] == hashlib.sha256(bundle.read_bytes()).hexdigest()
    assert package["identifier"].endswith(f"/releases/download/v{entry['version']}/{bundle.name}")
    # The check can fail: an mcpb package without its hash is refused.
    del package["fileSha256"]
    assert list(validator.iter_errors(entry))
