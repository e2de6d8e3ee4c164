"""Hostile input through a real MCP client session: arguments for every tool generated from its
published JSON schema (hypothesis-jsonschema) and far beyond it - wrong types, huge strings,
deep nesting, NaN and infinity, unicode edge cases, SQL and path fragments. Every call succeeds
or returns a typed error; the server never dies, never shows a traceback, never writes to stdout
outside the protocol, and the store's count always matches what succeeded."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

from spatial_memory.config import Settings
from spatial_memory.server.app import create_server
from spatial_memory.validation import argument_problem

from .conftest import data as data_of
from .hash_embedder import HashEmbedder
from .reliability import RawServer, assert_typed, budget, new_store, open_store, wire_body
from .test_interop_typescript import lean_text

warnings.filterwarnings("ignore", module="hypothesis_jsonschema")


def _tools() -> list[Any]:
    import tempfile

    server = create_server(Settings(path=Path(tempfile.mkdtemp()) / "store", preload=False))
    return anyio.run(server.list_tools)


TOOLS = {t.name: t for t in _tools()}
EXAMPLES = int(15 * budget(60) / 60)  # per tool and kind; the soak mode scales it up
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    derandomize=False,
    suppress_health_check=list(HealthCheck),
)

# ---- hostile values -------------------------------------------------------------------------

SQL = [
    "'; DROP TABLE memories; --",
    "x' OR '1'='1",
    "namespace = 'a' OR true",
    "%' OR 1=1 --",
    "\\'; DELETE FROM memories WHERE true; --",
    "1); DROP TABLE memories",
    "content LIKE '%'",
]
PATHS = [
    "../../../../etc/passwd",
    "/etc/passwd",
    "..\\..\\windows\\system32\\config",
    "~/.ssh/id_rsa",
    "file:///etc/shadow",
    "exports/../../outside.json",
    "/dev/zero",
    "/proc/self/environ",
    "nul.json\x00.txt",
    "a" * 300 + ".json",
    "CON.json",
]
UNICODE = [
    "\ud800",  # lone surrogates
    "a\udfffb",
    "\x00",
    "a\x00b",
    "\u202eevil\u202c",  # RTL override
    "\u200f\u05e9\u05dc\u05d5\u05dd",
    "e" + "\u0301" * 500,  # combining marks
    "\U0001f600\U0001f469\u200d\U0001f4bb",
    "\ufeff\uffff\ufffe",
    "\u0000\u0001\u001f\u007f",
    "\U0010ffff",
    "  ",
    "",
]


def deep(depth: int, kind: str) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value] if kind == "list" else {"k": value}
    return value


def huge(size: int, char: str) -> str:
    return char * (size // len(char.encode("utf-8", "surrogatepass")))


scalars = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 1e308, -1e-308]),
    st.booleans(),
    st.none(),
    st.text(max_size=50),
    st.sampled_from(SQL + PATHS + UNICODE),
)
hostile = st.one_of(
    scalars,
    st.lists(scalars, max_size=5),
    st.dictionaries(st.text(max_size=10) | st.sampled_from(SQL + UNICODE), scalars, max_size=5),
    st.builds(deep, st.sampled_from([65, 120, 250]), st.sampled_from(["list", "dict"])),
    st.builds(huge, st.sampled_from([1_000_000, 5_000_000]), st.sampled_from(["x", "é", "\U0001f600", "'"])),
)
filter_columns = st.sampled_from(
    [
        "namespace",
        "tags",
        "importance",
        "source",
        "created_at",
        "access_count",
        "content",
        "id",
        "metadata.k",
        "metadata.",
        "vector",
        "namespace; DROP TABLE memories",
    ]
) | st.text(max_size=20)
operators = st.sampled_from(["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "contains", "like", "$where", ""])
hostile_filters = st.dictionaries(filter_columns, hostile | st.dictionaries(operators, hostile, max_size=3), max_size=3)


@st.composite
def beyond_schema(draw, tool) -> dict:
    """Valid-looking arguments with one or more values replaced by something hostile."""
    args = dict(draw(from_schema(tool.input_schema)))
    names = list(tool.input_schema.get("properties", {})) + ["unexpected_argument"]
    for name in draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True)):
        if name in ("filters",) and draw(st.booleans()):
            args[name] = draw(hostile_filters)
        elif name == "metadata" and draw(st.booleans()):
            args[name] = draw(st.dictionaries(st.sampled_from(["k"] + UNICODE + SQL), hostile, max_size=4))
        elif name == "memories" and draw(st.booleans()):
            args[name] = draw(
                st.lists(
                    st.fixed_dictionaries({"content": hostile}, optional={"metadata": hostile, "namespace": hostile}),
                    max_size=3,
                )
            )
        else:
            args[name] = draw(hostile)
    if draw(st.integers(0, 9)) == 0 and tool.input_schema.get("required"):
        args.pop(tool.input_schema["required"][0], None)
    return args


# ---- the in-memory session --------------------------------------------------------------------

COUNT_CHANGE = {
    # A skipped duplicate stores nothing; superseded memories leave the current ones.
    "remember": lambda r: (1 if r.get("stored", True) else 0) - len(r.get("superseded", [])),
    "remember_batch": lambda r: r["count"] - len(r.get("superseded", [])),
    "forget": lambda r: -r["deleted"],
    "forget_batch": lambda r: -r["deleted"],
    "delete_namespace": lambda r: 0 if r["dry_run"] else -r["memories_deleted"],
    "extract": lambda r: r["memories_created"],
    # distill adds one memory per group and deletes none; the other strategies delete the absorbed
    "consolidate": lambda r: (
        0 if r["dry_run"] else sum(g["action_taken"] == "distilled" for g in r["groups"]) - r["memories_deleted"]
    ),
    "import_memories": lambda r: r["memories_imported"],
    "build_skill": lambda r: 1,
}
KEEPS_COUNT = {
    "rename_namespace",
    "decay",
    "reinforce",
    "export_memories",
    "update_memory",
    "relate",
    "unrelate",
    "execute_skill",
    "deprecate_skill",
}


class Session:
    def __init__(self, portal, client, settings_: Settings) -> None:
        self.portal, self.client, self.settings = portal, client, settings_
        self.expected = 0
        self.calls = 0
        self.outcomes: dict[str, int] = {}
        self.known_ids: list[str] = []

    def count(self) -> int:
        result = self.portal.call(self.client.call_tool, "namespaces", {})
        return result.structured_content["total_memories"]

    def check(self, name: str, args: dict) -> None:
        try:
            result = self.portal.call(self.client.call_tool, name, args)
        except UnicodeEncodeError:
            # The client cannot even encode a lone surrogate in a key; nothing reached the server.
            assert argument_problem(args, 10**6) is not None
            self.outcomes["refused by the client"] = self.outcomes.get("refused by the client", 0) + 1
            return
        self.calls += 1
        data = data_of(result)
        assert isinstance(data, dict), result
        text = result.content[0].text
        assert "Traceback" not in text
        # An error's text is its typed body; a success's, the lean form of its structured content.
        assert json.loads(text) == (data if result.is_error else lean_text(name, data))
        if result.is_error:
            assert set(data) == {"error", "message", "isError"}, data
            assert_typed(data)
            label = data["error"]
        else:
            assert "error" not in data or not isinstance(data.get("error"), str), data
            label = "ok"
            if name in COUNT_CHANGE:
                self.expected += COUNT_CHANGE[name](data)
            elif name not in KEEPS_COUNT and not (TOOLS[name].annotations and TOOLS[name].annotations.read_only_hint):
                self.expected = self.count()  # a tool this test does not know yet: resynchronize
            if "id" in data and isinstance(data["id"], str):
                self.known_ids.append(data["id"])
            self.known_ids.extend(i for i in data.get("ids", []) if isinstance(i, str))
        self.outcomes[label] = self.outcomes.get(label, 0) + 1
        assert self.count() == self.expected, f"store count drifted after {name}"


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    from mcp import Client

    root = tmp_path_factory.mktemp("fuzz")
    settings_ = Settings(path=root / "store", preload=False, access_flush_seconds=0.05, warm_up_projection=False)
    with anyio.from_thread.start_blocking_portal() as portal:
        client_cm = portal.wrap_async_context_manager(Client(create_server(settings_, embedder=HashEmbedder())))
        with client_cm as client:
            s = Session(portal, client, settings_)
            for i in range(12):  # something to find, cluster and walk
                s.check("remember", {"content": f"seed memory {i} about topic {i % 3}", "namespace": "seed"})
            exports = root / "store" / "exports"
            exports.mkdir(parents=True, exist_ok=True)
            s.check("export_memories", {"output_path": "seed.json"})  # a real file for import_memories to chew on
            assert s.outcomes == {"ok": 13} and (exports / "seed.json").is_file(), s.outcomes
            yield s
    # The store the server wrote opens cleanly and holds what the calls said it holds.
    assert open_store(root / "store").count() == s.expected
    print(f"\nin-memory fuzz: {s.calls} hostile and schema-generated calls, outcomes {s.outcomes}")


def with_known_ids(session_: Session, args: dict, pick: int) -> dict:
    if not session_.known_ids:
        return args
    known = session_.known_ids[pick % len(session_.known_ids)]
    for key in ("memory_id", "start_id", "end_id"):
        if key in args:
            args[key] = known
    for key in ("memory_ids", "highlight_ids"):
        if isinstance(args.get(key), list) and args[key]:
            args[key] = [known] + args[key][1:]
    if "source_path" in args and pick % 2:
        args["source_path"] = "seed.json"
    return args


def test_every_tool_this_test_accounts_for_is_served():
    """The fuzz runs over the tools the server lists; one removed would silently drop out of it."""
    known = set(COUNT_CHANGE) | KEEPS_COUNT
    assert known <= set(TOOLS), sorted(known - set(TOOLS))


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_schema_generated_arguments(session, name):
    tool = TOOLS[name]

    @FUZZ
    @given(args=from_schema(tool.input_schema), pick=st.integers(0, 10**6))
    def run(args, pick):
        session.check(name, with_known_ids(session, dict(args), pick))

    run()


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_arguments_beyond_the_schema(session, name):
    tool = TOOLS[name]

    @FUZZ
    @given(args=beyond_schema(tool), pick=st.integers(0, 10**6))
    def run(args, pick):
        session.check(name, with_known_ids(session, args, pick))

    run()


def test_unknown_tools_and_non_object_arguments(session):
    for name, args in [("no_such_tool", {}), ("remember\x00", {"content": "x"}), ("../remember", {}), ("", {})]:
        session.check(name, args)


# ---- the same over a real stdio pipe, raw bytes included ---------------------------------------

INIT = '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":%s}}'
RAW_ARGUMENTS = [
    ("remember", '{"content":"raw nan","importance":NaN}'),
    ("remember", '{"content":"raw inf","importance":Infinity}'),
    ("remember", '{"content":"raw -inf","importance":-Infinity}'),
    ("remember", '{"content":"nan in metadata","metadata":{"x":NaN,"y":[Infinity]}}'),
    ("recall", '{"query":"x","filters":{"importance":{"gt":NaN}}}'),
    ("recall", '{"query":"x","min_similarity":NaN}'),
    ("wander", '{"temperature":Infinity}'),
    ("decay", '{"half_life_days":NaN,"dry_run":false}'),
    ("remember", '{"content":"deep","metadata":' + '{"a":' * 10_000 + "1" + "}" * 10_000 + "}"),
    ("remember", '{"content":"deep","metadata":{"a":' + "[" * 10_000 + "]" * 10_000 + "}}"),
    ("recall", '{"query":"x","filters":{"metadata.a":' + "[" * 10_000 + "]" * 10_000 + "}}"),
    ("forget", '{"filters":' + '{"a":' * 100 + "1" + "}" * 100 + "}"),
    ("remember", '{"content":"lone \\ud800 surrogate"}'),
    ("remember", '{"content":"a\\u0000b"}'),
    ("remember", '{"content":"' + "\\u202e" * 1000 + '"}'),
    ("remember", '{"content":"' + "x" * 5_000_000 + '"}'),
    ("remember_batch", '{"memories":[' + ",".join(['{"content":"m"}'] * 5_000) + "]}"),
    ("recall", '{"query":"\' OR 1=1 --","namespace":"x\'; DROP TABLE memories; --"}'),
    ("export_memories", '{"output_path":"../../../../tmp/evil.json"}'),
    ("import_memories", '{"source_path":"/etc/passwd","dry_run":false}'),
    ("remember", "[1,2,3]"),
    ("remember", '"just a string"'),
    ("remember", "null"),
]


def test_hostile_bytes_over_stdio(tmp_path):
    store = new_store(tmp_path, "store")
    with RawServer(store) as server:
        server.initialize()
        server.ok("remember", {"content": "baseline memory"})
        expected = 1
        answered = 0
        for i, (name, raw) in enumerate(RAW_ARGUMENTS, start=1000):
            server.send_line(INIT % (i, name, raw))
            answer = server.wait(i, timeout=120)
            answered += 1
            assert "Traceback" not in json.dumps(answer)
            if "result" in answer:
                assert_typed(wire_body(answer["result"]))
                if not answer["result"].get("isError") and name == "remember":
                    expected += 1
            else:
                assert answer["error"]["code"] in (-32700, -32600, -32602), answer
        # Requests that are not even valid JSON-RPC: answered (with the id when readable) or ignored,
        # never fatal.
        for line in [
            "{not json",
            '{"jsonrpc":"2.0","id":77,"method":',
            "\x00\x01\x02",
            "[]",
            "{}",
            '{"jsonrpc":"2.0","id":78,"method":"tools/call","params":"nope"}',
            '{"jsonrpc":"2.0","id":79,"method":"no/such/method"}',
            "\ud800".encode("utf-8", "surrogatepass"),
        ]:
            server.send_line(line)
        for request_id in (77, 78, 79):
            answer = server.wait(request_id, timeout=60)
            assert "error" in answer or answer.get("result", {}).get("isError"), answer
        # Schema-generated arguments for every tool over the pipe as well (a smaller pass).
        calls = 0
        for tool_name, tool in sorted(TOOLS.items()):

            @settings(max_examples=3, deadline=None, database=None, suppress_health_check=list(HealthCheck))
            @given(args=from_schema(tool.input_schema), name=st.just(tool_name))
            def run(args, name):
                nonlocal calls, expected
                raw = json.dumps(args, ensure_ascii=False)
                server.send_line(INIT % (5000 + calls, name, raw))
                answer = server.wait(5000 + calls, timeout=120)
                calls += 1
                if "result" in answer:
                    result = answer["result"]
                    assert_typed(wire_body(result))
                    if not result.get("isError") and name in COUNT_CHANGE:
                        expected += COUNT_CHANGE[name](result["structuredContent"])
                else:  # e.g. a lone surrogate hypothesis put in a string: a parse error, answered
                    assert answer["error"]["code"] == -32700, answer

            run()
        total = server.ok("namespaces", {})["total_memories"]
        assert total == expected
        assert server.proc.poll() is None, "the server died"
        assert not server.stray_stdout, server.stray_stdout[:3]
        assert server.close() == 0
        assert "Traceback" not in server.stderr_tail(10**8), server.stderr_tail()
    assert open_store(store).count() == expected
    print(f"\nstdio fuzz: {answered + 3 + calls} raw and generated requests, all answered, {expected} memories stored")
