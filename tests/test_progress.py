"""Progress you can trust, through the Python SDK client against the shipped server and its real
bundled model: a long call sends `notifications/progress` with done-of-total that only grows (the
texts embedded of a batch, the steps of a map or a consolidation), and `notifications/cancelled`
stops a batch part-way with nothing written. (The TypeScript client's view of the same:
tests/test_interop_typescript.py.)"""

from __future__ import annotations

import anyio
import pytest
from mcp import Client

from .reliability import stdio_params

pytestmark = [pytest.mark.anyio, pytest.mark.model]

NS = "progress"
WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa".split()


def items(n: int, namespace: str = NS) -> list[dict]:
    """Distinct texts of a few dozen tokens each: enough model work for several progress reports."""
    return [
        {"content": f"note {i}: " + " ".join(WORDS[(i + k) % len(WORDS)] for k in range(40)), "namespace": namespace}
        for i in range(n)
    ]


class Recorder:
    def __init__(self) -> None:
        self.seen: list[tuple[float, float | None, str | None]] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.seen.append((progress, total, message))

    def check_growing(self) -> None:
        values = [p for p, _, _ in self.seen]
        assert values == sorted(values) and len(set(values)) == len(values), self.seen


def server(tmp_path):
    (tmp_path / "store").mkdir(exist_ok=True)
    return stdio_params(tmp_path / "store", fake=False, SPATIAL_MEMORY_PRELOAD="false")


async def test_long_calls_report_done_of_total(tmp_path):
    async with Client(server(tmp_path), mode="legacy", read_timeout_seconds=600) as client:
        batch = Recorder()
        stored = await client.call_tool("remember_batch", {"memories": items(300)}, progress_callback=batch)
        assert not stored.is_error, stored.content[0].text
        batch.check_growing()
        assert len(batch.seen) >= 2, batch.seen  # real progress, not one final report
        assert {total for _, total, _ in batch.seen} == {300.0}
        assert batch.seen[-1][0] == 300.0 and {m for _, _, m in batch.seen} == {"embedding"}

        for name, arguments, total in (
            ("visualize", {"namespace": NS, "max_memories": 200}, 4.0),
            ("consolidate", {"namespace": NS, "dry_run": False, "similarity_threshold": 0.99}, 4.0),
            ("decay", {"namespace": NS, "dry_run": False}, 3.0),
            ("export_memories", {"output_path": "all.json", "include_vectors": False}, 3.0),
        ):
            steps = Recorder()
            result = await client.call_tool(name, arguments, progress_callback=steps)
            assert not result.is_error, (name, result.content[0].text)
            steps.check_growing()
            # (the first map of a process also sends a heartbeat while it loads its code: no total)
            real = [(p, t) for p, t, _ in steps.seen if t is not None]
            assert real and {t for _, t in real} == {total}, (name, steps.seen)
            assert all(0 < p <= total for p, _ in real), (name, steps.seen)

        # An import whose file has no vectors embeds every memory: done of total is the texts embedded.
        imported = Recorder()
        arguments = {"source_path": "all.json", "namespace_override": "again", "dry_run": False}
        result = await client.call_tool(
            "import_memories", {**arguments, "regenerate_embeddings": True}, progress_callback=imported
        )
        assert not result.is_error, result.content[0].text
        count = result.structured_content["memories_imported"]
        imported.check_growing()
        assert imported.seen and {t for _, t, _ in imported.seen} == {float(count)} and imported.seen[-1][0] == count


async def test_a_cancelled_batch_writes_nothing_and_the_server_goes_on(tmp_path):
    async with Client(server(tmp_path), mode="legacy", read_timeout_seconds=600) as client:
        first = await client.call_tool("remember", {"content": "the model is loaded", "namespace": "warm"})
        assert not first.is_error
        seen = Recorder()
        with anyio.CancelScope() as scope:

            async def cancel_on_progress(progress: float, total: float | None, message: str | None) -> None:
                await seen(progress, total, message)
                scope.cancel()  # the client abandons the request: it sends notifications/cancelled

            await client.call_tool("remember_batch", {"memories": items(1000)}, progress_callback=cancel_on_progress)
        assert scope.cancelled_caught and seen.seen and seen.seen[0][0] < 1000
        await anyio.sleep(3)  # the worker stops at its next batch; its commit would be refused
        listed = await client.call_tool("namespaces", {})
        names = {n["name"] for n in listed.structured_content["namespaces"]}
        assert names == {"warm"}, names
        again = await client.call_tool("remember_batch", {"memories": items(3)})
        assert not again.is_error and again.structured_content["count"] == 3
