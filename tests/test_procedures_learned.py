"""Procedures learned from what the hooks see: a fail-edit-pass sequence, a routine repeated across
sessions. Proposed captured (low confidence, not a skill); live once seen to work again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spatial_memory.capture import payloads
from spatial_memory.capture.hook import capture
from spatial_memory.capture.ingest import ingest_all
from spatial_memory.capture.spool import Spool


@pytest.fixture
def app(settings, fake_embedder):
    from spatial_memory.app import App
    from spatial_memory.runtime.resources import Resources

    app = App(Resources(settings, fake_embedder))
    yield app
    app.resources.close(5)


class Session:
    def __init__(self, spool: Spool, project: Path, session_id: str) -> None:
        self.spool, self.project, self.session_id = spool, project, session_id

    def fire(self, name: str, **fields) -> list[dict]:
        body = {"session_id": self.session_id, "cwd": str(self.project), "hook_event_name": name, **fields}
        return capture(payloads.parse(name, json.dumps(body)), self.spool, "project-app")

    def bash(self, command: str, stdout: str = "", stderr: str = "") -> list[dict]:
        response = {"stdout": stdout, "stderr": stderr, "interrupted": False}
        return self.fire("PostToolUse", tool_name="Bash", tool_input={"command": command}, tool_response=response)

    def edit(self, path: str, new: str) -> list[dict]:
        tool_input = {"file_path": str(self.project / path), "old_string": "pass", "new_string": new}
        return self.fire("PostToolUse", tool_name="Edit", tool_input=tool_input, tool_response={})


def fix_session(spool, project, session_id, name: str) -> None:
    s = Session(spool, project, session_id)
    s.bash("pytest tests/test_orders.py", stderr=f"E   ImportError: cannot import name '{name}' from 'shop.orders'")
    s.edit("shop/orders.py", f"from .models import {name}")
    s.bash("pytest tests/test_orders.py", stdout="12 passed in 0.4s")
    s.fire("SessionEnd", reason="other")


@pytest.fixture
def project(tmp_path) -> Path:
    project = tmp_path / "app"
    (project / ".git").mkdir(parents=True)
    return project


def procedures(app) -> list:
    return app.procedures.procedures()


def test_a_captured_fail_edit_pass_becomes_a_procedure_then_a_skill(app, project, settings):
    spool = Spool(settings.path)
    fix_session(spool, project, "s1", "Order")
    ingest_all(app, spool)
    ((record, procedure),) = procedures(app)
    assert procedure.status == "captured" and procedure.origin == "capture" and procedure.outcome_score == 0.3
    assert record.namespace == "project-app" and record.memory_type == "procedure"
    assert [s.tool for s in procedure.steps] == ["Bash", "Edit", "Bash"]
    assert "ImportError" in procedure.steps[0].action and "shop/orders.py" in procedure.steps[1].action
    found = app.procedures.how_to("pytest fails with ImportError cannot import name").procedures
    assert found and found[0].procedure_id == record.id and found[0].status == "captured"
    assert app.procedures.skills() == []  # captured: not yet a skill

    fix_session(spool, project, "s2", "Invoice")  # the same error (another name), fixed the same way
    ingest_all(app, spool)
    ((record, procedure),) = procedures(app)
    assert procedure.status == "live" and procedure.executions == 1 and procedure.successes == 1
    (skill,) = app.procedures.skills()
    assert skill.name.endswith(record.id.replace("-", "")[:8]) and "ImportError" in skill.text

    fix_session(spool, project, "s2", "Invoice")  # the same session replayed: counted once
    ingest_all(app, spool)
    assert procedures(app)[0][1].executions == 1


def test_a_fix_repeated_within_one_session_does_not_confirm_it_and_is_no_new_memory(app, project, settings):
    from spatial_memory.capture.store import store_captured

    spool = Spool(settings.path)
    s = Session(spool, project, "one")
    records = []
    for name in ("Order", "Invoice"):  # the same error fixed twice in one session
        records += s.bash(
            "pytest tests/test_orders.py", stderr=f"E   ImportError: cannot import name '{name}' from 'x'"
        )
        records += s.edit("shop/orders.py", f"from .models import {name}")
        records += s.bash("pytest tests/test_orders.py", stdout="12 passed in 0.4s")
    records += s.fire("SessionEnd", reason="other")
    before = app.resources.store().count()
    done = store_captured(app, records)
    assert done.memories == app.resources.store().count() - before and done.confirmed == 0
    ((_, procedure),) = procedures(app)
    assert procedure.status == "captured" and procedure.executions == 0
    assert procedure.name.startswith("fix ImportError")  # named from the error, not the output's first line
    other = Session(spool, project, "two")
    more = other.bash("pytest tests/test_orders.py", stderr="E   ImportError: cannot import name 'Cart' from 'x'")
    more += other.edit("shop/orders.py", "from .models import Cart")
    more += other.bash("pytest tests/test_orders.py", stdout="12 passed in 0.4s")
    before = app.resources.store().count()
    done = store_captured(app, more + other.fire("SessionEnd", reason="other"))
    assert done.confirmed == 1 and done.memories == app.resources.store().count() - before  # a new version
    assert procedures(app)[0][1].status == "live"


def test_a_rerun_without_edits_is_not_a_procedure(app, project, settings):
    spool = Spool(settings.path)
    s = Session(spool, project, "flaky")
    s.bash("pytest -x", stderr="FAILED tests/test_net.py::test_fetch - TimeoutError")
    s.bash("pytest -x", stdout="40 passed")
    ingest_all(app, spool)
    assert procedures(app) == []
    assert any(r.content.startswith("Fixed: ") for r in app.resources.store().scan())  # the fix memory stays


def test_a_routine_in_two_sessions_is_proposed_and_a_third_confirms_it(app, project, settings):
    spool = Spool(settings.path)
    for number in range(3):
        s = Session(spool, project, f"r{number}")
        s.bash("git status")  # reads are not part of a routine
        for command in ("make build", "make test", "make deploy"):
            s.bash(command, stdout="ok")
        s.fire("SessionEnd", reason="other")
        ingest_all(app, spool)
        found = procedures(app)
        if number == 0:
            assert found == []
        if number == 1:
            assert [p.status for _, p in found] == ["captured"]
    ((record, procedure),) = found
    assert [s.action for s in procedure.steps] == ["Run `make build`", "Run `make test`", "Run `make deploy`"]
    assert procedure.status == "live" and procedure.executions == 1


def test_precision_on_the_held_out_labelled_histories():
    """The figures benchmarks/procedure_capture.py reports (0.80 / 0.80 when written; benchmarks/procedure_capture.py prints them): a change to
    the rules that proposes more look-alikes, or finds fewer fixes, fails here."""
    from spatial_memory.evaluation.procedure_capture import score

    result = score()
    assert result["precision"] >= 0.8 and result["recall"] >= 0.8, result["totals"]


def test_procedures_and_skills_stay_in_a_principals_namespaces(app):
    """On a team server each principal's App reaches the store through its confined view: another
    team's procedures are not found, not served as skills, and cannot be run or deprecated."""
    from spatial_memory.auth.scope import NamespaceScope
    from spatial_memory.errors import MemoryNotFoundError, PermissionDeniedError
    from spatial_memory.procedures.model import Step

    alice = app.for_scope(NamespaceScope.of("alice", ["team-a"]))
    bob = app.for_scope(NamespaceScope.of("bob", ["team-b"]))
    steps = [Step("Run the migrations"), Step("Restart the workers")]
    built = alice.procedures.build_skill(steps, outcome_score=0.9, domain="devops", namespace="team-a")
    assert [p.procedure_id for p in alice.procedures.how_to("Run the migrations").procedures] == [built.procedure_id]
    assert len(alice.procedures.skills()) == 1
    assert bob.procedures.how_to("Run the migrations").procedures == []
    assert bob.procedures.skills() == [] and bob.procedures.skill(alice.procedures.skills()[0].name) is None
    with pytest.raises(MemoryNotFoundError):
        bob.procedures.execute_skill(built.procedure_id, success=False)
    with pytest.raises(MemoryNotFoundError):
        bob.procedures.deprecate_skill(built.procedure_id, reason="not ours")
    with pytest.raises(PermissionDeniedError):
        bob.procedures.build_skill(steps, outcome_score=0.9, domain="devops", namespace="team-a")
