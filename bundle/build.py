"""Build the MCP Bundle (.mcpb) of this checkout: Claude Desktop installs the server by opening it.

    python bundle/build.py [--output DIR] [--repository https://github.com/OWNER/REPO]

writes DIR/spatial-memory-mcp-<version>.mcpb (default DIR: dist) and, given the GitHub repository
the bundle is released from, DIR/server.json for the MCP Registry: the bundle as an `mcpb` package
at that repository's release v<version>, with its SHA-256 (publish it with `mcp-publisher publish`
in DIR after uploading the bundle to the release).

The bundle (manifest 0.4, server type `uv`) holds the package source, pyproject.toml and uv.lock,
never an environment: the host runs `uv run --frozen` in the unpacked directory, which installs
exactly the locked dependencies (without PyTorch: pyproject's [tool.uv]) on first start. The
manifest lists the tools a server with the default settings lists, read from the server itself.
The archive is reproducible: the same checkout gives the same bytes (sorted entries, fixed times).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import re
import sys
import tempfile
import zipfile
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
MANIFEST_VERSION = "0.4"
# What the bundle holds besides manifest.json: what `uv run` needs to build and run the package.
FILES = ("pyproject.toml", "uv.lock", "README.md", "LICENSE")
PACKAGE = "spatial_memory"
SKIPPED = ("__pycache__", ".pyc", ".pyo")
ZIP_TIME = (1980, 1, 1, 0, 0, 0)
# The host substitutes ${__dirname} with the directory it unpacked the bundle into.
COMMAND = {"command": "uv", "args": ["run", "--frozen", "--directory", "${__dirname}", "spatial-memory-mcp"]}


def tool_list() -> list[dict[str, str]]:
    """Name and first sentence of every tool a default server lists (asked of the server itself)."""
    for key in [k for k in os.environ if k.startswith("SPATIAL_MEMORY_")]:
        del os.environ[key]  # the default settings, not this shell's
    sys.path.insert(0, str(ROOT))
    from spatial_memory.config import Settings
    from spatial_memory.server.app import create_server

    with tempfile.TemporaryDirectory() as store:
        server = create_server(Settings(path=Path(store), preload=False))
        tools = asyncio.run(server.list_tools())
    return [{"name": t.name, "description": (t.description or "").split("\n")[0].strip()} for t in tools]


def manifest() -> dict:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    version = {}
    exec((ROOT / PACKAGE / "__init__.py").read_text(), version)  # noqa: S102 - our own __version__ line
    return {
        "manifest_version": MANIFEST_VERSION,
        "name": project["name"],
        "display_name": "Spatial Memory",
        "version": version["__version__"],
        "description": project["description"],
        "long_description": (
            "Persistent memory for Claude as a navigable vector space: remember, recall (semantic and "
            "keyword), explore and visualize memories, kept in a local LanceDB store with a bundled "
            "embedding model. Nothing leaves the machine."
        ),
        "author": {"name": project["authors"][0]["name"]},
        "license": project["license"],
        "keywords": project["keywords"],
        "server": {"type": "uv", "entry_point": f"{PACKAGE}/__main__.py", "mcp_config": COMMAND},
        "tools": tool_list(),
        "compatibility": {
            "platforms": ["darwin", "linux", "win32"],
            "runtimes": {"python": project["requires-python"]},
        },
    }


def bundle_files() -> list[Path]:
    files = [ROOT / name for name in FILES]
    files += [p for p in sorted((ROOT / PACKAGE).rglob("*")) if p.is_file() and not any(s in str(p) for s in SKIPPED)]
    missing = [str(p) for p in files if not p.is_file()]
    if missing:
        raise SystemExit(f"not a complete checkout, missing: {', '.join(missing)} (uv.lock: run `uv lock`)")
    return files


def build(output: Path) -> Path:
    described = manifest()
    output.mkdir(parents=True, exist_ok=True)
    target = output / f"{described['name']}-{described['version']}.mcpb"
    temporary = target.with_suffix(".mcpb.tmp")
    entries = [("manifest.json", (json.dumps(described, indent=2) + "\n").encode())]
    entries += [(p.relative_to(ROOT).as_posix(), p.read_bytes()) for p in bundle_files()]
    with zipfile.ZipFile(temporary, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in sorted(entries):
            info = zipfile.ZipInfo(name, ZIP_TIME)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    os.replace(temporary, target)
    return target


REGISTRY_SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
GITHUB = re.compile(r"^https://github\.com/([A-Za-z0-9-]+)/([A-Za-z0-9._-]+?)/?$")


def registry_entry(bundle: Path, repository: str) -> dict:
    """server.json: the bundle as released at `repository` (a GitHub URL), with its SHA-256."""
    found = GITHUB.match(repository)
    if found is None:
        raise SystemExit(f"--repository must be https://github.com/OWNER/REPO, not {repository!r}")
    owner, name = found.groups()
    described = json.loads(zipfile.ZipFile(bundle).read("manifest.json"))
    version = described["version"]
    return {
        "$schema": REGISTRY_SCHEMA,
        "name": f"io.github.{owner}/{name}",
        "title": described["display_name"],
        "description": described["description"][:100],
        "version": version,
        "repository": {"url": f"https://github.com/{owner}/{name}", "source": "github"},
        "packages": [
            {
                "registryType": "mcpb",
                "identifier": f"https://github.com/{owner}/{name}/releases/download/v{version}/{bundle.name}",
                "version": version,
                "fileSha256": hashlib.sha256(bundle.read_bytes()).hexdigest(),
                "transport": {"type": "stdio"},
            }
        ],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Build the MCP Bundle (.mcpb) of this checkout.")
    parser.add_argument("--output", type=Path, default=ROOT / "dist", help="directory to write it to (default: dist)")
    parser.add_argument("--repository", help="the GitHub repository it is released from: also write server.json")
    args = parser.parse_args(argv)
    bundle = build(args.output)
    print(bundle)
    if args.repository:
        target = args.output / "server.json"
        target.write_text(json.dumps(registry_entry(bundle, args.repository), indent=2) + "\n")
        print(target)


if __name__ == "__main__":
    main()
