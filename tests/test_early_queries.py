"""A recall's query embedded from the moment its line arrives (runtime/early_queries.py): the same
vector as embedding it in the tool, only sooner; anything else on the wire left alone."""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import Future

import numpy as np
import pytest

from spatial_memory.runtime.early_queries import EarlyQueries, QueryLines
from spatial_memory.tools.search import QUERY_TOOLS


class Begins:
    def __init__(self) -> None:
        self.texts: list[str] = []

    def begin(self, text: str) -> None:
        self.texts.append(text)


def call_line(name: str, arguments: object, method: str = "tools/call") -> str:
    return json.dumps({"jsonrpc": "2.0", "id": 7, "method": method, "params": {"name": name, "arguments": arguments}})


def test_only_a_query_of_a_tool_that_embeds_it_first_is_begun():
    begins = Begins()
    lines = QueryLines(lambda: begins, QUERY_TOOLS)  # type: ignore[arg-type,return-value]
    for line in [
        call_line("recall", {"query": "where is the deploy script", "limit": 3}),
        call_line("hybrid_recall", {"query": "deploy", "alpha": 0.5}),
        call_line("nearby", {"memory_id": "x"}),
        call_line("remember", {"content": 'a note about "tools/call" and a query'}),
        call_line("recall", {"query": 42}),
        call_line("recall", ["query"]),
        call_line("recall", {"query": "not a call"}, method="tools/list"),
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call"}),
        '{"method": "tools/call", "params": ' + "[" * 100_000 + "]" * 100_000 + "}",
        '"tools/call" garbage {',
        json.dumps([1, "tools/call"]),
    ]:
        assert lines(line) is None  # nothing a line holds makes it raise
    assert begins.texts == ["where is the deploy script", "deploy"]
    QueryLines(lambda: None, QUERY_TOOLS)(call_line("recall", {"query": "no server app yet"}))


@pytest.mark.anyio
async def test_the_tools_named_embed_a_string_query(client):
    tools = {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}
    for name in QUERY_TOOLS:
        assert tools[name]["properties"]["query"]["type"] == "string" and "query" in tools[name]["required"]


class Flaky:
    """begin_query's contract without a model: a future per text, resolved by the test."""

    model_id = "m1"
    dimension = 3

    def __init__(self) -> None:
        self.futures: dict[str, Future] = {}

    def begin_query(self, text: str) -> Future | None:
        if text == "cannot":
            return None
        future: Future = Future()
        self.futures[text] = future
        return future


def test_a_vector_is_taken_once_and_only_for_its_model():
    embedder = Flaky()
    early = EarlyQueries(embedder, pending=3)
    assert early.take("never begun") is None
    early.begin("a")
    early.begin("a")  # under way already
    assert list(embedder.futures) == ["a"]
    embedder.futures["a"].set_result(np.array([[0.6, 0.8, 0.0]], dtype=np.float32))
    assert early.take("a").tolist() == pytest.approx([0.6, 0.8, 0.0])
    assert early.take("a") is None  # taken
    early.begin("b")
    embedder.model_id = "m2"  # the store moved the router to another model path
    embedder.futures["b"].set_result(np.ones((1, 3), dtype=np.float32))
    assert early.take("b") is None
    early.begin("c")
    embedder.futures["c"].set_exception(RuntimeError("model failed"))
    assert early.take("c") is None  # the tool embeds it and meets the error itself
    early.begin("d")
    embedder.futures["d"].set_result(np.full((1, 3), np.nan, dtype=np.float32))
    assert early.take("d") is None
    early.begin("cannot")
    assert early.take("cannot") is None
    for text in ["e", "f", "g", "h"]:  # a fourth pending one drops the oldest
        early.begin(text)
        embedder.futures[text].set_result(np.ones((1, 3), dtype=np.float32))
    assert early.take("e") is None and early.take("h") is not None
    assert early.taken == 2
    EarlyQueries(None).begin("no embedder")
    EarlyQueries(embedder).begin("x" * 20_000)  # longer than any query: left to the tool's check


def test_old_pending_vectors_are_dropped(monkeypatch):
    embedder = Flaky()
    early = EarlyQueries(embedder, max_age=10.0)
    clock = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    early.begin("old")
    clock[0] += 11
    early.begin("new")
    assert embedder.futures["old"].cancelled()  # dropped before it began: it never will
    assert early.take("old") is None


def test_an_early_vector_is_the_models_own_bit_for_bit(real_embedder):
    from spatial_memory.evaluation.soak import short_texts

    early = EarlyQueries(real_embedder, pending=64)
    texts = [*short_texts(40, seed=8), "ok", "a longer query about what the team decided for the release " * 6]
    real_embedder.load()
    for text in texts:
        early.begin(text)
    for text in texts:
        vector = early.take(text)
        assert vector is not None and np.array_equal(vector, real_embedder.embed_query(text))
    assert early.taken == len(texts)


def test_a_recall_whose_query_was_begun_early_answers_as_one_that_was_not(settings, real_embedder):
    from spatial_memory.app import App
    from spatial_memory.records import NewMemory
    from spatial_memory.runtime.resources import Resources
    from spatial_memory.services.results import RecallResult

    app = App(Resources(settings, real_embedder))
    app.memory.remember_batch(
        [
            NewMemory(content=text)
            for text in ["The staging server runs on port 8443", "Lunch is at noon", "Port 22 is closed"]
        ]
    )
    early = app.resources.early_queries

    def answer(result: RecallResult) -> list[tuple[str, float]]:
        return [(m.id, m.similarity) for m in result.memories]

    for query in ["which port does staging use?", "when is lunch"]:
        plain = answer(app.search.recall(query, limit=3))
        early.begin(query)
        assert early.pending(query)
        assert answer(app.search.recall(query, limit=3)) == plain
        assert not early.pending(query)  # taken by the recall
        early.begin(query)
        assert app.search.hybrid_recall(query, alpha=0.3, limit=3).memories[0].id == plain[0][0]
    assert early.taken == 4


def test_every_onnx_path_begins_queries_in_its_one_session(bundled_models):
    """fp32 too: the query thread runs the encoder's own session, so beginning early costs no memory."""
    from spatial_memory.embeddings import EmbeddingRouter

    router = EmbeddingRouter(precision="fp32", cache_dir=bundled_models)
    assert router.begin_query("not loaded yet") is None  # the tool embeds it, loading the model
    router.load()
    future = router.begin_query("which port does staging use?")
    assert future is not None
    assert np.array_equal(future.result(timeout=60)[0], router.embed_query("which port does staging use?"))


def test_the_query_thread_takes_work_before_submit_returns_unless_busy(monkeypatch):
    """An idle thread has taken the work (and so the interpreter lock) before `submit` returns; a
    busy one is not waited for."""
    import threading

    from spatial_memory.embeddings import query_thread

    monkeypatch.setattr(query_thread, "HANDOVER_SECONDS", 30.0)  # a wait that never times out here
    thread: query_thread.QueryThread[int] = query_thread.QueryThread("test-query")
    gate = threading.Event()
    first = thread.submit(lambda: gate.wait(10) and 1)
    assert first.running()  # taken before submit returned
    started = time.monotonic()
    second = thread.submit(lambda: 2)  # behind the first: not waited for
    assert time.monotonic() - started < 15 and not second.running() and not second.done()
    assert second.cancel()  # still queued: it can be withdrawn
    gate.set()
    assert first.result(10) == 1 and second.cancelled()

    def fails() -> int:
        raise RuntimeError("model failed")

    with pytest.raises(RuntimeError, match="model failed"):
        thread.submit(fails).result(10)
    assert thread.submit(lambda: 3).result(10) == 3  # the thread lives on


def test_a_query_still_queued_is_withdrawn_and_embedded_by_its_tool():
    """Queries begun faster than one thread embeds them: a tool whose query has not started takes it
    back (and embeds it itself, as soon), and one pushed out of the pending ones never runs."""
    import threading

    from spatial_memory.embeddings.query_thread import QueryThread

    gate = threading.Event()
    ran: list[str] = []

    class Queued:
        model_id = "m1"
        dimension = 3

        def __init__(self) -> None:
            self.thread: QueryThread[np.ndarray] = QueryThread("test-early")

        def begin_query(self, text: str) -> Future:
            def embed() -> np.ndarray:
                gate.wait(10)
                ran.append(text)
                return np.array([[1.0, 0.0, 0.0]], dtype=np.float32)

            return self.thread.submit(embed)

    early = EarlyQueries(Queued(), pending=2)
    early.begin("first")  # running, held at the gate
    deadline = time.monotonic() + 10
    while not early._pending["first"][2].running():  # noqa: SLF001 - waiting for the thread to start it
        assert time.monotonic() < deadline
        time.sleep(0.01)
    early.begin("second")  # queued behind it
    assert early.take("second") is None  # withdrawn: the tool embeds it
    early.begin("third")
    early.begin("fourth")  # pushes "first" out (it runs on, untaken); "third" is now the oldest
    early.begin("fifth")  # pushes "third" out before it ever ran
    gate.set()
    while len(ran) < 3:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert early.take("fifth") is not None
    assert ran == ["first", "fourth", "fifth"]


@pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2, reason="needs two cores to choose from"
)
def test_the_query_thread_runs_beside_its_caller():
    """Each piece of work runs on a core other than the one its caller (the event loop) is on, so
    the two do not queue for one core; a caller on another core moves it again."""
    from spatial_memory.embeddings.query_thread import QueryThread

    allowed = os.sched_getaffinity(0)
    thread: QueryThread[set[int]] = QueryThread("test-beside")
    try:
        for cpu in sorted(allowed)[:2]:
            os.sched_setaffinity(0, {cpu})  # this (calling) thread only
            assert thread.submit(lambda: os.sched_getaffinity(0)).result(10) == allowed - {cpu}
    finally:
        os.sched_setaffinity(0, allowed)


def test_where_cores_cannot_be_chosen_the_query_thread_is_left_where_it_is(monkeypatch):
    from spatial_memory.embeddings import query_thread

    monkeypatch.setattr(query_thread.sys, "platform", "darwin")
    thread: query_thread.QueryThread[int] = query_thread.QueryThread("test-anywhere")
    assert thread.submit(lambda: 5).result(10) == 5
    if hasattr(os, "sched_getaffinity"):
        assert os.sched_getaffinity(thread._thread.native_id) == os.sched_getaffinity(0)  # noqa: SLF001
