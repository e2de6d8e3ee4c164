"""Shared fixtures: temp stores, a deterministic fake embedder, MCP clients."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from spatial_memory.config import Settings
from spatial_memory.records import MemoryRecord, NewMemory
from spatial_memory.runtime.resources import Resources
from spatial_memory.server.app import App
from spatial_memory.storage.store import MemoryStore

from .hash_embedder import HashEmbedder
from .interop.node import NodeTools, node_tools

# The modules that take longest (measured: `--durations`), longest first. Under xdist every worker
# orders its collection by this list, so the scheduler hands these out first and the short ones
# fill the gaps at the end, instead of a long module starting last and running alone.
LONGEST_FIRST = (
    "test_types",
    "test_hybrid",
    "test_reliability_crash",
    "test_reliability_leaks",
    "test_clients_2026",
    "test_clean_exit",
    "test_interop_skills",
    "test_interop_typescript",
    "test_s3_store",
    "test_progress",
    "test_atlas_browser",
    "test_conversation_recall",
    "test_model_path",
    "test_subscriptions",
    "test_signal_stop",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not hasattr(config, "workerinput"):
        return  # one process: the collected order (the type check starts in the background instead)
    rank = {name: place for place, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.stem, len(rank)))  # stable: a module's own order kept


def pytest_collection_finish(session: pytest.Session) -> None:
    """A test module may start slow work beside the tests collected before it (start_in_background:
    test_types.py's type check): once per module, and only when its tests will run. Under xdist
    every worker collects every test and runs only some: there the test does its work itself, in
    the worker that runs it (the other worker keeps the other core busy meanwhile)."""
    if hasattr(session.config, "workerinput"):
        return
    modules = {id(item.module): item.module for item in session.items if isinstance(item, pytest.Function)}
    for module in modules.values():
        start = getattr(module, "start_in_background", None)
        if callable(start):
            start()


@pytest.fixture(scope="session", autouse=True)
def user_cache_dir(tmp_path_factory: pytest.TempPathFactory):
    """Servers the tests spawn keep their handshake cache here, not in the user's home."""
    import os

    path = tmp_path_factory.mktemp("user-cache")
    previous = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(path)
    yield path
    if previous is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = previous


@pytest.fixture(scope="session", autouse=True)
def tools_built_once_per_schema():
    """In-process servers share the Tool objects built for the same schema settings: building
    them (the SDK's pydantic schemas) is ~0.13 s of CPU, paid by hundreds of test servers. Sound
    because build_tools reads nothing else (test_handshake pins that) and nothing changes a Tool
    once built; tests that call build_tools itself still build afresh."""
    import spatial_memory.server.app as app_module
    from spatial_memory.limits import SCHEMA_SETTINGS

    build = app_module.build_tools
    built: dict[str, list] = {}

    def build_tools(settings):
        key = json.dumps([getattr(settings, name) for name in SCHEMA_SETTINGS], default=str)
        if key not in built:
            built[key] = build(settings)
        return list(built[key])

    app_module.build_tools = build_tools
    yield
    app_module.build_tools = build


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    """The one async backend of every anyio test (session-scoped: module-scoped async fixtures use it)."""
    return "asyncio"


@pytest.fixture(scope="session")
def node() -> NodeTools:
    """Node and the npm packages the TypeScript clients and the inspector need (installed once)."""
    return node_tools()


def settings_at(root: Path, **kw) -> Settings:
    """A test's settings: a store at `root`, nothing preloaded, access counts flushed quickly."""
    return Settings(path=root, preload=False, access_flush_seconds=0.05, **kw)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return settings_at(tmp_path / "store")


@pytest.fixture
def source_settings(tmp_path: Path) -> Settings:
    """Settings of a second store beside `settings`' (an export's source)."""
    return settings_at(tmp_path / "source")


@pytest.fixture
def fake_embedder() -> HashEmbedder:
    return HashEmbedder()


@pytest.fixture(scope="session")
def bundled_model(tmp_path_factory):
    """The bundled model loaded in this process, and the directory of its ONNX graph: built once
    per session. (router, models directory)"""
    from spatial_memory.embeddings import EmbeddingRouter
    from spatial_memory.embeddings.router import NEW_STORE_PATH

    models = tmp_path_factory.mktemp("onnx") / "models"
    # The path a new store gets, pinned: a session-wide router must not follow a store written on
    # the other path (test_model_path.py tests following) and embed later tests' texts that way.
    router = EmbeddingRouter(precision=NEW_STORE_PATH, cache_dir=models)
    router.load()
    return router, models


@pytest.fixture(scope="session")
def real_embedder(bundled_model):
    return bundled_model[0]


@pytest.fixture
def auto_embedder(bundled_models):
    """The bundled model as a server configures it (precision auto): it follows the path an
    existing store was written with (stores of earlier releases: fp32). One per test, as it moves."""
    from spatial_memory.embeddings import EmbeddingRouter

    return EmbeddingRouter(cache_dir=bundled_models)


@pytest.fixture(scope="session")
def bundled_models(bundled_model) -> Path:
    """The once-built ONNX graph that server processes load (reliability.new_store links a store to it)."""
    return bundled_model[1]


@pytest.fixture(scope="session")
def cached_embedder(real_embedder):
    """The bundled model, each text embedded once per session: the LoCoMo tests store and ask
    the same turns and questions (test_conversation_recall, test_hybrid, test_recall_exactness)."""
    from spatial_memory.evaluation.embedding_cache import CachedEmbedder

    return CachedEmbedder(real_embedder)


@pytest.fixture(scope="session")
def locomo_dev() -> Path:
    """The LoCoMo dev split the recall-quality tests measure on. It is not part of the project: it is
    found in the directory SPATIAL_MEMORY_EVAL_DIR names (default ../shared/eval, beside the checkout).
    Missing, the test is skipped, except under CI (CI set), where it fails: CI must measure quality."""
    import os

    from spatial_memory.evaluation import locomo

    path = locomo.eval_dir() / "locomo-dev.json"
    if not path.is_file():
        message = (
            f"the LoCoMo dev data is not at {path}: set {locomo.EVAL_DIR_VARIABLE} to the directory "
            "holding locomo-dev.json"
        )
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture
async def client(settings: Settings, fake_embedder: HashEmbedder) -> AsyncIterator:
    from mcp import Client

    from spatial_memory.server.app import create_server

    async with Client(create_server(settings, embedder=fake_embedder)) as c:
        yield c


@pytest.fixture
async def model_client(settings: Settings, real_embedder) -> AsyncIterator:
    from mcp import Client

    from spatial_memory.server.app import create_server

    async with Client(create_server(settings, embedder=real_embedder)) as c:
        yield c


def data(result) -> dict:
    """The JSON body of a tool result: its structured content, or for an error the typed body in its text
    (errors carry no structured content, which TypeScript clients would validate against the output schema)."""
    if result.is_error:
        assert result.structured_content is None, result
        return json.loads(result.content[0].text)
    assert result.structured_content is not None, result
    return result.structured_content


def indexed_vector_rows(store) -> int | None:
    """Rows a MemoryStore's vector index covers, from its public stats(); None without one."""
    return next((i["num_indexed_rows"] for i in store.stats()["indices"] if i["column"] == "vector"), None)


async def call(client, name: str, **arguments) -> dict:
    """Call a tool and return its JSON body; an error result fails the test, showing the body."""
    result = await client.call_tool(name, arguments)
    body = data(result)
    assert not result.is_error, body
    return body


# ---- the services on a temp store at a frozen moment (lifecycle, consolidation) ----------

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=timezone.utc)
DAY = timedelta(days=1)


@dataclass
class Env:
    """The services as the server wires them (server/app.py), on a temp store."""

    app: App

    @property
    def resources(self) -> Resources:
        return self.app.resources

    @property
    def memory(self):
        return self.app.memory

    @property
    def lifecycle(self):
        return self.app.lifecycle

    @property
    def store(self) -> MemoryStore:
        return self.resources.store()

    def put(
        self,
        content: str,
        *,
        namespace: str = "default",
        importance: float = 0.5,
        age_days: float = 0.0,
        accessed_days_ago: float | None = None,
        access_count: int = 0,
        tags: list[str] | None = None,
        metadata: dict | None = None,
    ) -> MemoryRecord:
        (record,) = self.memory.build_records(
            [NewMemory(content, namespace=namespace, tags=tags or [], importance=importance, metadata=metadata or {})]
        )
        created = NOW - age_days * DAY
        accessed = NOW - (age_days if accessed_days_ago is None else accessed_days_ago) * DAY
        record = replace(
            record, created_at=created, updated_at=created, last_accessed=accessed, access_count=access_count
        )
        self.store.add([record])
        return record

    def get(self, memory_id: str) -> MemoryRecord | None:
        return self.store.get(memory_id, with_vector=True)


@pytest.fixture
def env(settings, fake_embedder) -> Env:
    resources = Resources(settings, fake_embedder)
    return Env(App(resources))
