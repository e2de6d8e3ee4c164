"""The atlas at a person's scale (issue 36): 10,000 memories, `spatial-memory ui` in headless Chromium.

Per round, a fresh `spatial-memory ui` process on the same store, its saved layout removed:
  first map      the page opened until the map is drawn (the first map ever: the layout computed),
  repeated map   the page reloaded (the layout cached for the data version),
  pan / zoom     frames per second while dragging (120 pointer moves) and wheeling (80 steps), and the
                 canvas drawing alone (one pan per animation frame) with its median draw time, and
                 a frame with the points layer drawn afresh (fresh_ms); the wheel also dispatched
                 in the page, one event per animation frame (zoom_draw_fps); the same drag and
                 wheel on an empty page (empty_*: the ceiling Playwright's round trip sets),
  after a write  one memory added by another process, then the map operation again: placed from its
                 neighbours (no layout), every other point where it was;
  after restart  the process stopped and started again, the page opened: the saved layout read and
                 the memory written meanwhile placed.
Baseline in the same run: the full layout of the same store in this process (what the map after a
write would cost without placement). Medians (min-max) over the rounds.

python -m benchmarks.atlas [--memories 10000] [--rounds 3]   -> benchmarks/results/atlas.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from .common import print_table, write_json

HERE = Path(__file__).resolve().parent


def _post(url: str, token: str, operation: str) -> tuple[float, dict]:
    request = urllib.request.Request(
        url + "api/" + operation, data=b"{}", method="POST", headers={"X-Atlas-Token": token}
    )
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=300) as response:
        body = json.loads(response.read())
    return time.perf_counter() - started, body


def _add_one(store: Path, n: int) -> str:
    from spatial_memory.app import App
    from spatial_memory.config import Settings
    from spatial_memory.records import NewMemory
    from spatial_memory.runtime.resources import Resources

    resources = Resources(Settings(path=store, preload=False), None, None)
    try:
        return App(resources).memory.remember(NewMemory(content=f"The sourdough starter was fed at {n} o'clock.")).id
    finally:
        resources.close(10.0)


class _Ui:
    """`spatial-memory ui --no-open` on the store, for a with-block: (url, base, token)."""

    def __init__(self, store: Path) -> None:
        self.store = store

    def __enter__(self) -> tuple[str, str, str]:
        self.log = open(self.store.parent / "ui.log", "ab")  # noqa: SIM115 - closed in __exit__
        self.process = subprocess.Popen(
            [sys.executable, "-m", "spatial_memory", "ui", "--no-open", "--path", str(self.store)],
            stdout=subprocess.PIPE,
            stderr=self.log,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "SPATIAL_MEMORY_LOG_LEVEL": "WARNING"},
        )
        url = self.process.stdout.readline().decode().strip()
        base, token = url.split("?token=")
        return url, base, token

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        self.process.wait(60)
        self.log.close()


def _page(node, chromium: str, url: str, *, frames: bool) -> dict:
    config = {"url": url, "nodeModules": str(node.node_modules), "chromium": chromium, "frames": frames}
    done = subprocess.run(
        [node.node, str(HERE / "atlas_browser.mjs"), json.dumps(config)], capture_output=True, text=True, timeout=900
    )
    page = json.loads(done.stdout.strip().splitlines()[-1])
    if "failure" in page:
        raise RuntimeError(page["failure"])
    return page


def _round(store: Path, node, chromium: str, n: int) -> dict:
    (store / "atlas" / "layout.npz").unlink(missing_ok=True)  # the first map ever
    with _Ui(store) as (url, base, token):
        page = _page(node, chromium, url, frames=True)
        _, before = _post(base, token, "map")
        new_id = _add_one(store, n)
        placed_s, after = _post(base, token, "map")
    old = dict(zip(before["ids"], zip(before["x"], before["y"])))
    moved = sum(1 for i, x, y in zip(after["ids"], after["x"], after["y"]) if i in old and old[i] != (x, y))
    _add_one(store, n + 1000)  # written while no atlas runs: placed at the next start
    with _Ui(store) as (url, _, _):
        restarted = _page(node, chromium, url, frames=False)
    return {
        **page,
        "after_write_s": placed_s,
        "after_write_layout": after["layout"],
        "after_write_moved": moved,
        "after_write_added": new_id in after["ids"],
        "after_restart_page_s": restarted["first_page_s"],
        "after_restart_status": restarted["status"],
    }


def _full_layout_s(store: Path) -> float:
    from spatial_memory.app import App
    from spatial_memory.config import Settings
    from spatial_memory.runtime.resources import Resources

    resources = Resources(Settings(path=store, preload=False), None, None)
    try:
        app = App(resources)
        records = resources.store().scan(with_vectors=True)
        started = time.perf_counter()
        app.atlas._lay_out(records, 0)  # noqa: SLF001 - the layout alone, as a write without placement would cost
        return time.perf_counter() - started
    finally:
        resources.close(10.0)


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.3g} ({min(values):.3g}-{max(values):.3g})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, str(HERE.parent))
    from tests.atlas_store import seed
    from tests.browser import chromium
    from tests.interop.node import node_tools

    node = node_tools()
    with tempfile.TemporaryDirectory() as root:
        store = Path(root) / "store"
        started = time.perf_counter()
        seed(store, args.memories)
        seed_s = time.perf_counter() - started
        rounds = []
        for k in range(args.rounds):
            rounds.append(_round(store, node, chromium(), k))
            write_json("atlas", {"seed_s": seed_s, "rounds": rounds, "partial": True})
        baseline = [_full_layout_s(store) for _ in range(args.rounds)]
    keys = (
        "first_page_s",
        "repeat_page_s",
        "after_restart_page_s",
        "pan_fps",
        "zoom_fps",
        "draw_fps",
        "zoom_draw_fps",
        "empty_pan_fps",
        "empty_zoom_fps",
        "draw_ms",
        "fresh_ms",
        "after_write_s",
    )
    row = {"memories": args.memories, "drawn": rounds[0]["drawn"], **{k: _median([r[k] for r in rounds]) for k in keys}}
    row["full_layout_s (baseline)"] = _median(baseline)
    row["after_write / full layout"] = (
        f"{statistics.median([r['after_write_s'] for r in rounds]) / statistics.median(baseline):.2f}x"
    )
    row["after_write_layout"] = ",".join(sorted({r["after_write_layout"] for r in rounds}))
    row["points_moved_after_write"] = max(r["after_write_moved"] for r in rounds)
    print_table("The atlas (medians, min-max)", [row])
    path = write_json("atlas", {"seed_s": seed_s, "rounds": rounds, "full_layout_s": baseline, "summary": row})
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
