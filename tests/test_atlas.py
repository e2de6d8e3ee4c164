"""The atlas without a browser: memory_history's diff and update_memory's revert_to through an MCP
client, the MCP App resource and the tools that link it, visualize's SVG as a picture, the map's
layout kept across writes (new memories placed from neighbours), the page's operations, the local
page's guard, the team server's /ui routes, the word diff."""

from __future__ import annotations

import re

import numpy as np
import pytest

from spatial_memory.text.wordiff import word_diff, words
from spatial_memory.tools.atlas_app import ATLAS_URI, MCP_APP_MIME

from .conftest import data

pytestmark = pytest.mark.anyio


# ---- the word diff ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("The meeting is on Monday.", "The meeting is on Tuesday at noon."),
        ("", "Something new"),
        ("Something old", ""),
        ("a  b\nc", "a b c d"),
        ("same text", "same text"),
    ],
)
def test_the_word_diff_rebuilds_both_texts(old, new):
    parts = word_diff(old, new)
    assert "".join(t for op, t in parts if op != "insert") == old
    assert "".join(t for op, t in parts if op != "delete") == new
    assert all(op in ("equal", "delete", "insert") and t for op, t in parts)
    assert all(a[0] != b[0] for a, b in zip(parts, parts[1:]))  # adjacent parts of one op are merged


def test_the_word_diff_works_on_words():
    parts = word_diff("The meeting is on Monday.", "The meeting is on Tuesday.")
    assert parts == [("equal", "The meeting is on "), ("delete", "Monday."), ("insert", "Tuesday.")]
    assert words("a  b\nc") == ["a", "  ", "b", "\n", "c"]


# ---- history, diff and revert through an MCP client -------------------------------------------


async def test_history_with_diffs_and_a_revert_that_keeps_everything(client):
    stored = data(await client.call_tool("remember", {"content": "The launch is on Monday.", "tags": ["plan"]}))
    memory_id = stored["id"]
    await client.call_tool("update_memory", {"memory_id": memory_id, "content": "The launch is on Friday."})
    await client.call_tool("update_memory", {"memory_id": memory_id, "importance": 0.9, "tags": ["plan", "late"]})

    history = data(await client.call_tool("memory_history", {"memory_id": memory_id, "diff": True}))
    newest, middle, oldest = history["versions"]
    assert newest["changed"] == ["tags", "importance"]
    assert newest["diff"] == [{"op": "equal", "text": "The launch is on Friday."}]
    assert middle["changed"] == ["content"]
    assert middle["diff"] == [
        {"op": "equal", "text": "The launch is on "},
        {"op": "delete", "text": "Monday."},
        {"op": "insert", "text": "Friday."},
    ]
    assert oldest["changed"] is None and oldest["diff"] is None
    plain = data(await client.call_tool("memory_history", {"memory_id": memory_id}))
    assert all(v["diff"] is None and v["changed"] is None for v in plain["versions"])

    reverted = data(await client.call_tool("update_memory", {"memory_id": memory_id, "revert_to": 1}))
    assert reverted["memory"]["content"] == "The launch is on Monday."
    assert reverted["memory"]["tags"] == ["plan"] and reverted["memory"]["importance"] == 0.5
    assert reverted["memory"]["version"] == 4 and set(reverted["changed"]) == {"content", "tags", "importance"}
    assert reverted["re_embedded"] is True
    after = data(await client.call_tool("memory_history", {"memory_id": memory_id, "diff": True}))
    assert after["total"] == 4 and after["versions"][0]["provenance"]["via"] == "revert"
    found = data(await client.call_tool("recall", {"query": "launch Monday"}))
    assert found["memories"][0]["content"] == "The launch is on Monday."


async def test_revert_refuses_what_it_cannot_do(client):
    memory_id = data(await client.call_tool("remember", {"content": "One version only."}))["id"]
    missing = data(await client.call_tool("update_memory", {"memory_id": memory_id, "revert_to": 7}))
    assert missing["error"] == "ValidationError" and "no version 7" in missing["message"]
    mixed = data(await client.call_tool("update_memory", {"memory_id": memory_id, "revert_to": 1, "content": "x"}))
    assert mixed["error"] == "ValidationError" and "content" in mixed["message"]
    same = data(await client.call_tool("update_memory", {"memory_id": memory_id, "revert_to": 1}))
    assert same["changed"] == [] and same["memory"]["version"] == 1
    zero = await client.call_tool("update_memory", {"memory_id": memory_id, "revert_to": 0})
    assert zero.is_error
    gone = data(
        await client.call_tool("update_memory", {"memory_id": "00000000-0000-4000-8000-000000000000", "revert_to": 1})
    )
    assert gone["error"] == "MemoryNotFoundError"


# ---- the MCP App --------------------------------------------------------------------------------


async def test_visualize_and_recall_link_the_app_and_the_resource_is_self_contained(client):
    tools = {t.name: t for t in (await client.list_tools()).tools}
    for name in ("visualize", "recall"):
        assert tools[name].meta == {"ui": {"resourceUri": ATLAS_URI}}
    assert tools["remember"].meta is None
    listed = {str(r.uri): r for r in (await client.list_resources()).resources}
    assert listed[ATLAS_URI].mime_type == MCP_APP_MIME
    read = await client.read_resource(ATLAS_URI)
    page = read.contents[0]
    assert page.mime_type == MCP_APP_MIME
    html = page.text
    assert html.startswith("<!doctype html>") and '<meta name="atlas-transport" content="app">' in html
    # Self-contained: no external script, style, font or image, and no import left to resolve.
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", html, re.IGNORECASE)
    assert not re.search(r"url\(|@import|https?://", html)
    assert not re.search(r"^\s*(import|export)\s", html, re.MULTILINE)
    assert len(html.encode()) < 250_000


def test_the_app_source_is_small_and_dependency_free():
    from importlib import resources

    static = resources.files("spatial_memory.atlas").joinpath("static")
    files = [f for f in static.iterdir() if f.name.endswith((".html", ".css", ".js"))]
    assert sum(len(f.read_bytes()) for f in files) < 250_000
    for f in files:
        text = f.read_text()
        assert not re.search(r"from\s+\"(?!\./)", text), f"{f.name} imports a package"
        assert "https://" not in text and "http://" not in text


async def test_an_svg_map_is_also_an_image_resource_with_whole_word_labels(client):
    words_ = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda".split()
    for n in range(8):
        content = f"Notes on {words_[n]} {words_[n + 1]} and the extraordinarily long consequences for {words_[n + 2]}"
        await client.call_tool("remember", {"content": content})
    result = await client.call_tool("visualize", {"format": "svg"})
    assert not result.is_error
    text, picture = result.content
    assert text.type == "text"
    assert picture.type == "resource" and picture.resource.mime_type == "image/svg+xml"
    svg = picture.resource.text
    assert svg == result.structured_content["output"] and svg.lstrip().startswith("<?xml")
    labels = re.findall(r'<text class="label"[^>]*>([^<]*)<title>([^<]*)</title></text>', svg)
    assert labels
    for shown, full in labels:
        assert full.startswith("Notes on ")
        cut = shown.rstrip("…")
        assert full.startswith(cut)
        if shown.endswith("…"):  # cut at a word boundary: the next character of the full text is a space
            assert full[len(cut)] in " ,;:-"
    json_result = await client.call_tool("visualize", {"format": "json"})
    assert len(json_result.content) == 1


def test_truncation_cuts_at_word_boundaries():
    from spatial_memory.services.render import truncate

    assert truncate("The quarterly budget review moved to Thursday", 28) == "The quarterly budget review…"
    assert truncate("short", 28) == "short"
    assert truncate("Supercalifragilisticexpialidocious word", 12) == "Supercalifr…"


# ---- the map's layout ------------------------------------------------------------------------------


def _app(tmp_path, embedder):
    from spatial_memory.app import App
    from spatial_memory.config import Settings
    from spatial_memory.runtime.resources import Resources

    return App(Resources(Settings(path=tmp_path / "store", preload=False), embedder, None))


def test_the_map_is_kept_per_version_and_a_new_memory_is_placed_without_a_new_layout(tmp_path, fake_embedder):
    from spatial_memory.records import NewMemory

    app = _app(tmp_path, fake_embedder)
    try:
        topics = ["garden tomato water", "python deploy script", "travel flight hotel", "cake flour oven"]
        items = [NewMemory(content=f"{topics[i % 4]} note {i} {topics[(i * 7) % 4].split()[0]}") for i in range(60)]
        items[3].pinned = True
        items[5].metadata = {"captured_by": "hook"}
        app.memory.remember_batch(items)
        first = app.atlas.map()
        assert first.layout == "laid out" and first.count == 60 and not first.cached
        assert len(first.x) == len(first.y) == len(first.label) == len(first.flags) == 60
        assert max(map(abs, first.x + first.y)) <= 1.0 + 1e-9
        assert first.regions and all(r.label for r in first.regions)
        assert app.atlas.map().cached  # the same data version: the same map
        flags = dict(zip(first.ids, first.flags))
        assert sum(1 for f in flags.values() if f & 1) == 1 and sum(1 for f in flags.values() if f & 2) == 1

        new_id = app.memory.remember(NewMemory(content="garden tomato water note extra garden")).id
        second = app.atlas.map()
        assert second.layout == "placed" and second.count == 61
        before = {i: (x, y) for i, x, y in zip(first.ids, first.x, first.y)}
        after = {i: (x, y) for i, x, y in zip(second.ids, second.x, second.y)}
        assert all(after[i] == before[i] for i in before)  # nothing moved
        # Placed among its neighbours: nearer to the garden memories than to the others on average.
        garden = [after[i] for i, label in zip(second.ids, second.label) if label.startswith("garden")]
        others = [after[i] for i, label in zip(second.ids, second.label) if not label.startswith("garden")]
        here = np.array(after[new_id])
        assert np.mean([np.linalg.norm(here - p) for p in garden]) < np.mean([np.linalg.norm(here - p) for p in others])

        app.memory.forget(first.ids[0])
        third = app.atlas.map()
        assert third.layout == "kept" and first.ids[0] not in third.ids
    finally:
        app.resources.close(10.0)


def test_many_new_memories_bring_a_new_layout(tmp_path, fake_embedder):
    from spatial_memory.records import NewMemory

    app = _app(tmp_path, fake_embedder)
    try:
        app.memory.remember_batch([NewMemory(content=f"first batch memory number {i}") for i in range(20)])
        assert app.atlas.map().layout == "laid out"
        app.memory.remember_batch([NewMemory(content=f"second batch entry {i} other words") for i in range(20)])
        assert app.atlas.map().layout == "laid out"  # half the map new: laid out again
    finally:
        app.resources.close(10.0)


def test_placement_lands_near_the_nearest_anchors():
    from spatial_memory.algorithms.placement import nearest_anchors, place

    anchors = np.eye(4, dtype=np.float32)
    coords = np.array([[-1.0, -1.0], [1.0, -1.0], [-1.0, 1.0], [1.0, 1.0]])
    query = np.array([[0.99, 0.14, 0.0, 0.0]], dtype=np.float32)
    indices, sims = nearest_anchors(query, anchors, 2)
    assert indices[0].tolist() == [0, 1] and sims[0, 0] > sims[0, 1]
    placed, nearest = place(query, anchors, coords, k=2)
    assert nearest.tolist() == [0]
    assert np.linalg.norm(placed[0] - coords[0]) < np.linalg.norm(placed[0] - coords[1])


# ---- the page's operations ----------------------------------------------------------------------


def test_the_operations_check_their_arguments(tmp_path, fake_embedder):
    from spatial_memory.atlas import api
    from spatial_memory.errors import MemoryNotFoundError, ValidationError
    from spatial_memory.records import NewMemory

    app = _app(tmp_path, fake_embedder)
    try:
        memory_id = app.memory.remember(NewMemory(content="A memory to look at")).id
        assert api.run(app, "memory", {"id": memory_id})["memory"]["content"] == "A memory to look at"
        with pytest.raises(ValidationError, match="unknown operation"):
            api.run(app, "drop_table", {})
        with pytest.raises(ValidationError, match="unknown argument"):
            api.run(app, "update", {"id": memory_id, "namespace": "elsewhere"})
        with pytest.raises(ValidationError, match="wrong type"):
            api.run(app, "update", {"id": memory_id, "pinned": "yes"})
        with pytest.raises(ValidationError, match="missing"):
            api.run(app, "recall", {})
        with pytest.raises(ValidationError):
            api.run(app, "update", {"id": memory_id, "importance": 7})
        with pytest.raises(MemoryNotFoundError):
            api.run(app, "history", {"id": "00000000-0000-4000-8000-000000000000"})
        assert api.run(app, "update", {"id": memory_id, "pinned": True})["memory"]["pinned"] is True
        assert api.run(app, "forget", {"id": memory_id})["deleted"] == 1
    finally:
        app.resources.close(10.0)


# ---- the local page's guard ----------------------------------------------------------------------


async def test_the_local_guard_wants_the_token_and_its_own_host_and_origin():
    from spatial_memory.atlas.server import LoopbackGuard

    reached = []

    async def inner(scope, receive, send):
        reached.append(scope["path"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    guard = LoopbackGuard(inner, token="s3cret", port=8123)

    async def status(path: str, query: bytes = b"", **headers: str) -> int:
        sent = []

        async def send(message):
            sent.append(message)

        scope = {
            "type": "http",
            "path": path,
            "query_string": query,
            "headers": [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()],
        }
        await guard(scope, None, send)
        return sent[0]["status"]

    assert await status("/", b"token=s3cret", host="127.0.0.1:8123") == 200
    assert await status("/", b"token=s3cret", host="localhost:8123") == 200
    assert await status("/api/map", x_atlas_token="s3cret", host="127.0.0.1:8123") == 200
    assert await status("/", host="127.0.0.1:8123") == 401
    assert await status("/", b"token=wrong", host="127.0.0.1:8123") == 401
    assert await status("/", b"token=s3cret", host="attacker.example:8123") == 403
    assert await status("/", b"token=s3cret", host="127.0.0.1:9999") == 403
    assert await status("/", b"token=s3cret", host="127.0.0.1:8123", origin="http://attacker.example") == 403
    assert await status("/", b"token=s3cret", host="127.0.0.1:8123", origin="http://127.0.0.1:8123") == 200
    assert reached == ["/", "/", "/api/map", "/"]  # only the four allowed requests got through


def test_the_ui_command_is_listed():
    from spatial_memory.cli import build_parser

    args = build_parser().parse_args(["ui", "--no-open", "--port", "0", "--path", "/tmp/x"])
    assert args.no_open and args.port == 0 and args.path == "/tmp/x"


def test_the_layout_survives_a_restart_and_a_principal_never_shares_it(tmp_path, fake_embedder):
    from spatial_memory.auth.scope import NamespaceScope
    from spatial_memory.records import NewMemory

    app = _app(tmp_path, fake_embedder)
    try:
        app.memory.remember_batch([NewMemory(content=f"memory number {i} about topic {i % 3}") for i in range(30)])
        first = app.atlas.map()
        scoped = app.for_scope(NamespaceScope.of("someone", ["elsewhere"]))
        assert scoped.atlas.map().count == 0
    finally:
        app.resources.close(10.0)
    saved = tmp_path / "store" / "atlas" / "layout.npz"
    assert saved.is_file()
    again = _app(tmp_path, fake_embedder)
    try:
        restarted = again.atlas.map()
        assert restarted.layout == "kept" and restarted.ids == first.ids
        assert restarted.x == first.x and restarted.y == first.y
        again.memory.remember(NewMemory(content="memory number 99 about topic 1"))
        assert again.atlas.map().layout == "placed"
    finally:
        again.resources.close(10.0)
    saved.write_bytes(b"not a layout")
    damaged = _app(tmp_path, fake_embedder)
    try:
        assert damaged.atlas.map().layout == "laid out"
    finally:
        damaged.resources.close(10.0)
