"""What the portability tests share: a server on given settings, the stored records, import files."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import numpy as np

from spatial_memory.config import Settings
from spatial_memory.storage.store import MemoryStore

from .conftest import data, settings_at
from .hash_embedder import HashEmbedder

REFERENCE = Path(__file__).parent / "fixtures" / "reference_export"
FIELDS = ("id", "content", "namespace", "tags", "importance", "source", "metadata")
TIMES = ("created_at", "updated_at", "last_accessed")


@asynccontextmanager
async def server(settings: Settings, embedder=None) -> AsyncIterator:
    from mcp import Client

    from spatial_memory.server.app import create_server

    async with Client(create_server(settings, embedder=embedder or HashEmbedder())) as client:
        yield client


def stored(settings: Settings, model_id: str = "test-hash-embedder", dim: int = 64) -> dict[str, object]:
    store = MemoryStore(settings.db_path, model_id, dim)
    return {r.id: r for r in store.scan(with_vectors=True)}


def target_settings(tmp_path: Path, source: Settings, **kw) -> Settings:
    return settings_at(tmp_path / "target", import_dirs=[source.allowed_export_dirs[0]], **kw)


def write(settings: Settings, name: str, content) -> Path:
    folder = settings.allowed_import_dirs[0]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path


def vec(seed: int, dim: int = 64) -> list[float]:
    v = np.random.default_rng(seed).normal(size=dim)
    return (v / np.linalg.norm(v)).tolist()


def records(n: int, dim: int = 64, **extra) -> list[dict]:
    return [{"content": f"memory number {i}", "vector": vec(i, dim), **extra} for i in range(n)]


async def count(client) -> int:
    return data(await client.call_tool("stats", {}))["total_memories"]
