"""A live procedure as an MCP skill (Skills extension, SEP-2640): its SKILL.md, URI and entry.

One file per skill, `skill://spatial-memory/<name>/SKILL.md`, where the name (the last path
segment, as the extension requires) is the procedure's name as a slug plus the start of its
memory id: stable while the procedure lives, unique across namespaces. The frontmatter is written
as JSON-quoted YAML strings so that every YAML 1.2 reader reads back exactly the entry's values.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from .model import Procedure

AUTHORITY = "spatial-memory"
PREFIX = f"skill://{AUTHORITY}/"
FILE = "SKILL.md"
MIME = "text/markdown"
MAX_NAME = 64
MAX_DESCRIPTION = 1024
ID_CHARS = 8
_NOT_SLUG = re.compile(r"[^a-z0-9]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def skill_name(procedure_name: str, memory_id: str) -> str:
    """Lowercase letters, digits and single hyphens, ending in the memory id's first characters."""
    suffix = memory_id.replace("-", "")[:ID_CHARS].lower()
    ascii_name = unicodedata.normalize("NFKD", procedure_name).encode("ascii", "ignore").decode()  # Ü -> U
    slug = _NOT_SLUG.sub("-", ascii_name.lower()).strip("-")[: MAX_NAME - ID_CHARS - 1].strip("-")
    return f"{slug}-{suffix}" if slug else f"procedure-{suffix}"


def skill_uri(name: str) -> str:
    return f"{PREFIX}{name}/{FILE}"


def name_of_uri(uri: str) -> str | None:
    """The skill name a SKILL.md URI of this server names, or None."""
    if not uri.startswith(PREFIX) or not uri.endswith(f"/{FILE}"):
        return None
    name = uri[len(PREFIX) : -len(FILE) - 1]
    return name if name and "/" not in name else None


def _one_line(text: str) -> str:
    return " ".join(_CONTROL.sub(" ", text).split())


def description(procedure: Procedure) -> str:
    """When to use it, and how reliable it has been: what a host shows before loading it."""
    when = _one_line(procedure.trigger_pattern or procedure.name)
    record = f"{procedure.success_rate:.0%} success over {procedure.executions} run(s)"
    text = f"Use when: {when} ({_one_line(procedure.domain)}; {record})."
    return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 1] + "…"


@dataclass(frozen=True)
class SkillFile:
    """One served skill: its URI, frontmatter and SKILL.md bytes."""

    uri: str
    name: str
    description: str
    text: str

    @property
    def data(self) -> bytes:
        return self.text.encode("utf-8")

    def entry(self) -> dict[str, Any]:
        """The extension's Skill entry: frontmatter verbatim, and the one file with digest and size."""
        data = self.data
        return {
            "uri": self.uri,
            "frontmatter": {"name": self.name, "description": self.description},
            "resources": [{"uri": self.uri, "digest": f"sha256:{hashlib.sha256(data).hexdigest()}", "size": len(data)}],
        }


def skill_file(procedure: Procedure, memory_id: str, namespace: str) -> SkillFile:
    name = skill_name(procedure.name, memory_id)
    about = description(procedure)
    lines = [
        "---",
        f"name: {json.dumps(name)}",
        f"description: {json.dumps(about, ensure_ascii=False)}",
        "---",
        "",
        f"# {_one_line(procedure.name)}",
        "",
        f"A procedure from spatial-memory (namespace `{_one_line(namespace)}`, domain "
        f"`{_one_line(procedure.domain)}`, procedure_id `{memory_id}`).",
    ]
    if procedure.trigger_pattern:
        lines += ["", f"Use when: {_one_line(procedure.trigger_pattern)}"]
    lines += ["", "## Steps", ""]
    for number, step in enumerate(procedure.steps, 1):
        line = f"{number}. {_one_line(step.action)}"
        if step.tool:
            line += f" (tool `{_one_line(step.tool)}`"
            if step.parameters:
                line += f" with `{json.dumps(step.parameters, ensure_ascii=False, sort_keys=True)}`"
            line += ")"
        if step.result:
            line += f"; expect: {_one_line(step.result)}"
        lines.append(line)
    lines += [
        "",
        "## Track record",
        "",
        f"- Success rate: {procedure.success_rate:.0%} ({procedure.successes} of {procedure.executions} "
        "run(s) succeeded, after the trajectory it was built from)",
        f"- Executions: {procedure.executions}",
        f"- Last verified: {procedure.last_verified or 'not yet run since it was built'}",
        f"- Report each run with `execute_skill` (procedure_id `{memory_id}`).",
    ]
    if procedure.failures:
        lines += ["", "## Pitfalls", ""]
        for failure in reversed(procedure.failures):
            where = f"step {failure.failed_step}" if failure.failed_step is not None else "a run"
            what = _one_line(failure.error or "failed")
            context = f" ({_one_line(failure.context)})" if failure.context else ""
            lines.append(f"- {where} failed on {failure.at}: {what}{context}")
    return SkillFile(uri=skill_uri(name), name=name, description=about, text="\n".join(lines) + "\n")
