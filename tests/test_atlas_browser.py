"""The atlas as people and hosts use it, in headless Chromium driven by Playwright (playwright-core
from npm, in the tests' node cache: tests/interop/node.py).

A store of a few hundred memories (tests/atlas_store.py, the bundled model). `spatial-memory ui`
is started as a person starts it; tests/atlas/page.mjs searches, opens, edits, pins, reverts and
forgets through the page, and the store is then read through an MCP client. tests/atlas/host.mjs
is an MCP Apps host: the TypeScript SDK client on the real server, the ui:// resource rendered in
a sandboxed iframe by ext-apps's AppBridge, handed a real visualize result, its tools/call
proxied to the server. Screenshots go to $SPATIAL_MEMORY_ATLAS_SHOTS when set (docs/images).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from .atlas_store import seed
from .browser import chromium, require_chromium

pytestmark = [pytest.mark.model, pytest.mark.slow]
HERE = Path(__file__).resolve().parent
NEW_CONTENT = "The pizza oven reaches 450 degrees in twelve minutes."


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> dict:
    path = tmp_path_factory.mktemp("atlas") / "store"
    seeded = seed(path, 300)
    return {**seeded, "path": path}


@pytest.fixture(scope="module", autouse=True)
def _chromium() -> None:
    require_chromium()  # skips the module where no Chromium is installed


def _env(store: dict) -> dict[str, str]:
    return {**os.environ, "SPATIAL_MEMORY_PATH": str(store["path"]), "SPATIAL_MEMORY_LOG_LEVEL": "WARNING"}


@pytest.fixture(scope="module")
def ui(store):
    """`spatial-memory ui --no-open` on the store: (process, url)."""
    log = open(store["path"].parent / "ui.log", "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [sys.executable, "-m", "spatial_memory", "ui", "--no-open", "--path", str(store["path"])],
        stdout=subprocess.PIPE,
        stderr=log,
        stdin=subprocess.DEVNULL,
        env=_env(store),
    )
    url = process.stdout.readline().decode().strip()
    assert url.startswith("http://127.0.0.1:") and "?token=" in url, url
    yield process, url
    process.terminate()
    assert process.wait(60) == 0, (store["path"].parent / "ui.log").read_text()
    log.close()


def _shots(tmp_path: Path) -> Path:
    shots = Path(os.environ.get("SPATIAL_MEMORY_ATLAS_SHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    return shots


def _run(node, script: str, config: dict) -> dict:
    done = subprocess.run(
        [node.node, str(HERE / "atlas" / script), json.dumps(config)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert "failure" not in seen, f"{seen['failure']}\n{seen.get('panelText', '')}\n{done.stderr[-2000:]}"
    return seen


def _status(url: str, headers: dict[str, str] | None = None) -> int:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_the_page_answers_only_its_own_address_with_the_token(ui):
    _, url = ui
    base, token = url.split("?token=")
    port = base.rstrip("/").rsplit(":", 1)[1]
    assert _status(url) == 200
    assert _status(base) == 401
    assert _status(base + "?token=" + "x" * len(token)) == 401
    assert _status(url, {"Host": f"evil.example:{port}"}) == 403
    assert _status(url, {"Host": "127.0.0.1:1"}) == 403
    assert _status(url, {"Origin": "http://evil.example"}) == 403
    request = urllib.request.Request(base + "api/map", data=b"{}", method="POST")
    assert _status(base + "api/map") in (401, 405)
    try:
        urllib.request.urlopen(request, timeout=30)
        raise AssertionError("an API call without the token was answered")
    except urllib.error.HTTPError as error:
        assert error.code == 401


async def _memories(store: dict, ids: list[str]) -> dict:
    from mcp import Client

    from spatial_memory.config import Settings
    from spatial_memory.server.app import create_server

    async with Client(create_server(Settings(path=store["path"], preload=False))) as client:
        result = await client.call_tool("get_memories", {"memory_ids": ids})
        return result.structured_content


@pytest.mark.anyio
async def test_a_person_searches_opens_edits_pins_reverts_and_forgets(ui, store, node, tmp_path):
    _, url = ui
    some = store["ids"][10:20]
    seen = _run(
        node,
        "page.mjs",
        {
            "url": url,
            "nodeModules": str(node.node_modules),
            "chromium": chromium(),
            "shots": str(_shots(tmp_path)),
            "query": "pizza dough",
            "edit": some[0],
            "newContent": NEW_CONTENT,
            "pin": some[1],
            "forget": some[2],
            "revert": store["edited"],
            "revertTo": 1,
            "journey": [some[5], some[6]],
        },
    )
    assert seen["errors"] == []
    assert seen["dataCount"] == 300  # 300 seeded, one superseded by its successor (drawn beside it)
    assert seen["hitTexts"] and all("pizza" in text.lower() for text in seen["hitTexts"][:5])
    # Weak hits (far below the best or the floor: algorithms/relevance.py) are listed last, as such,
    # and not highlighted; "pizza dough" in a store of 300 memories leaves some of its 20 hits weak.
    weak = seen["weakTexts"]
    assert weak and all("weak" in text for text in weak) and seen["hitTexts"][-len(weak) :] == weak
    assert f"{len(weak)} weak matches" in seen["listTitle"]
    assert seen["highlighted"] == len(seen["hitTexts"]) - len(weak)
    assert "pizza" in seen["panelFromList"].lower()
    assert seen["clickedOpened"] == some[0]
    assert seen["afterEdit"] == NEW_CONTENT
    assert seen["versions"] == 3 and seen["diffInserted"] >= 1 and seen["diffDeleted"] >= 1
    assert seen["afterRevert"] == store["original"]
    assert seen["journeyPath"][0] == some[5] and seen["journeyPath"][-1] == some[6] and seen["journeySteps"] > 0
    assert seen["workCount"] == store["namespaces"]["work"]
    assert seen["conversationCount"] == store["types"]["conversation"]
    assert seen["keyboardZoom"] > 1.1
    assert "Forget" in seen["dialogText"] and seen["countAfterForget"] == 299
    assert "captured by hooks" in seen["capturesTitle"]
    assert seen["theme_light"] == "light" and seen["theme_dark"] == "dark"

    found = await _memories(store, [some[0], some[1], some[2], store["edited"]])
    by_id = {m["id"]: m for m in found["memories"]}
    assert by_id[some[0]]["content"] == NEW_CONTENT
    assert by_id[some[0]]["tags"] == ["edited-in-atlas", "cooking"]
    assert by_id[some[0]]["provenance"]["client"] == "spatial-memory atlas"
    assert by_id[some[1]]["pinned"] is True
    assert found["not_found"] == [some[2]]
    reverted = by_id[store["edited"]]
    assert reverted["content"] == store["original"] and reverted["version"] == 4
    assert reverted["provenance"]["via"] == "revert"


def test_the_mcp_app_in_a_host_shows_a_visualize_result_and_calls_tools(store, node, tmp_path):
    seen = _run(
        node,
        "host.mjs",
        {
            "nodeModules": str(node.node_modules),
            "chromium": chromium(),
            "python": sys.executable,
            "env": _env(store),
            "shot": str(_shots(tmp_path) / "atlas-app-dark.png"),
            "pin": store["ids"][25],
            "query": "pizza dough",
        },
    )
    # The host page's own favicon request is its only failed load.
    assert [e for e in seen["errors"] if "404" not in e] == []
    assert seen["visualizeMeta"] == {"ui": {"resourceUri": "ui://spatial-memory/atlas"}}
    assert seen["recallMeta"] == {"ui": {"resourceUri": "ui://spatial-memory/atlas"}}
    assert seen["resourceMime"] == "text/html;profile=mcp-app"
    assert seen["dataCount_light"] == seen["nodeCount"] == seen["dataCount_dark"]
    assert seen["theme_light"] == "light" and seen["theme_dark"] == "dark"
    assert seen["hits"] > seen["weak"] and seen["highlighted"] == seen["hits"] - seen["weak"]  # weak ones: not
    assert "recall" in seen["calls"] and "update_memory" in seen["calls"] and "get_memories" in seen["calls"]
    assert seen["pinWasOnMap"] and seen["pinnedInStore"] is True
    assert seen["recallHits"] and sorted(seen["highlightedAfterRecall"]) == sorted(seen["recallHits"])
