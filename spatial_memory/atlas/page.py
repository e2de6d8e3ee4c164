"""The atlas as one self-contained HTML document: static/index.html with its stylesheet and its
JavaScript modules written in place (no external script, style, font or image URL), for the MCP
App resource and for both web servers alike.

The modules are ES modules for reading and checking on their own; in the document they run as
one script: each module's `import { ... } from "./x.js"` lines are dropped (MODULES lists them in
dependency order, and their top-level names are distinct) and `export` is removed from its
declarations.
"""

from __future__ import annotations

import functools
import re
from importlib import resources

MODULES = ("util.js", "transport.js", "data.js", "mapview.js", "panel.js", "main.js")
MODES = ("app", "local", "team")
_IMPORT = re.compile(r"^import\s+\{[^}]*\}\s+from\s+\"\./[a-z]+\.js\";\n", re.MULTILINE)
_EXPORT = re.compile(r"^export\s+(?=(?:async\s+)?function|const|let|class)", re.MULTILINE)


def _static(name: str) -> str:
    return resources.files(__name__.rpartition(".")[0]).joinpath("static", name).read_text(encoding="utf-8")


def script() -> str:
    """The modules as one script body."""
    parts = []
    for name in MODULES:
        source = _EXPORT.sub("", _IMPORT.sub("", _static(name)))
        if "import " in source.split("\n", 1)[0] or re.search(r"^\s*(import|export)\s", source, re.MULTILINE):
            raise ValueError(f"atlas/static/{name}: an import or export page.py cannot inline")
        parts.append(f"// ---- {name}\n{source}")
    return "\n".join(parts)


@functools.lru_cache(maxsize=len(MODES))
def document(mode: str) -> str:
    """The page for a transport: "app" (inside an MCP host, tools through the host bridge),
    "local" (spatial-memory ui) or "team" (a team server's /ui)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}")
    html = _static("index.html")
    body = script().replace("</script", "<\\/script")
    html = html.replace("<!--STYLE-->", f"<style>\n{_static('atlas.css')}</style>")
    html = html.replace("<!--MODE-->", f'<meta name="atlas-transport" content="{mode}">')
    return html.replace("<!--SCRIPT-->", f'<script type="module">\n"use strict";\n{body}</script>')
