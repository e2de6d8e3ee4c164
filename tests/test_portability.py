"""export_memories / import_memories through real MCP client sessions: round trips in every
format, malformed files, limits, dedup and id policy (paths, the reference implementation's
exports and all-or-nothing imports: test_portability_files.py)."""

from __future__ import annotations

import json
import stat
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spatial_memory.portability import export_file

from .conftest import call, data, settings_at
from .portability_env import FIELDS, TIMES, count, records, server, stored, target_settings, vec, write
from .test_protocol_core import assert_error

pytestmark = pytest.mark.anyio


TRICKY = [
    ("Line one\nLine two\r\nLine three, with a comma", "proj", ["multi,line", "db"], 0.8, {"ticket": "DB-1"}),
    ('She said "hello, world" and left', "proj", ["quotes"], 0.3, {"quote": "\"nested\", 'single'"}),
    ("Café au lait in Zürich costs 5 €; 東京は日本の首都です。 Привет, мир!", "intl", ["ünïcode", "日本"], 0.6, {}),
    ("Emoji party 🎉🚀 tonight\tat 8pm", "proj", [], 0.1, {"nested": {"a": [1, 2.5, {"b": None}]}, "flag": True}),
    ('=SUM(A1:A2), a backslash \\ and "", ,', "intl", ["csv"], 1.0, {"n": 3, "pi": 3.14159, "s": "x,y\nz"}),
    ("   leading and trailing spaces   ", "default", ["t"], 0.0, {"empty": {}, "list": []}),
]


async def fill(client) -> list[str]:
    ids = []
    for content, namespace, tags, importance, metadata in TRICKY:
        args = {"content": content, "namespace": namespace, "tags": tags, "importance": importance}
        ids.append((await call(client, "remember", **{**args, "metadata": metadata}))["id"])
    # Access counts and last_accessed move away from their defaults.
    # No pause after it: export itself must write the counts still waiting for upkeep.
    await call(client, "recall", query="hello world comma", limit=3)
    return ids


# ---- round trips -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "export_args", "import_args", "vectors_exported"),
    [
        ("all.parquet", {}, {}, True),
        ("all.json", {}, {}, True),
        ("all.csv", {"include_vectors": True}, {}, True),
        ("novec.csv", {}, {"regenerate_embeddings": True}, False),  # csv leaves vectors out by default
        ("novec.json", {"include_vectors": False}, {"regenerate_embeddings": True}, False),
        ("file.bin", {"format": "parquet"}, {"format": "parquet"}, True),
    ],
)
async def test_round_trip(tmp_path, source_settings, name, export_args, import_args, vectors_exported):
    if name == "file.bin":  # export insists on a known extension; import can be told the format
        name = "file.parquet"
    async with server(source_settings) as client:
        await fill(client)
        exported = await call(client, "export_memories", **{"output_path": name, **export_args})
    original = stored(source_settings)
    assert any(r.access_count > 0 for r in original.values())
    path = Path(exported["output_path"])
    assert path == source_settings.allowed_export_dirs[0] / name and path.is_file()
    assert exported["memories_exported"] == len(TRICKY) and exported["file_size_bytes"] == path.stat().st_size
    assert exported["namespaces_included"] == ["default", "intl", "proj"]
    assert exported["include_vectors"] is vectors_exported
    assert exported["compression"] == ("zstd" if name.endswith(".parquet") else None)
    assert exported["file_size_mb"] == pytest.approx(path.stat().st_size / 1_048_576, abs=1e-5)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # exports hold private memories
    assert [p.name for p in path.parent.iterdir()] == [name]  # no temporary left behind

    target = target_settings(tmp_path, source_settings)
    async with server(target) as client:
        preview = await call(client, "import_memories", **{"source_path": name, **import_args})
        assert preview["dry_run"] is True and preview["memories_imported"] == 0
        assert preview["would_import"] == len(TRICKY) and preview["validation_errors"] == []
        assert data(await client.call_tool("stats", {}))["total_memories"] == 0
        result = await call(client, "import_memories", **{"source_path": name, "dry_run": False, **import_args})
    assert result["memories_imported"] == result["total_records_in_file"] == len(TRICKY)
    assert result["memories_skipped"] == result["memories_failed"] == result["new_ids_assigned"] == 0
    assert result["format"] == name.rsplit(".", 1)[1] and result["source_path"] == str(path)
    assert len(result["imported_memories"]) == len(TRICKY)
    copy = stored(target)
    assert copy.keys() == original.keys()
    for memory_id, before in original.items():
        after = copy[memory_id]
        for name_ in FIELDS + TIMES + ("access_count",):
            assert getattr(after, name_) == getattr(before, name_), (name_, before, after)
        if vectors_exported:
            assert np.array_equal(after.vector, before.vector)  # bit for bit
        else:
            assert np.allclose(after.vector, before.vector, atol=1e-6)  # same model, re-embedded


async def test_export_file_headers(source_settings):
    async with server(source_settings) as client:
        await fill(client)
        for name in ("h.parquet", "h.json", "h.csv"):
            await call(client, "export_memories", output_path=name)
        one = await call(client, "export_memories", output_path="proj.json", namespace="proj")
        assert one["memories_exported"] == 3 and one["namespaces_included"] == ["proj"]
        assert_error(
            await client.call_tool("export_memories", {"output_path": "x.json", "namespace": "nope"}),
            "NamespaceNotFoundError",
        )
    exports = source_settings.allowed_export_dirs[0]
    handle = pq.ParquetFile(exports / "h.parquet")
    meta = handle.schema_arrow.metadata
    assert meta[b"spatial_memory.embedding_model"] == b"test-hash-embedder"
    assert meta[b"spatial_memory.embedding_dim"] == b"64" and meta[b"spatial_memory.format_version"] == b"1"
    assert handle.metadata.row_group(0).column(0).compression == "ZSTD"
    assert handle.schema_arrow.field("vector").type == pa.list_(pa.float32(), 64)
    document = json.loads((exports / "h.json").read_text(encoding="utf-8"))
    assert document["format"] == "spatial-memory-mcp" and document["format_version"] == 1
    assert document["embedding_model"] == "test-hash-embedder" and document["embedding_dim"] == 64
    assert document["count"] == len(document["memories"]) == len(TRICKY)
    first = document["memories"][0]
    assert first["importance"] == 0.8 and first["created_at"].endswith("Z") and len(first["vector"]) == 64
    header = (exports / "h.csv").read_bytes().decode("utf-8").split("\r\n", 1)[0]
    assert (
        header
        == "id,content,namespace,importance,tags,source,metadata,created_at,updated_at,last_accessed,access_count,"
        "session_id,sequence,speaker,occurred_at,memory_type,expires_at,pinned,version,provenance,valid_until,"
        "retired_by,superseded_by,relations"
    )


async def test_export_overwrites_atomically_and_failures_leave_nothing(source_settings, monkeypatch):

    async with server(source_settings) as client:
        await fill(client)
        first = await call(client, "export_memories", output_path="same.json")
        await call(client, "remember", content="one more")
        second = await call(client, "export_memories", output_path="same.json")
        assert second["memories_exported"] == first["memories_exported"] + 1
        path = Path(second["output_path"])
        before = path.read_bytes()

        def broken(table):
            yield from []
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(export_file, "_export_rows", broken)
        for name in ("same.json", "new.json", "new.csv"):
            assert_error(await client.call_tool("export_memories", {"output_path": name}), "ExportError", "no space")
        assert path.read_bytes() == before  # the previous export is intact
        assert sorted(p.name for p in path.parent.iterdir()) == ["same.json"]  # no partial file, no temporary


# ---- import behaviour ----------------------------------------------------------------------------


async def test_validation_errors_dry_run_then_all_or_nothing(client, settings):
    rows = records(7)
    rows[1]["importance"] = 1.5
    rows[2]["created_at"] = "yesterday"
    rows[3]["namespace"] = "bad name!"
    rows[4]["content"] = ""
    rows[5]["metadata"] = "[1, 2]"
    rows[5]["tags"] = "not, a, list"  # a comma-separated string is accepted
    rows[6]["vector"] = vec(6)[:10]
    write(settings, "bad.json", rows)
    preview = await call(client, "import_memories", source_path="bad.json")
    assert preview["total_records_in_file"] == 7 and preview["memories_failed"] == 6
    assert preview["would_import"] == 1 and preview["memories_imported"] == 0
    errors = {(e["row_number"], e["field"]) for e in preview["validation_errors"]}
    assert errors == {
        (2, "importance"),
        (3, "created_at"),
        (4, "namespace"),
        (5, "content"),
        (6, "metadata"),
        (7, "vector"),
    }
    by_field = {e["field"]: e for e in preview["validation_errors"]}
    assert by_field["importance"]["value"] == "1.5" and "between" in by_field["importance"]["error"]
    assert by_field["created_at"]["value"] == "yesterday"
    assert by_field["vector"]["error"] == "has 10 dimensions, the store needs 64"
    body = assert_error(
        await client.call_tool("import_memories", {"source_path": "bad.json", "dry_run": False}),
        "MemoryImportError",
        "nothing was imported",
    )
    assert "row 2 importance" in body["message"] and "6 of 7" in body["message"]
    assert await count(client) == 0
    lenient = await call(client, "import_memories", source_path="bad.json", dry_run=False, validate=False)
    assert lenient["memories_imported"] == 1 and lenient["memories_failed"] == 6
    assert len(lenient["validation_errors"]) == 6 and await count(client) == 1


async def test_long_values_are_truncated_in_errors(client, settings):
    write(settings, "long.json", [{"content": "x" * 100_001, "vector": vec(0)}])
    preview = await call(client, "import_memories", source_path="long.json")
    (error,) = preview["validation_errors"]
    assert error["field"] == "content" and len(error["value"]) <= 103 and error["value"].endswith("...")


@pytest.mark.parametrize(
    ("name", "content", "fragment"),
    [
        ("bad.json", '[{"content": "a", "vector": [0.1, 0.2]', "not valid json"),
        ("bad2.json", '{"something": "else"}', "list of memories"),
        ("bad3.json", b"\xff\xfe\x00garbage", "utf-8"),
        ("empty.csv", "", "empty"),
        ("nocontent.csv", "id,namespace,tags\r\n1,a,[]\r\n", "missing the required column 'content'"),
        ("bad.parquet", b"PAR1 this is not parquet", "parquet"),
        ("future.json", {"format": "spatial-memory-mcp", "format_version": 99, "memories": []}, "version 99"),
    ],
)
async def test_malformed_files(client, settings, name, content, fragment):
    write(settings, name, content)
    for dry_run in (True, False):
        args = {"source_path": name, "dry_run": dry_run}
        assert_error(await client.call_tool("import_memories", args), "MemoryImportError", fragment)
    assert await count(client) == 0


async def test_truncated_parquet(client, settings):
    table = pa.table({"content": [f"memory {i}" for i in range(200)], "vector": [vec(i) for i in range(200)]})
    path = settings.allowed_import_dirs[0] / "full.parquet"
    path.parent.mkdir(parents=True)
    pq.write_table(table, path, compression="zstd")
    ok_result = await call(client, "import_memories", source_path="full.parquet")
    assert ok_result["would_import"] == 200
    whole = path.read_bytes()
    for cut in (len(whole) // 2, len(whole) - 5, 20):
        write(settings, "cut.parquet", whole[:cut])
        args = {"source_path": "cut.parquet", "dry_run": False}
        assert_error(await client.call_tool("import_memories", args), "MemoryImportError", "parquet")
    assert await count(client) == 0


async def test_csv_row_problems(client, settings):
    text = 'content,importance,tags\r\n"ok, fine",0.5,"[""a""]"\r\nshort row\r\n"x",abc,[]\r\n"multi\nline",0.2,\r\n'
    write(settings, "rows.csv", text)
    preview = await call(client, "import_memories", source_path="rows.csv", regenerate_embeddings=True, validate=False)
    assert preview["total_records_in_file"] == 4 and preview["would_import"] == 2
    assert [(e["row_number"], e["field"]) for e in preview["validation_errors"]] == [(2, "record"), (3, "importance")]
    assert "has 1 fields, the header has 3" in preview["validation_errors"][0]["error"]
    write(settings, "quote.csv", 'content\r\n"never closed\r\n')
    assert_error(
        await client.call_tool("import_memories", {"source_path": "quote.csv", "regenerate_embeddings": True}),
        "MemoryImportError",
        "csv",
    )


async def test_vectors_missing_wrong_size_or_foreign(client, settings):
    write(settings, "novec.json", [{"content": "no vector here"}])
    body = assert_error(
        await client.call_tool("import_memories", {"source_path": "novec.json", "dry_run": False}), "ValidationError"
    )
    assert "regenerate_embeddings=true" in body["message"]
    write(settings, "dim.json", records(3, dim=63))
    body = assert_error(
        await client.call_tool("import_memories", {"source_path": "dim.json", "dry_run": False}),
        "DimensionMismatchError",
        "63 dimensions",
    )
    assert "64" in body["message"] and "regenerate_embeddings=true" in body["message"]
    header = {"format": "spatial-memory-mcp", "format_version": 1, "embedding_model": "x", "embedding_dim": 384}
    write(settings, "declared.json", {**header, "memories": records(2)})
    assert_error(await client.call_tool("import_memories", {"source_path": "declared.json"}), "DimensionMismatchError")
    write(settings, "model.json", {**header, "embedding_dim": 64, "memories": records(2)})
    assert_error(
        await client.call_tool("import_memories", {"source_path": "model.json"}), "ValidationError", "model 'x'"
    )
    # Re-embedding makes all of them importable.
    for name in ("novec.json", "dim.json", "declared.json", "model.json"):
        args = {"source_path": name, "regenerate_embeddings": True}
        assert (await call(client, "import_memories", **args))["validation_errors"] == []
    assert await count(client) == 0
    await call(client, "import_memories", source_path="dim.json", regenerate_embeddings=True, dry_run=False)
    assert await count(client) == 3


@pytest.mark.parametrize("fmt", ["json", "csv", "parquet"])
async def test_size_and_record_limits(tmp_path, fmt):
    tiny = settings_at(tmp_path / "s", max_import_file_mb=0.001, max_import_records=3)
    async with server(tiny) as client:
        rows = [{"content": f"memory {i}", "vector": vec(i)} for i in range(5)]
        folder = tiny.allowed_import_dirs[0]
        folder.mkdir(parents=True)
        small = [{"content": f"m{i}"} for i in range(5)]
        if fmt == "json":
            (folder / "big.json").write_text(json.dumps(rows))
            (folder / "many.json").write_text(json.dumps(small))
        elif fmt == "csv":
            (folder / "big.csv").write_text("content,vector\r\n" + "".join(f'x,"{r["vector"]}"\r\n' for r in rows))
            (folder / "many.csv").write_text("content\r\n" + "".join(f"m{i}\r\n" for i in range(5)))
        else:
            pq.write_table(
                pa.table({"content": [r["content"] for r in rows], "vector": [r["vector"] for r in rows]}),
                folder / "big.parquet",
            )
            pq.write_table(pa.table({"content": [r["content"] for r in small]}), folder / "many.parquet")
        assert (folder / f"big.{fmt}").stat().st_size > 1048
        body = assert_error(
            await client.call_tool("import_memories", {"source_path": f"big.{fmt}", "dry_run": False}),
            "FileSizeLimitError",
            "limit",
        )
        assert "0.00 MB" in body["message"]
        assert (folder / f"many.{fmt}").stat().st_size < 1048
        args = {"source_path": f"many.{fmt}", "dry_run": False, "regenerate_embeddings": True}
        assert_error(await client.call_tool("import_memories", args), "ImportRecordLimitError", "limit is 3")
        assert await count(client) == 0


async def test_namespace_override_and_parameter_checks(client, settings):
    write(settings, "ns.json", [{**r, "namespace": "orig"} for r in records(3)])
    result = await call(client, "import_memories", source_path="ns.json", namespace_override="moved", dry_run=False)
    assert result["namespace_override"] == "moved" and {m["namespace"] for m in result["imported_memories"]} == {
        "moved"
    }
    assert data(await client.call_tool("namespaces", {}))["namespaces"][0]["name"] == "moved"
    for args, fragment in [
        ({"namespace_override": "bad name!"}, "namespace_override"),
        ({"dedup_threshold": 0.5}, "dedup_threshold"),
        ({"dedup_threshold": 0.995}, "dedup_threshold"),
        ({"format": "xml"}, "format"),
        ({"format": "csv"}, "extension"),
    ]:
        assert_error(
            await client.call_tool("import_memories", {"source_path": "ns.json", **args}), "ValidationError", fragment
        )
    write(settings, "noext", json.dumps(records(1)))
    assert_error(await client.call_tool("import_memories", {"source_path": "noext"}), "ValidationError", "format")
    assert (await call(client, "import_memories", source_path="noext", format="json"))["would_import"] == 1
    assert_error(
        await client.call_tool("import_memories", {"source_path": "missing.json"}), "MemoryImportError", "not found"
    )


async def test_id_and_timestamp_policy(client, settings):
    kept = "3F2504E0-4F89-11D3-9A0C-0305E82C3301"
    rows = [
        {"id": kept, "content": "uppercase uuid", "vector": vec(1), "created_at": "2020-01-02T03:04:05.123456+02:00"},
        {"id": "not-a-uuid", "content": "foreign id", "vector": vec(2), "created_at": "2021-06-01T00:00:00"},
        {"id": kept.lower(), "content": "same id again in the file", "vector": vec(3), "access_count": "7"},
        {"content": "no id", "vector": vec(4), "created_at": 1_600_000_000, "source": "extracted"},
        {"id": None, "content": "odd source", "vector": vec(5), "source": "somewhere", "updated_at": None},
    ]
    write(settings, "ids.json", rows)
    result = await call(client, "import_memories", source_path="ids.json", dry_run=False)
    assert result["new_ids_assigned"] == 4
    ids = [m["id"] for m in result["imported_memories"]]
    assert ids[0] == kept.lower() and len(set(ids)) == 5
    records_ = stored(settings)
    first, second, third, fourth, fifth = (records_[i] for i in ids)
    assert first.created_at == datetime(2020, 1, 2, 1, 4, 5, 123456, tzinfo=timezone.utc)
    assert first.updated_at == first.created_at == first.last_accessed
    assert second.created_at == datetime(2021, 6, 1, tzinfo=timezone.utc)  # naive = UTC
    assert third.access_count == 7 and fourth.created_at == datetime.fromtimestamp(1_600_000_000, timezone.utc)
    assert fourth.source == "extracted" and fifth.source == "imported"
    # Importing again: every id is taken now, so all get new ones.
    again = await call(client, "import_memories", source_path="ids.json", dry_run=False)
    assert again["new_ids_assigned"] == 5 and await count(client) == 10


async def test_deduplicate(client, settings):
    rows = records(4)
    rows.append({"content": "a copy of memory 0", "vector": rows[0]["vector"]})
    noisy = np.array(rows[1]["vector"]) + np.random.default_rng(9).normal(scale=0.05, size=64)
    rows.append({"content": "near copy of memory 1", "vector": (noisy / np.linalg.norm(noisy)).tolist()})
    rows.append({"content": "same vector, other namespace", "vector": rows[0]["vector"], "namespace": "other"})
    write(settings, "dups.json", rows)
    sim = float(np.dot(rows[1]["vector"], rows[5]["vector"]))
    assert 0.9 < sim < 0.99
    strict = await call(client, "import_memories", source_path="dups.json", deduplicate=True, dedup_threshold=0.99)
    assert strict["memories_skipped"] == 1 and strict["would_import"] == 6
    loose = await call(client, "import_memories", source_path="dups.json", deduplicate=True, dedup_threshold=0.9)
    assert loose["memories_skipped"] == 2 and loose["would_import"] == 5
    done = await call(client, "import_memories", source_path="dups.json", deduplicate=True, dry_run=False)
    assert done["memories_imported"] == 6 and await count(client) == 6
    again = await call(client, "import_memories", source_path="dups.json", deduplicate=True, dry_run=False)
    assert again["memories_skipped"] == 7 and again["memories_imported"] == 0 and await count(client) == 6
    plain = await call(client, "import_memories", source_path="dups.json", dry_run=False)
    assert plain["memories_imported"] == 7 and await count(client) == 13


async def test_imported_memories_are_searchable_by_keyword_at_once(client, settings):
    write(settings, "kw.json", [{"content": "the zanzibar protocol", "vector": vec(1)}])
    await call(client, "import_memories", source_path="kw.json", dry_run=False)
    found = await call(client, "hybrid_recall", query="zanzibar", alpha=0.0)
    assert [m["content"] for m in found["memories"]] == ["the zanzibar protocol"]
