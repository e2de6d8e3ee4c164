"""The secret patterns capture redacts before anything is spooled: one secret each pattern must
catch, and text that must come through unchanged."""

from __future__ import annotations

import pytest

from spatial_memory.text.secrets import kinds, redact, redact_value

# (text with a secret, the secret itself): the secret must be gone, the rest mostly kept.
SECRETS = [
    ("aws key AKIAIOSFODNN7EXAMPLE in the log", "AKIAIOSFODNN7EXAMPLE"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("token ghp_" + "a1B2" * 9, "ghp_" + "a1B2" * 9),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "github_pat_11ABCDEFG0123456789_abcdefghijklmnop"),
    ("gitlab glpat-abcdefghij0123456789 here", "glpat-abcdefghij0123456789"),
    ("slack xoxb-123456789012-abcdefghijkl", "xoxb-123456789012-abcdefghijkl"),
    ("hook https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX", "XXXXXXXXXXXXXXXXXXXXXXXX"),
    ("stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    ("OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz0123456789", "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"),
    ("key sk-abcdefghijklmnopqrstuvwxyz012345 used", "sk-abcdefghijklmnopqrstuvwxyz012345"),
    ("anthropic sk-ant-api03-abcdefghijklmnopqrstuvwxyz-0123456789", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz"),
    ("google AIzaSyA1234567890abcdefghijklmnopqrstuv", "AIzaSyA1234567890abcdefghijklmnopqrstuv"),
    ("npm npm_abcdefghijklmnopqrstuvwxyz0123456789", "npm_abcdefghijklmnopqrstuvwxyz0123456789"),
    (
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ),
    ("curl -H 'Authorization: Bearer abcdef0123456789abcdef'", "abcdef0123456789abcdef"),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA=="),
    ("password=hunter2secret", "hunter2secret"),
    ("DB_PASSWORD: 'correct-horse-battery'", "correct-horse-battery"),
    ('{"client_secret": "s3cr3t-value-123"}', "s3cr3t-value-123"),
    ("export GITHUB_TOKEN=abc123def456", "abc123def456"),
    ("mysql --password=Sup3rSecret -u root", "Sup3rSecret"),
    ("postgresql://billing:hunter2secret@db.internal:5432/billing", "hunter2secret"),
    ("mongodb+srv://admin:p%40ss@cluster0.example.net/test", "p%40ss"),
    ("redis://:s3cretredis@cache:6379/0", "s3cretredis"),
    ("Server=db;Database=app;User Id=sa;Password=Pa55w0rd!;", "Pa55w0rd!"),
    (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7Vx\nabcdef\n-----END RSA PRIVATE KEY-----",
        "MIIEowIBAAKCAQEA7Vx",
    ),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA (cut off)", "b3BlbnNzaC1rZXktdjEAAAAA"),
]

HARMLESS = [
    "We decided to use PostgreSQL 16 for the billing service.",
    "pytest -q tests/test_signup.py passed: 4 passed in 0.52s",
    "The token was rotated last week; the password policy needs 12 characters.",
    "https://docs.sqlalchemy.org/en/20/core/constraints.html",
    "git commit -am 'Enforce unique user emails'",
    "Edited app/views/signup.py: now `from flask import request`",
    "ssh user@example.com",
]


@pytest.mark.parametrize(("text", "secret"), SECRETS, ids=[s[0][:24] for s in SECRETS])
def test_every_pattern_removes_its_secret(text: str, secret: str) -> None:
    redacted = redact(text)
    assert secret not in redacted
    assert "[REDACTED:" in redacted


@pytest.mark.parametrize("text", HARMLESS)
def test_text_without_secrets_is_unchanged(text: str) -> None:
    assert redact(text) == text


def test_labels_stay_and_redacting_twice_changes_nothing() -> None:
    once = redact("password=hunter2secret and postgresql://u:pw12345@h/db")
    assert once.startswith("password=[REDACTED:") and "postgresql://u:[REDACTED:" in once
    assert redact(once) == once


def test_nested_values_are_redacted() -> None:
    value = {"command": "export TOKEN=abcdef123456", "list": ["password=hunter2secret", 3], "n": None}
    redacted = redact_value(value)
    assert "abcdef123456" not in str(redacted) and "hunter2secret" not in str(redacted)
    assert redacted["n"] is None and redacted["list"][1] == 3


def test_the_pattern_list_covers_the_kinds_asked_for() -> None:
    wanted = {"aws-access-key", "github-token", "gitlab-token", "slack-token", "stripe-key", "openai-key"}
    wanted |= {"anthropic-key", "jwt", "bearer", "assignment", "private-key", "url-password", "connection-password"}
    assert wanted <= set(kinds())


@pytest.mark.anyio
async def test_no_write_path_stores_a_secret(client, settings, caplog):
    """remember, remember_batch (content and metadata), update_memory, extract and import all keep
    the text around a secret and store `[REDACTED:<kind>]` in its place; the secret reaches no file
    of the store, no export and no log line."""
    import json
    from pathlib import Path

    from .conftest import data

    caplog.set_level("DEBUG")
    secrets = [secret for _, secret in SECRETS]
    marker = "zebra-crossing-marker-41"  # stored as is: shows the file scan below finds stored text
    stored = data(await client.call_tool("remember", {"content": f"{marker}: deploy with {SECRETS[2][0]}"}))
    assert stored["content"] == f"{marker}: deploy with token [REDACTED:github-token]"
    batch = [{"content": text, "metadata": {"raw": [text], "note": {"said": text}}} for text, _ in SECRETS[:-1]]
    assert not (await client.call_tool("remember_batch", {"memories": batch})).is_error
    updated = data(
        await client.call_tool("update_memory", {"memory_id": stored["id"], "content": f"rotated: {SECRETS[-1][0]}"})
    )
    assert SECRETS[-1][1] not in json.dumps(updated)
    said = f"We decided to deploy on Fridays. Our team prefers the key {secrets[9]} for staging."
    extracted = data(await client.call_tool("extract", {"text": said, "min_confidence": 0.0}))
    assert extracted["memories_created"] >= 1
    folder = settings.allowed_import_dirs[0]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "in.json").write_text(json.dumps([{"content": f"imported with {SECRETS[7][0]}"}]), encoding="utf-8")
    imported = await client.call_tool("import_memories", {"source_path": "in.json", "regenerate_embeddings": True})
    assert not imported.is_error, data(imported)
    found = data(await client.call_tool("recall", {"query": "imported with stripe", "limit": 50}))
    assert any("[REDACTED:stripe-key]" in m["content"] for m in found["memories"])
    exported = data(await client.call_tool("export_memories", {"output_path": "all.json", "format": "json"}))

    places = {"export": Path(exported["output_path"]).read_bytes(), "log": caplog.text.encode()}
    for path in settings.path.rglob("*"):
        if path.is_file() and path.name != "in.json":
            places[str(path.relative_to(settings.path))] = path.read_bytes()
    assert any(marker.encode() in content for where, content in places.items() if where != "export")
    for secret in secrets:
        for where, content in places.items():
            assert secret.encode() not in content, f"{secret!r} reached {where}"


@pytest.mark.parametrize("unit", ["x", "ab_", "token", "a.b-", "x=1 "])
def test_redaction_of_long_text_never_hangs(unit):
    """A long run of key-like characters once sent the assignment rule's free-starting lazy prefix
    quadratic (a 100,001-character content spent minutes in redact). A separate process with a
    bound far above a linear pass: a hang, not a speed figure, fails it."""
    import subprocess
    import sys

    code = "import sys; from spatial_memory.text.secrets import redact; redact(sys.stdin.read())"
    text = unit * (200_000 // len(unit))
    subprocess.run([sys.executable, "-c", code], input=text, text=True, timeout=30, check=True)
