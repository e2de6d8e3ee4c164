"""docs/SETTINGS.md, generated from the settings' own field descriptions (config.py), so the page
cannot drift from the code: `python -m spatial_memory.settings_doc > docs/SETTINGS.md`
(tests/test_config.py checks the page is current)."""

from __future__ import annotations

import typing
from typing import Any

from pydantic.fields import FieldInfo

from .config import Settings

# Defaults computed at start-up, as a reader should read them.
COMPUTED_DEFAULTS = {
    "path": "per-user data directory (`~/.local/share/spatial-memory-mcp` on Linux, "
    "`~/Library/Application Support/spatial-memory-mcp` on macOS, `%LOCALAPPDATA%\\spatial-memory-mcp` on Windows)",
    "local_path": "per-user data directory",
    "export_dirs": "`<path>/exports`",
    "import_dirs": "`<path>/exports`",
}

HEADER = """# Settings

<!-- Generated from spatial_memory/config.py by `python -m spatial_memory.settings_doc > docs/SETTINGS.md`;
tests/test_config.py fails when this page is out of date. Edit the field descriptions, not this page. -->

Every setting is an environment variable (or a line of a `.env` file in the server's working
directory). A bad value stops the server at start with one line on stderr naming the variable.
List values are JSON (`["/srv/a", "/srv/b"]`).

| variable | default | accepts | meaning |
|---|---|---|---|
"""


def _variables(name: str, info: FieldInfo) -> str:
    aliases = getattr(info.validation_alias, "choices", None)
    names = [str(a) for a in aliases] if aliases else [f"SPATIAL_MEMORY_{name.upper()}"]
    return " / ".join(f"`{n}`" for n in names)


def _default(name: str, info: FieldInfo) -> str:
    if name in COMPUTED_DEFAULTS:
        return COMPUTED_DEFAULTS[name]
    value = info.get_default(call_default_factory=True)
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"`{value:,}`" if isinstance(value, int) else f"`{value:g}`"
    return f"`{value}`" if value != [] else "`[]`"


def _accepts(info: FieldInfo) -> str:
    """The values the field takes: its choices, or its type and bounds."""
    annotation = info.annotation
    if typing.get_origin(annotation) is typing.Literal:
        return ", ".join(f"`{choice}`" for choice in typing.get_args(annotation))
    bounds = []
    for rule in info.metadata:
        for attribute, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            bound = getattr(rule, attribute, None)
            if bound is not None:
                bounds.append(f"{sign} {bound:,}" if isinstance(bound, int) else f"{sign} {bound:g}")
    kind = _kind(annotation)
    return f"{kind} {', '.join(bounds)}".strip()


def _kind(annotation: Any) -> str:
    text = getattr(annotation, "__name__", None) or str(annotation)
    for plain, shown in (("bool", "true / false"), ("int", "integer"), ("float", "number"), ("str", "text")):
        if text == plain:
            return shown
    if "list" in str(annotation):
        return "JSON list"
    if "SecretStr" in str(annotation):
        return "secret text"
    if "Path" in str(annotation):
        return "path" if "str" not in str(annotation) else "path or store URI"
    return "text"


def _cell(text: str) -> str:
    """One table cell: on one line, its pipes escaped, and angle brackets outside code shown as text."""
    parts = " ".join(text.split()).replace("|", "\\|").split("`")
    return "`".join(p if i % 2 else p.replace("<", "&lt;").replace(">", "&gt;") for i, p in enumerate(parts))


def markdown() -> str:
    """The page: one row per setting, in the order config.py declares them."""
    rows = []
    for name, info in Settings.model_fields.items():
        if not info.description:
            raise ValueError(f"Settings.{name} has no description: docs/SETTINGS.md would not explain it")
        cells = (_variables(name, info), _default(name, info), _accepts(info), info.description)
        rows.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return HEADER + "\n".join(rows) + "\n"


if __name__ == "__main__":
    import sys  # only this command writes: the server never imports it as __main__

    sys.stdout.write(markdown())
