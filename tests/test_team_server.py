"""The team server: MCP over streamable HTTP with bearer tokens and OAuth, principals confined to
their namespaces.

One server for the module (a subprocess serving as `--transport http` does, with the fast fake
embedder: tests/reliability_server.py), with a tokens file and OAuth configured together; the
OAuth issuer's metadata and JWKS are served by a tiny HTTP server of the tests' own, and the
access tokens are signed with the tests' own RSA and EC keys.

Principals: `victor` owns the namespace `victim` (memories carrying the word zanzibar, a relation,
an export file); `mallory` tries every tool on them; `alice` (Python SDK client) and `tessa`
(TypeScript SDK client) run the every-tool scenario of test_interop_typescript.py in namespaces of
their own; `carol` comes with an OAuth access token.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import asynccontextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2 as httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from mcp.shared.exceptions import MCPError

from spatial_memory.auth import tokens

from .interop.node import TsClient
from .reliability import server_args, server_env
from .test_interop_typescript import every_tool_steps, exchange_env, seed_memories, succeeded, typed_error

pytestmark = pytest.mark.anyio

MARKER = "zanzibar"
SECRET = "vault code is"  # in victor's memories only, never in an argument (a query is echoed back)
ISSUER_PATH = "/issuer"
EVERY_TOOL_NAMESPACES = ("interop", "extracted", "imported", "renamed", "elsewhere", "empty")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Issuer:
    """An OAuth authorization server as far as a resource server sees one: its metadata and JWKS."""

    def __init__(self) -> None:
        self.rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.ec = ec.generate_private_key(ec.SECP256R1())
        keys = [
            {**json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.rsa.public_key())), "kid": "rsa-1", "alg": "RS256"},
            {**json.loads(jwt.algorithms.ECAlgorithm.to_jwk(self.ec.public_key())), "kid": "ec-1", "alg": "ES256"},
        ]
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server API
                if self.path == "/.well-known/oauth-authorization-server" + ISSUER_PATH:
                    body = {"issuer": issuer.url, "jwks_uri": issuer.base + "/jwks"}
                elif self.path == "/jwks":
                    body = {"keys": keys}
                else:
                    self.send_error(404)
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.url = self.base + ISSUER_PATH
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def token(self, audience: str, *, key: Any = None, kid: str = "rsa-1", **claims: Any) -> str:
        now = int(time.time())
        body = {"iss": self.url, "aud": audience, "sub": "carol", "iat": now, "exp": now + 600, **claims}
        body = {k: v for k, v in body.items() if v is not None}
        algorithm = "ES256" if kid.startswith("ec") else "RS256"
        return jwt.encode(body, key or (self.ec if algorithm == "ES256" else self.rsa), algorithm, headers={"kid": kid})


class Team:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.tokens_file = root / "tokens.json"
        mint = tokens.mint
        self.tokens = {
            "victor": mint(self.tokens_file, "victor", ["victim"]),
            "mallory": mint(self.tokens_file, "mallory", ["mallory", "team-*"], ["handbook"]),
            "alice": mint(self.tokens_file, "alice", [f"alice-{n}" for n in EVERY_TOOL_NAMESPACES]),
            "tessa": mint(self.tokens_file, "tessa", ["tessa-*"]),
        }
        self.issuer = Issuer()
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.resource_url = self.url  # OAuth's audience: the endpoint as clients reach it
        self.exchange = root / "exchange"
        self.env = {
            "SPATIAL_MEMORY_TRANSPORT": "http",
            "SPATIAL_MEMORY_PORT": str(self.port),
            "SPATIAL_MEMORY_TOKENS_FILE": str(self.tokens_file),
            "SPATIAL_MEMORY_OAUTH_ISSUER": self.issuer.url,
            "SPATIAL_MEMORY_ACCESS_FLUSH_SECONDS": "0.05",
            "SPATIAL_MEMORY_HTTP_MAX_REQUEST_MB": "1",
            **exchange_env(self.exchange),
        }

    def start(self) -> None:
        """The HTTP server as shipped (serve_http), with the fake embedder: tests/reliability_server.py."""
        self.log = (self.root / "server.log").open("w")
        self.process = subprocess.Popen(
            [sys.executable, *server_args(fake=True)],
            env=server_env(self.root / "store", **self.env),
            cwd=self.root,
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=self.log,
        )
        deadline = time.monotonic() + 120
        while True:
            assert self.process.poll() is None, (self.root / "server.log").read_text()
            assert time.monotonic() < deadline, "the HTTP server did not start"
            try:
                httpx.get(f"http://127.0.0.1:{self.port}/.well-known/oauth-protected-resource/mcp", timeout=5)
                return
            except httpx.TransportError:
                time.sleep(0.1)

    def stop(self) -> None:
        self.issuer.server.shutdown()
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(60)
        self.log.close()
        assert code == 0, (self.root / "server.log").read_text()


@pytest.fixture(scope="module")
def team(tmp_path_factory) -> Iterator[Team]:
    team = Team(tmp_path_factory.mktemp("team"))
    team.start()
    yield team
    team.stop()


@asynccontextmanager
async def session(team: Team, token: str | None):
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
        async with streamable_http_client(team.url, http_client=http) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                yield s


def body(result) -> dict[str, Any]:
    """The whole result (structured content), or an error's typed body (its text)."""
    return result.structured_content if result.structured_content is not None else json.loads(result.content[0].text)


def _lookup(outputs: list[dict[str, Any]], reference: str) -> Any:
    head, *path = reference.split(".")
    value: Any = outputs[int(head)]
    for key in path:
        value = value[int(key)] if isinstance(value, list) else value[key]
    return value


def substitute(value: Any, outputs: list[dict[str, Any]]) -> Any:
    """driver.mjs's "$N.path" references, for the Python client."""
    if isinstance(value, str) and value.startswith("$") and value[1:2].isdigit():
        return _lookup(outputs, value[1:])
    if isinstance(value, list):
        return [substitute(v, outputs) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, outputs) for k, v in value.items()}
    return value


NAMESPACE_KEYS = ("namespace", "namespace_override", "old_namespace", "new_namespace")


def prefixed(value: Any, prefix: str) -> Any:
    """The scenario with every namespace it names moved under `prefix`."""
    if isinstance(value, list):
        return [prefixed(v, prefix) for v in value]
    if isinstance(value, dict):
        return {
            k: prefix + v if k in NAMESPACE_KEYS and isinstance(v, str) else prefixed(v, prefix)
            for k, v in value.items()
        }
    return value


@pytest.fixture(scope="module")
async def victim(team: Team) -> dict[str, Any]:
    """Victor's memories (ids, a relation, an export file), stored before anyone else writes."""
    async with session(team, team.tokens["victor"]) as s:
        stored = body(
            await s.call_tool(
                "remember_batch",
                {
                    "memories": [
                        {"content": f"The {MARKER} vault code is {n}{n}{n}", "namespace": "victim", "tags": ["secret"]}
                        for n in range(6)  # enough for regions (2 x min_cluster_size)
                    ]
                },
            )
        )
        ids = stored["ids"]
        assert not (
            await s.call_tool("relate", {"source_id": ids[0], "target_id": ids[1], "relation": "supports"})
        ).is_error
        procedure = body(
            await s.call_tool(
                "build_skill",
                {
                    "trajectory": [{"action": f"Open the {MARKER} vault with code 000"}],
                    "outcome_score": 1.0,
                    "domain": "vaults",
                    "trigger_pattern": f"the {MARKER} vault must be opened",
                    "namespace": "victim",
                },
            )
        )
        exported = body(await s.call_tool("export_memories", {"output_path": "victim.json"}))
        before = body(await s.call_tool("get_memories", {"memory_ids": ids}))
    return {
        "ids": ids,
        "export": exported["output_path"],
        "before": before,
        "procedure": procedure["procedure_id"],
        "skill_uri": procedure["skill_uri"],
    }


# ---- (a) the Python SDK's streamable-HTTP client: every tool --------------------------------


async def test_every_tool_works_over_http_with_a_token(team, victim):
    seeds = seed_memories()
    steps = prefixed(every_tool_steps(seeds, str(uuid.uuid4()), "all.json"), "alice-")
    outputs: list[dict[str, Any]] = []
    async with session(team, team.tokens["alice"]) as s:
        listed = {t.name for t in (await s.list_tools()).tools}
        for step in steps:
            result = await s.call_tool(step["call"], substitute(step["arguments"], outputs))
            assert not result.is_error, (step, result.content[0].text)
            outputs.append(result.structured_content)
    assert listed == {s["call"] for s in steps}
    # What alice saw of the store is alice's only.
    assert {n["name"] for n in outputs[20]["namespaces"]} == {"alice-interop", "alice-extracted"}
    assert outputs[18]["total_memories"] == len(seeds) + 1 + outputs[16]["memories_created"]
    assert outputs[25]["memories_imported"] == len(seeds) + 1  # alice's export held alice's memories only
    assert Path(outputs[21]["output_path"]).parent.parent == team.exchange  # a folder of alice's own
    assert MARKER not in json.dumps(outputs)
    assert not set(victim["ids"]) & set(json.dumps(outputs).split('"'))


# ---- (b) a hostile principal tries every tool on another's namespace and memories ----------


def hostile_calls(ids: list[str], victim_export: str, procedure: str) -> dict[str, list[dict[str, Any]]]:
    """Per tool, the calls mallory makes against victor's namespace `victim`, memories `ids` and
    procedure."""
    a, b = ids[0], ids[1]
    return {
        "remember": [{"content": "planted", "namespace": "victim"}, {"content": "mine", "namespace": "mallory"}],
        "remember_batch": [
            {"memories": [{"content": "planted", "namespace": "mallory"}, {"content": "x", "namespace": "victim"}]}
        ],
        "get_memories": [{"memory_ids": ids}],
        "update_memory": [{"memory_id": a, "content": "overwritten"}, {"memory_id": a, "pinned": True}],
        "memory_history": [{"memory_id": a}],
        "forget": [{"memory_id": a}, {"namespace": "victim"}],
        "forget_batch": [{"memory_ids": ids}],
        "recall": [
            {"query": f"{MARKER} vault code"},
            {"query": "vault", "namespace": "victim"},
            {"query": "vault", "filters": {"namespace": "victim"}},
            {"query": "vault", "filters": {"namespace": {"in": ["mallory", "victim"]}}},
            {"query": "vault", "filters": {"namespace": {"contains": "vic"}}},
            {"query": "vault", "expand": 3},
        ],
        "hybrid_recall": [{"query": f"{MARKER} vault"}, {"query": "vault", "namespace": "victim"}],
        "nearby": [{"memory_id": a}],
        "journey": [{"start_id": a, "end_id": b}],
        "wander": [{"start_id": a}, {"seed": f"{MARKER} vault"}, {"steps": 3}],
        "regions": [{}, {"namespace": "victim"}],
        "visualize": [{"memory_ids": ids}, {"namespace": "victim"}, {"format": "json"}],
        "decay": [{"dry_run": False}, {"namespace": "victim", "dry_run": False}],
        "reinforce": [{"memory_ids": ids}],
        "extract": [{"text": f"We decided the {MARKER} vault opens on Monday.", "namespace": "victim"}],
        "consolidate": [{"dry_run": False}, {"namespace": "victim", "dry_run": False}],
        "stats": [{}, {"namespace": "victim"}],
        "namespaces": [{}],
        "delete_namespace": [{"namespace": "victim", "confirm": True, "dry_run": False}],
        "rename_namespace": [
            {"old_namespace": "victim", "new_namespace": "mallory-loot"},
            {"old_namespace": "mallory", "new_namespace": "victim"},
        ],
        "export_memories": [
            {"output_path": "loot.json"},
            {"output_path": "loot2.json", "namespace": "victim"},
            {"output_path": victim_export},
        ],
        "import_memories": [
            {"source_path": victim_export, "namespace_override": "mallory", "dry_run": False},
            {"source_path": "../" + Path(victim_export).parent.name + "/victim.json", "dry_run": False},
            {"source_path": "forged.json", "dry_run": False},
            {"source_path": "forged.json", "namespace_override": "victim", "dry_run": False},
        ],
        "health": [{"verbose": True}],
        "discover_connections": [{"memory_id": a}],
        "corpus_bridges": [{}, {"namespaces": ["mallory", "victim"]}],
        "relate": [{"source_id": a, "target_id": b, "relation": "contradicts"}],
        "unrelate": [{"source_id": a, "target_id": b}],
        "setup_hooks": [{"client": "cursor"}],
        "build_skill": [{"trajectory": [{"action": "x"}], "outcome_score": 1.0, "domain": "d", "namespace": "victim"}],
        "how_to": [{"task": f"the {MARKER} vault must be opened"}, {"task": "vault", "namespace": "victim"}],
        "execute_skill": [{"procedure_id": procedure, "success": False, "error": "sabotage"}],
        "deprecate_skill": [{"procedure_id": procedure, "reason": "sabotage"}],
    }


ALLOWED_REFUSALS = {
    "PermissionDeniedError",
    "MemoryNotFoundError",
    "NamespaceNotFoundError",
    "PathSecurityError",
    "MemoryImportError",
    "InsufficientMemoriesError",
    "JourneyError",
    "WanderError",
    "ValidationError",
}


async def skills_request(s, method: str, params: dict[str, Any]) -> dict[str, Any]:
    import mcp_types
    from pydantic import TypeAdapter

    message = mcp_types.Request[dict[str, Any], str](method=method, params=params)
    return await s.send_request(message, TypeAdapter(dict[str, Any]))


async def test_a_hostile_principal_never_sees_or_changes_anothers_memories(team, victim):
    ids = victim["ids"]
    victor_skill = victim["skill_uri"]
    folder = Path(victim["export"]).parent
    # Results cached for victor (same arguments, same table version) are never served to mallory.
    cached = [("regions", {}), ("visualize", {}), ("visualize", {"memory_ids": ids})]
    async with session(team, team.tokens["victor"]) as s:
        for name, arguments in cached:
            assert not (await s.call_tool(name, arguments)).is_error, name
    async with session(team, team.tokens["mallory"]) as s:
        for name, arguments in cached:
            result = await s.call_tool(name, arguments)
            text = result.content[0].text
            # mallory's own (empty) answer or an error, never victor's: no marker, no id of his
            seen = json.dumps(result.structured_content or {}) + text
            assert MARKER not in seen and not any(i[:8] in seen for i in ids), (name, text)
            assert result.is_error or name == "regions", (name, text)
        listed = {t.name for t in (await s.list_tools()).tools}
        calls = hostile_calls(ids, victim["export"], victim["procedure"])
        assert listed == set(calls), f"tools without a hostile case: {sorted(listed - set(calls))}"
        # A forged import file of mallory's own, naming victor's ids (it must not overwrite them).
        mine = body(await s.call_tool("remember", {"content": "mallory's note", "namespace": "mallory"}))
        body(await s.call_tool("export_memories", {"output_path": "forged.json", "namespace": "mallory"}))
        forged_path = folder.parent / next(p.name for p in folder.parent.iterdir() if p.name.startswith("mallory"))
        forged = json.loads((forged_path / "forged.json").read_text())
        template = forged["memories"][0]
        forged["memories"] = [{**template, "id": i, "content": "forged"} for i in ids]
        (forged_path / "forged.json").write_text(json.dumps(forged))
        for name, variants in calls.items():
            for arguments in variants:
                result = await s.call_tool(name, arguments)
                text = result.content[0].text
                assert SECRET not in text, (name, arguments, text)
                if result.is_error:
                    assert body(result)["error"] in ALLOWED_REFUSALS, (name, arguments, text)
                else:
                    leaked = [i for i in ids if i in text and i not in json.dumps(arguments)]
                    assert not leaked, (name, arguments, text)
                    assert '"victim"' not in text, (name, arguments, text)
        refused = body(await s.call_tool("remember", {"content": "planted", "namespace": "victim"}))
        assert refused["error"] == "PermissionDeniedError" and "mallory, team-*" in refused["message"]
        read_only = body(await s.call_tool("remember", {"content": "x", "namespace": "handbook"}))
        assert read_only["error"] == "PermissionDeniedError" and "read-only" in read_only["message"]
        gone = body(await s.call_tool("get_memories", {"memory_ids": ids}))
        assert gone["memories"] == [] and sorted(gone["not_found"]) == sorted(ids)
        # Resources and prompts: the same view; naming victor's namespace is refused, his ids are not found.
        for uri in ("memory://stats", "memory://namespaces"):
            text = (await s.read_resource(uri)).contents[0].text
            assert MARKER not in text and '"victim"' not in text, uri
        refusals = {
            "memory://victim/recent": "PermissionDeniedError: namespace 'victim' is not available to mallory",
            f"memory://memory/{ids[0]}": "MemoryNotFoundError",
        }
        for uri, expected in refusals.items():
            with pytest.raises(MCPError, match=expected):
                await s.read_resource(uri)
        for prompt, arguments in (("recall_for_task", {"task": "vault"}), ("save_session_summary", {})):
            rendered = json.dumps((await s.get_prompt(prompt, arguments)).model_dump(mode="json"))
            assert MARKER not in rendered and "victim" not in rendered
        assert 'namespace=\\"mallory\\"' in rendered  # the summary goes to a namespace mallory may write
        for prompt, arguments in (
            ("recall_for_task", {"task": "vault", "namespace": "victim"}),
            ("save_session_summary", {"namespace": "victim"}),
        ):
            with pytest.raises(MCPError, match="PermissionDeniedError|not available to mallory"):
                await s.get_prompt(prompt, arguments)
        # Completions offer only names mallory may read: not victor's namespace, nor his tag.
        from mcp.types import PromptReference, ResourceTemplateReference

        recent = ResourceTemplateReference(uri="memory://{namespace}/recent")
        offered = (await s.complete(recent, {"name": "namespace", "value": ""})).completion.values
        assert "mallory" in offered and "victim" not in offered, offered
        review = PromptReference(name="review_tag")
        assert (await s.complete(review, {"name": "tag", "value": "sec"})).completion.values == []
        in_victim = await s.complete(review, {"name": "tag", "value": ""}, {"namespace": "victim"})
        assert in_victim.completion.values == []
        assert mine["namespace"] == "mallory"
        # Skills: victor's procedure is not served to mallory, by listing or by its URI.
        skills = await skills_request(s, "skills/list", {})
        assert MARKER not in json.dumps(skills)
        with pytest.raises(MCPError):
            await skills_request(s, "skills/get", {"uri": victor_skill})
        with pytest.raises(MCPError):
            await s.read_resource(victor_skill)
    # Victor's memories are all there, unchanged, with their relation; his completions see his tag.
    async with session(team, team.tokens["victor"]) as s:
        from mcp.types import PromptReference

        tags = (await s.complete(PromptReference(name="review_tag"), {"name": "tag", "value": "sec"})).completion
        assert tags.values == ["secret"]
    async with session(team, team.tokens["victor"]) as s:
        after = body(await s.call_tool("get_memories", {"memory_ids": ids}))
        assert after == victim["before"]
        (mine_still,) = body(await s.call_tool("how_to", {"task": f"the {MARKER} vault must be opened"}))["procedures"]
        assert (mine_still["executions"], mine_still["status"]) == (0, "live")  # untouched by mallory
        assert [e["uri"] for e in (await skills_request(s, "skills/list", {}))["skills"]] == [victor_skill]
        listed_namespaces = body(await s.call_tool("namespaces", {}))["namespaces"]
        assert [n["name"] for n in listed_namespaces] == ["victim"]
        assert listed_namespaces[0]["memory_count"] == len(ids) + 1  # and his procedure


def test_every_argument_naming_a_namespace_is_checked(tmp_path):
    """The arguments auth/scope.py checks before a call are every argument of every tool that
    names a namespace (a new one must be added there)."""
    from spatial_memory.auth import scope
    from spatial_memory.config import Settings
    from spatial_memory.tools import build_tools

    def names(schema: Any) -> set[str]:
        if isinstance(schema, list):
            return set().union(*map(names, schema)) if schema else set()
        if not isinstance(schema, dict):
            return set()
        found = {k for k, v in schema.get("properties", {}).items() if "namespace" in k and v.get("type") != "boolean"}
        return found.union(*map(names, schema.values()))

    named = set().union(*(names(t.parameters) for t in build_tools(Settings(path=tmp_path))))
    assert named and named <= scope._NAMESPACE_ARGUMENTS | scope._NAMESPACE_LISTS


def test_a_new_store_method_is_the_parts_method_plus_one_line(tmp_path, monkeypatch):
    """The store's surface is said once (storage/protocol.py): one `Member` line makes a part's
    method a method of MemoryStore and, confined as the line says, of ConfinedStore; a line
    without a confinement is refused on the confined store (it fails closed). Every member written
    out is written out, and ConfinedStore has no public method the surface does not declare."""
    import numpy as np

    from spatial_memory.auth.scope import NamespaceScope
    from spatial_memory.records import MemoryRecord, new_id
    from spatial_memory.storage import confinement
    from spatial_memory.storage.confined import ConfinedStore
    from spatial_memory.storage.protocol import Store, members
    from spatial_memory.storage.store import MemoryStore
    from spatial_memory.storage.surface import Member, WrittenOut
    from spatial_memory.storage.table.reads import Reads

    declared = members()
    written_out = {n for n, m in declared.items() if isinstance(m, Member) and isinstance(m.confined, WrittenOut)}
    assert written_out and written_out <= set(vars(ConfinedStore))
    own = {n for n, v in vars(ConfinedStore).items() if callable(v) and not n.startswith("_")}
    helpers = {"wraps", "visible", "readable", "readable_ids", "between_mine", "check_writes", "check_namespace_write"}
    assert own - helpers - set(declared) == {"health_facts"}  # each store says its own health facts
    assert all(
        isinstance(m.confined, object) and m.confined is not None for m in declared.values() if isinstance(m, Member)
    )

    # The one line: a part's method (here Reads.scan under another name), confined as a read of records.
    line = Member("reads", Reads.scan, confinement.RECORDS)
    monkeypatch.setattr(Store, "scan_again", line, raising=False)
    line.__set_name__(Store, "scan_again")
    store = MemoryStore(tmp_path / "db", "m", 4)
    confined = ConfinedStore(store, NamespaceScope.of("mallory", ["mine"]))
    vector = np.ones(4, np.float32) / 2
    store.add([MemoryRecord(id=new_id(), content=ns, vector=vector, namespace=ns) for ns in ("mine", "victim")])
    assert sorted(r.namespace for r in store.scan_again()) == ["mine", "victim"]
    assert [r.namespace for r in confined.scan_again()] == ["mine"]

    # The same line without a confinement: MemoryStore has it, a principal does not.
    unconfined = Member("reads", Reads.scan, None)
    monkeypatch.setattr(Store, "scan_unconfined", unconfined, raising=False)
    unconfined.__set_name__(Store, "scan_unconfined")
    assert len(store.scan_unconfined()) == 2
    with pytest.raises(AttributeError):
        confined.scan_unconfined()


def test_every_store_method_a_service_may_call_is_confined(tmp_path):
    """Each member of the Store protocol (what services call) is confined one way or another in
    storage/confined.py, both stores satisfy the protocol, and anything else a MemoryStore has
    (upkeep's methods, its parts) does not exist for a principal; a confined read and write keep
    to the scope."""
    import numpy as np

    from spatial_memory.auth.scope import NamespaceScope
    from spatial_memory.errors import SpatialMemoryError
    from spatial_memory.records import MemoryRecord, new_id
    from spatial_memory.storage.confined import ConfinedStore, confinement_of
    from spatial_memory.storage.filters import build_filter
    from spatial_memory.storage.protocol import Store
    from spatial_memory.storage.store import MemoryStore

    members = [name for name in vars(Store) if not name.startswith("_")]
    assert len(members) > 40
    assert [name for name in members if confinement_of(name) is None] == []
    store = MemoryStore(tmp_path / "db", "m", 4)
    confined = ConfinedStore(store, NamespaceScope.of("mallory", ["mine"]))
    assert isinstance(store, Store) and isinstance(confined, Store)
    for unconfined in ("compact", "refresh_exact", "record_access", "purge_expired", "table", "writes", "ledger"):
        assert confinement_of(unconfined) is None
        with pytest.raises(AttributeError):
            getattr(confined, unconfined)

    vector = np.ones(4, np.float32) / 2
    theirs = MemoryRecord(id=new_id(), content="theirs", vector=vector, namespace="victim")
    store.add([theirs, MemoryRecord(id=new_id(), content="mine", vector=vector, namespace="mine")])
    assert [h.record.namespace for h in confined.search(vector, 5)] == ["mine"]
    assert confined.count() == 1 and confined.count(build_filter(namespace="victim")) == 0
    assert confined.get(theirs.id) is None and confined.scan_arrow(["id"]).num_rows == 1
    assert confined.scan(flt=build_filter(namespace="victim")) == [] and len(confined.scan()) == 1
    with pytest.raises(SpatialMemoryError):
        confined.upsert([MemoryRecord(id=theirs.id, content="overwritten", vector=vector, namespace="mine")])
    assert confined.delete_where(build_filter(namespace="victim")) == []
    assert store.get(theirs.id).content == "theirs"

    # An import's writes: a relation may start at a memory the import itself writes, but may not
    # reach a memory outside the scope, and nothing is written to a foreign namespace.
    from datetime import datetime, timezone

    from spatial_memory.storage.side_tables.relations import Relation

    mine = next(r for r in store.scan() if r.namespace == "mine")
    now = datetime.now(timezone.utc)
    imported = MemoryRecord(id=new_id(), content="imported", vector=vector, namespace="mine")
    confined.add_imported([imported], [], [Relation(imported.id, mine.id, "supports", 1.0, now)])
    assert [r.target_id for r in confined.relations_of([imported.id])] == [mine.id]
    other = MemoryRecord(id=new_id(), content="imported", vector=vector, namespace="mine")
    with pytest.raises(SpatialMemoryError):
        confined.add_imported([other], [], [Relation(other.id, theirs.id, "supports", 1.0, now)])
    with pytest.raises(SpatialMemoryError):
        confined.add_imported([MemoryRecord(id=new_id(), content="x", vector=vector, namespace="victim")], [], [])
    assert store.get(other.id) is None and store.count() == 3


# ---- (c) tokens that must not work ------------------------------------------------------------


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


def post(team: Team, token: str | None, message: dict[str, Any] = INITIALIZE) -> httpx.Response:
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    return httpx.post(team.url, json=message, headers=headers, timeout=30)


def test_bad_tokens_get_401_with_the_resource_metadata(team):
    issuer, audience = team.issuer, team.resource_url
    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = int(time.time())
    refused = {
        "missing": None,
        "malformed": "not-a-token",
        "unknown tokens-file token": tokens.TOKEN_PREFIX + "x" * 43,
        "expired": issuer.token(audience, exp=now - 120, iat=now - 900),
        "not yet valid": issuer.token(audience, nbf=now + 600),
        "wrong audience": issuer.token("https://elsewhere.example/mcp"),
        "wrong issuer": jwt.encode(
            {"iss": "https://evil.example", "aud": audience, "sub": "carol", "exp": now + 600},
            issuer.rsa,
            "RS256",
            headers={"kid": "rsa-1"},
        ),
        "wrong key": issuer.token(audience, key=other_key),
        "unknown key id": issuer.token(audience, key=other_key, kid="rsa-2"),
        "no subject": issuer.token(audience, sub=None),
        "unsigned": jwt.encode({"iss": issuer.url, "aud": audience, "sub": "carol", "exp": now + 600}, None, "none"),
    }
    for label, token in refused.items():
        response = post(team, token)
        assert response.status_code == 401, (label, response.status_code, response.text)
        challenge = response.headers.get("www-authenticate", "")
        assert challenge.startswith("Bearer") and "resource_metadata=" in challenge, (label, challenge)
    metadata = httpx.get(f"http://127.0.0.1:{team.port}/.well-known/oauth-protected-resource/mcp", timeout=30).json()
    assert metadata["resource"] == audience and metadata["authorization_servers"] == [issuer.url]
    for token in (issuer.token(audience), issuer.token(audience, kid="ec-1")):
        assert post(team, token).status_code == 200
    # SPATIAL_MEMORY_HTTP_MAX_REQUEST_MB (1 here) bounds a request's body.
    huge = {**INITIALIZE, "params": {**INITIALIZE["params"], "padding": "x" * (1 << 20)}}
    assert post(team, team.tokens["alice"], huge).status_code == 413


async def test_an_oauth_principal_gets_the_namespaces_of_its_claims(team, victim):
    token = team.issuer.token(team.resource_url, spatial_memory_namespaces="carol team-blue")
    async with session(team, token) as s:
        stored = body(await s.call_tool("remember", {"content": "carol's plan", "namespace": "team-blue"}))
        assert stored["namespace"] == "team-blue"
        refused = body(await s.call_tool("remember", {"content": "x", "namespace": "victim"}))
        assert refused["error"] == "PermissionDeniedError" and "not available to carol" in refused["message"]
        assert MARKER not in json.dumps(body(await s.call_tool("recall", {"query": f"{MARKER} vault"})))
    # An OAuth subject named like a tokens-file principal is someone else: not victor's export folder.
    token = team.issuer.token(team.resource_url, sub="victor", spatial_memory_namespaces=["carol"])
    async with session(team, token) as s:
        imported = await s.call_tool("import_memories", {"source_path": "victim.json", "namespace_override": "carol"})
        assert imported.is_error and MARKER not in imported.content[0].text
    # mallory's `team-*` covers carol's team-blue: prefixes share namespaces between principals.
    async with session(team, team.tokens["mallory"]) as s:
        assert "carol's plan" in json.dumps(body(await s.call_tool("recall", {"query": "carol plan"})))


# ---- (d) no listening beyond localhost without authorization ---------------------------------


def test_a_non_local_bind_without_authorization_is_refused(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "spatial_memory", "--transport", "http", "--host", "0.0.0.0"],
        env=server_env(tmp_path / "store"),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "refusing to listen on 0.0.0.0 without authorization" in lines[0]


def test_tokens_are_shown_once_and_stored_hashed(tmp_path, capsys):
    from spatial_memory.cli import main

    path = tmp_path / "tokens.json"
    main(
        [
            "tokens",
            "add",
            "--principal",
            "ann",
            "--namespace",
            "ann",
            "--read-namespace",
            "handbook",
            "--file",
            str(path),
        ]
    )
    token = capsys.readouterr().out.strip()
    assert token.startswith(tokens.TOKEN_PREFIX) and token not in path.read_text()
    assert path.stat().st_mode & 0o777 == 0o600
    assert [(e.principal, e.sha256, e.namespaces) for e in tokens.read_entries(path)] == [
        ("ann", tokens.token_hash(token), ("ann",))
    ]
    main(["tokens", "list", "--file", str(path)])
    assert capsys.readouterr().out.startswith("ann: ann; read-only: handbook")
    with pytest.raises(SystemExit) as removed:
        main(["tokens", "remove", "--principal", "ann", "--file", str(path)])
    assert removed.value.code == 0 and tokens.read_entries(path) == []


# ---- (e) the TypeScript SDK client over streamable HTTP -----------------------------------------


def test_every_tool_works_through_the_typescript_client_over_http(anyio_backend, team, victim, node, tmp_path):
    # anyio_backend: the async module fixture `victim` is set up by anyio only for tests that ask for it.
    seeds = seed_memories()
    steps = prefixed(every_tool_steps(seeds, str(uuid.uuid4()), "all.json"), "tessa-")
    server = {"url": team.url, "headers": {"Authorization": f"Bearer {team.tokens['tessa']}"}}
    foreign = [
        {"call": "remember", "arguments": {"content": "planted", "namespace": "victim"}},
        {"call": "get_memories", "arguments": {"memory_ids": victim["ids"][:1]}},
    ]
    with TsClient(node, server, tmp_path / "driver.log") as client:
        listed = {t["name"] for t in client.tools}
        assert client.connected["tools"]["pages"] == 1  # the SDK keeps output validators of the last page only
        answers = client.steps(steps + foreign)
    data = [succeeded(a) for a in answers[: len(steps)]]
    assert listed == {s["call"] for s in steps}
    typed_error(answers[len(steps)], "PermissionDeniedError", "not available to tessa", "tessa-*")
    assert succeeded(answers[-1])["not_found"] == victim["ids"][:1]
    assert {n["name"] for n in data[20]["namespaces"]} == {"tessa-interop", "tessa-extracted"}
    assert MARKER not in json.dumps(data)


# ---- the atlas at /ui ---------------------------------------------------------------------------


async def test_the_atlas_at_ui_shows_a_principal_only_its_own_memories(team, victim):
    base = f"http://127.0.0.1:{team.port}/ui"
    page = httpx.get(base, timeout=30)
    assert page.status_code == 200 and '<meta name="atlas-transport" content="team">' in page.text
    assert MARKER not in page.text  # the page itself holds no data

    def call(operation: str, token: str | None, arguments: dict[str, Any]) -> httpx.Response:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        return httpx.post(f"{base}/api/{operation}", json=arguments, headers=headers, timeout=120)

    assert call("map", None, {}).status_code == 401
    assert call("map", "not-a-token", {}).status_code == 401
    own = call("map", team.tokens["victor"], {})
    assert own.status_code == 200 and set(victim["ids"]) <= set(own.json()["ids"])
    assert own.json()["namespaces"] == ["victim"]
    other = call("map", team.tokens["mallory"], {}).json()
    assert not set(victim["ids"]) & set(other["ids"]) and "victim" not in other["namespaces"]
    assert MARKER not in json.dumps(other)
    for operation, arguments in (
        ("memory", {"id": victim["ids"][0]}),
        ("history", {"id": victim["ids"][0]}),
        ("forget", {"id": victim["ids"][0]}),
        ("update", {"id": victim["ids"][0], "content": "taken over"}),
    ):
        refused = call(operation, team.tokens["mallory"], arguments)
        assert MARKER not in refused.text and SECRET not in refused.text, operation
        if operation == "memory":
            assert refused.json()["memory"] is None
        elif operation == "forget":
            assert refused.json()["deleted"] == 0
        else:
            assert refused.status_code == 404 and refused.json()["error"] == "MemoryNotFoundError", operation
    found = call("recall", team.tokens["mallory"], {"query": f"{MARKER} vault code"}).json()
    assert all(MARKER not in m["content"] for m in found["memories"])
    still = call("memory", team.tokens["victor"], {"id": victim["ids"][0]}).json()
    assert MARKER in still["memory"]["content"]
