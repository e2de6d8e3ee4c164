"""export_memories / import_memories: path security, files exported by the reference
implementation (spatial-memory-mcp 1.11.4, tests/fixtures/reference_export/), and imports that
write all or nothing."""

from __future__ import annotations

import json
import os
import shutil
from datetime import datetime, timezone
from pathlib import Path

import anyio
import numpy as np
import pytest

from spatial_memory.config import Settings
from spatial_memory.portability.paths import shown
from spatial_memory.storage.side_tables.relations import Relations
from spatial_memory.storage.store import MemoryStore
from spatial_memory.storage.writing.writes import MemoryWrites

from .conftest import call, data, settings_at
from .portability_env import FIELDS, REFERENCE, TIMES, count, records, server, stored, target_settings
from .test_protocol_core import assert_error

pytestmark = pytest.mark.anyio


# ---- path security -------------------------------------------------------------------------------


def violation(result, kind: str, given: str, *hidden: Path) -> None:
    body = assert_error(result, "PathSecurityError")
    prefix = f"Path security violation ({kind}): "
    assert body["message"].startswith(prefix), body
    path, _, next_step = body["message"][len(prefix) :].partition(". Next: ")
    assert path == shown(given), body  # the path as given, nothing resolved
    if kind in ("outside_allowed_directories", "traversal", "symlink_escape", "not_a_regular_file"):
        assert next_step, body  # a violation the client can fix says how
    for secret in hidden:
        if str(secret) not in given:
            assert str(secret) not in body["message"], body


@pytest.fixture
def outside(tmp_path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.json").write_text(json.dumps(records(1)))
    return folder


async def test_path_security(client, settings, outside):
    exports = settings.allowed_export_dirs[0]
    assert not exports.exists()
    await call(client, "remember", content="something to export")
    made = await call(client, "export_memories", output_path="sub/deeper/x.json")
    assert made["output_path"] == str(exports / "sub" / "deeper" / "x.json")  # relative to the allowed dir
    absolute = await call(client, "export_memories", output_path=str(exports / "abs.json"))
    assert Path(absolute["output_path"]).is_file()
    (exports / "link-out").symlink_to(outside)
    (exports / "secret-link.json").symlink_to(outside / "secret.json")
    (exports / "inner-link.json").symlink_to(exports / "abs.json")
    (exports / "loop.json").symlink_to(exports / "loop.json")
    os.mkfifo(exports / "pipe.json")
    long_name = "a" * 256 + ".json"
    deep = "/".join(["é" * 100] * 25) + ".json"  # 2,500 characters, over 4,096 bytes
    cases = [
        ("../x.json", "traversal"),
        ("sub/../../x.json", "traversal"),
        (f"{exports}/../x.json", "traversal"),
        ("..\\x.json", "traversal"),
        (str(outside / "secret.json"), "outside_allowed_directories"),
        ("/etc/passwd", "outside_allowed_directories"),
        ("~/x.json", "outside_allowed_directories"),
        ("link-out/secret.json", "symlink_escape"),
        ("secret-link.json", "symlink_escape"),
        ("loop.json", "unresolvable"),
        ("pipe.json", "not_a_regular_file"),
        ("sub", "not_a_regular_file"),
        (".", "not_a_regular_file"),
        ("a\x00b.json", "null_byte"),
        (long_name, "name_too_long"),
        (deep, "path_too_long"),
    ]
    for given, kind in cases:
        for tool, key in (("import_memories", "source_path"), ("export_memories", "output_path")):
            if tool == "export_memories" and kind == "unresolvable":
                continue
            with anyio.fail_after(10):  # a FIFO must never block
                result = await client.call_tool(tool, {key: given})
            violation(result, kind, given, outside, exports)
    assert (
        "(traversal): ../x.json"
        in data(await client.call_tool("import_memories", {"source_path": "../x.json"}))["message"]
    )
    # Links that stay inside are fine; nothing was written outside.
    assert (await call(client, "import_memories", source_path="inner-link.json"))["would_import"] == 1
    assert sorted(p.name for p in outside.iterdir()) == ["secret.json"]
    assert json.loads((outside / "secret.json").read_text()) == records(1)


async def test_device_files_and_foreign_types(tmp_path):
    settings = settings_at(tmp_path / "s", import_dirs=[tmp_path / "in", Path("/dev")], export_dirs=[Path("/dev")])
    async with server(settings) as client:
        await call(client, "remember", content="x")
        with anyio.fail_after(10):
            for path in ("/dev/zero", "/dev/null", "/dev/urandom"):
                violation(await client.call_tool("import_memories", {"source_path": path}), "not_a_regular_file", path)
                violation(await client.call_tool("export_memories", {"output_path": path}), "not_a_regular_file", path)
            violation(await client.call_tool("import_memories", {"source_path": "/dev"}), "not_a_regular_file", "/dev")
        assert_error(
            await client.call_tool("export_memories", {"output_path": "/dev/../tmp/x.json"}), "PathSecurityError"
        )


async def test_export_format_checks(client):
    await call(client, "remember", content="x")
    for args, fragment in [
        ({"output_path": "x.txt"}, ".parquet, .json or .csv"),
        ({"output_path": "noext"}, ".parquet, .json or .csv"),
        ({"output_path": "x.csv", "format": "json"}, "does not match"),
        ({"output_path": "x.json", "format": "yaml"}, "format"),
        ({"output_path": ""}, "output_path"),
    ]:
        assert_error(await client.call_tool("export_memories", args), "ValidationError", fragment)
    upper = await call(client, "export_memories", output_path="UPPER.JSON")
    assert upper["format"] == "json"


async def test_several_allowed_directories(tmp_path):
    first, second = tmp_path / "one", tmp_path / "two"
    settings = settings_at(tmp_path / "s", export_dirs=[first, second], import_dirs=[second, first])
    async with server(settings) as client:
        await call(client, "remember", content="x")
        assert (await call(client, "export_memories", output_path="rel.json"))["output_path"] == str(first / "rel.json")
        await call(client, "export_memories", output_path=str(second / "abs.json"))
        assert (await call(client, "import_memories", source_path="abs.json"))["would_import"] == 1
        assert (await call(client, "import_memories", source_path=str(first / "rel.json")))["would_import"] == 1
        assert_error(await client.call_tool("import_memories", {"source_path": "rel.json"}), "MemoryImportError")


# ---- the reference implementation's exports ---------------------------------------------------

# What tests/fixtures/reference_export/make_reference_export.py stored: content -> fields.
REFERENCE_MEMORIES = {
    "Line one\nLine two\nLine three, with a comma": ("refproj", ["multiline", "db"], 0.8, {"ticket": "DB-1"}),
    'She said "hello, world" and left': ("refproj", ["quotes"], 0.3, {"quote": "\"nested\", 'single'"}),
    "Café au lait in Zürich costs 5 €; 東京は日本の首都です。 Привет, мир!": (
        "intl",
        ["unicode"],
        0.6,
        {"lang": "multi"},
    ),
    "Emoji party 🎉🚀 tonight at 8pm": (
        "refproj",
        ["emoji"],
        0.2,
        {"nested": {"a": [1, 2, {"b": None}]}, "flag": True},
    ),
    'CSV tricky: a,b,c\r\n"quoted",,\ttab and a backslash \\': ("intl", [], 1.0, {}),
}
REFERENCE_FILE = [
    (m["id"], m["content"], m["created_at"]) for m in json.loads((REFERENCE / "reference.json").read_text())
]


def reference_settings(tmp_path: Path, name: str) -> Settings:
    settings = settings_at(tmp_path / name)
    shutil.copytree(REFERENCE, settings.allowed_import_dirs[0])
    return settings


def check_reference(records_: dict) -> None:
    assert sorted(records_) == sorted(i for i, _, _ in REFERENCE_FILE)  # the reference's UUIDs are kept
    for memory_id, content, created_at in REFERENCE_FILE:
        record = records_[memory_id]
        namespace, tags, importance, metadata = REFERENCE_MEMORIES[content]
        assert (record.content, record.namespace, record.tags, record.metadata) == (content, namespace, tags, metadata)
        assert record.importance == pytest.approx(importance, abs=1e-6) and record.source == "manual"
        # Its naive timestamps are UTC.
        assert record.created_at == datetime.fromisoformat(created_at).replace(tzinfo=timezone.utc)
        assert record.access_count == 0


async def test_reference_exports_import_with_their_vectors(tmp_path, bundled_models):
    from spatial_memory.embeddings import EmbeddingRouter

    # The reference's vectors are the fp32 model's (its files name no model): an fp32 store takes them.
    real_embedder = EmbeddingRouter(precision="fp32", cache_dir=bundled_models)
    by_format = {}
    for fmt in ("parquet", "json", "csv"):
        settings = reference_settings(tmp_path, fmt)
        async with server(settings, real_embedder) as client:
            preview = await call(client, "import_memories", source_path=f"reference.{fmt}")
            assert preview["total_records_in_file"] == preview["would_import"] == 5
            assert preview["validation_errors"] == [] and preview["memories_imported"] == 0
            assert await count(client) == 0
            result = await call(client, "import_memories", source_path=f"reference.{fmt}", dry_run=False)
            assert result["memories_imported"] == 5 and result["new_ids_assigned"] == 0
            by_format[fmt] = stored(settings, real_embedder.model_id, real_embedder.dimension)
            hits = await call(client, "recall", query="hello world", limit=1)
            assert hits["memories"][0]["content"] == 'She said "hello, world" and left'
            assert hits["memories"][0]["similarity"] > 0.5  # the reference's vectors fit our model
            kw = await call(client, "hybrid_recall", query="Zürich", alpha=0.0)
            assert kw["memories"][0]["content"].startswith("Café au lait")
        check_reference(by_format[fmt])
    for memory_id, record in by_format["parquet"].items():
        for fmt in ("json", "csv"):
            other = by_format[fmt][memory_id]
            for name in FIELDS + TIMES + ("access_count",):
                assert getattr(other, name) == getattr(record, name), (fmt, name)
            assert np.array_equal(other.vector, record.vector)
        # Our embedding of the content matches the reference's vector: same model.
        ours = real_embedder.embed_documents([record.content])[0]
        assert float(np.dot(ours, record.vector)) > 0.999


async def test_reference_exports_without_vectors_and_with_the_test_model(tmp_path):
    settings = reference_settings(tmp_path, "fake")
    async with server(settings) as client:  # a 64-dimension test model
        for name in ("reference.parquet", "reference.json", "reference.csv"):
            assert_error(
                await client.call_tool("import_memories", {"source_path": name}), "DimensionMismatchError", "384"
            )
        for name in ("reference-novec.csv", "reference-novec.json"):
            assert_error(
                await client.call_tool("import_memories", {"source_path": name}), "ValidationError", "regenerate"
            )
        novec = await call(
            client,
            "import_memories",
            source_path="reference-novec.csv",
            regenerate_embeddings=True,
            dry_run=False,
        )
        assert novec["memories_imported"] == 5
        check_reference(stored(settings))
        again = await call(
            client,
            "import_memories",
            source_path="reference.json",
            regenerate_embeddings=True,
            deduplicate=True,
        )
        assert again["memories_skipped"] == 5 and again["would_import"] == 0
        two = await call(
            client,
            "import_memories",
            source_path="reference-novec.json",
            regenerate_embeddings=True,
            namespace_override="moved",
        )
        assert two["total_records_in_file"] == 2 and two["would_import"] == 2 and two["new_ids_assigned"] == 2


async def test_a_home_of_an_unknown_user_is_a_path_error(source_settings):
    """`~name` of a user that does not exist was an InternalError (found by the fuzz tests)."""
    async with server(source_settings) as client:
        for tool, argument in (("import_memories", "source_path"), ("export_memories", "output_path")):
            result = await client.call_tool(tool, {argument: "~no-such-user-here/x.json"})
            assert_error(result, "PathSecurityError", "unknown_home")


# ---- all or nothing ----------------------------------------------------------------------------


def side_rows(settings: Settings) -> dict[str, int]:
    """Rows in each table of the store holding any, read straight from LanceDB."""
    import lancedb

    db = lancedb.connect(str(settings.db_path))
    counts = {name: db.open_table(name).count_rows() for name in db.list_tables().tables}
    return {name: rows for name, rows in counts.items() if rows}


async def export_with_history_and_relations(source_settings: Settings) -> str:
    """An export holding 3 memories, 2 retired versions (one of a memory closed by its successor)
    and 1 relation; returns the id of the closed memory."""
    async with server(source_settings) as client:
        a = (await call(client, "remember", content="the decision to use postgres"))["id"]
        b = (await call(client, "remember", content="benchmarks favour postgres"))["id"]
        await call(client, "update_memory", memory_id=b, content="benchmarks clearly favour postgres")
        old = (await call(client, "remember", content="standup is on mondays"))["id"]
        await call(client, "remember", content="standup is on wednesdays", supersedes=[old])
        await call(client, "relate", source_id=b, target_id=a, relation="supports")
        exported = await call(client, "export_memories", output_path="all.json")
        assert exported["versions_exported"] == 2 and exported["relations_exported"] == 1
    return old


WRITE_PARTS = {"relate": (Relations, "relate"), "add": (MemoryWrites, "add")}


@pytest.mark.parametrize("failing", ["relate", "add"])
async def test_an_import_that_fails_between_its_writes_leaves_nothing(tmp_path, source_settings, monkeypatch, failing):
    """An import writes three tables (history, relations, memories); a failure in the second or
    third write restores the ones already written, so the store is as it was."""
    from spatial_memory.errors import StorageError

    old = await export_with_history_and_relations(source_settings)
    target = target_settings(tmp_path, source_settings)
    part, method = WRITE_PARTS[failing]
    real = getattr(part, method)

    def fail(self, *args, **kwargs):
        raise StorageError("the disk is full (injected)")

    async with server(target) as client:
        await call(client, "remember", content="a memory the target had before")
        before = side_rows(target)
        monkeypatch.setattr(part, method, fail)
        result = await client.call_tool("import_memories", {"source_path": "all.json", "dry_run": False})
        assert_error(result, "StorageError")
        assert side_rows(target) == before  # history and relations written before the failure are gone
        assert (await call(client, "stats"))["total_memories"] == 1
        gone = await client.call_tool("memory_history", {"memory_id": old})
        assert gone.is_error  # the closed memory's history is not there
        # Nothing stands in the way of the same import once the store works again.
        monkeypatch.setattr(part, method, real)
        done = await call(client, "import_memories", source_path="all.json", dry_run=False)
        assert done["memories_imported"] == 3 and done["versions_imported"] == 2 and done["relations_imported"] == 1
        assert len((await call(client, "memory_history", memory_id=old))["versions"]) == 1


# The child: runs one import and kills itself (SIGKILL: no cleanup, no exception handler runs) the
# moment the write named by argv[3] starts, so every part before it has committed.
KILLED_IMPORT = """
import os, signal, sys
from pathlib import Path

import anyio
from mcp import Client

from spatial_memory.config import Settings
from spatial_memory.server.app import create_server
from spatial_memory.storage.side_tables.relations import Relations
from spatial_memory.storage.writing.writes import MemoryWrites
from tests.hash_embedder import HashEmbedder

root, import_dir, part = sys.argv[1], sys.argv[2], sys.argv[3]
owner = {"relate": Relations, "add": MemoryWrites}[part]
setattr(owner, part, lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL))
settings = Settings(path=Path(root), preload=False, import_dirs=[Path(import_dir)])


async def main():
    async with Client(create_server(settings, embedder=HashEmbedder())) as client:
        await client.call_tool("import_memories", {"source_path": "all.json", "dry_run": False})


anyio.run(main)
sys.exit("the import finished: the kill never happened")
"""


@pytest.mark.parametrize("killed_before", ["relate", "add"])
async def test_an_import_killed_between_its_writes_leaves_nothing_visible(tmp_path, source_settings, killed_before):
    """A process SIGKILLed after the import's history write (before its relations), or after both
    side writes (before the memories' commit): reopened, the store shows nothing of the import -
    not read-only, before anything is cleared, and not once a writable open has cleared it."""
    import subprocess
    import sys

    old = await export_with_history_and_relations(source_settings)
    target = target_settings(tmp_path, source_settings)
    async with server(target) as client:
        await call(client, "remember", content="a memory the target had before")
    before = side_rows(target)
    root = Path(__file__).resolve().parent.parent
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            KILLED_IMPORT,
            str(target.path),
            str(source_settings.allowed_export_dirs[0]),
            killed_before,
        ],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert child.returncode == -9, child.stderr[-2000:]
    written = side_rows(target)
    assert written.get("memory_versions", 0) == 2  # the crash came after the history's commit
    assert written.get("relations", 0) == (1 if killed_before == "add" else 0)

    seen = MemoryStore(target.db_path, "test-hash-embedder", 64, read_only=True)
    assert seen.count() == 1
    assert seen.retired([old]) == [] and seen.history_arrow(None).num_rows == 0
    assert seen.current_relations() == []

    async with server(target) as client:  # the store opens (writable) at the first call
        assert (await call(client, "stats"))["total_memories"] == 1
        assert side_rows(target) == before  # what the import left is cleared
        assert (await client.call_tool("memory_history", {"memory_id": old})).is_error
        done = await call(client, "import_memories", source_path="all.json", dry_run=False)
        assert done["memories_imported"] == 3 and done["versions_imported"] == 2 and done["relations_imported"] == 1
        assert len((await call(client, "memory_history", memory_id=old))["versions"]) == 1
