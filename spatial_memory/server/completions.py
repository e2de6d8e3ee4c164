"""Argument completion (completion/complete): namespace and tag names from the store.

A prompt's or the recent-memories template's `namespace` argument completes to the store's
namespaces, a `tag` argument to its tags (within the namespace already chosen, when the client
sends it as context). The names come from one service method in a worker thread; before the
store is open, that opens it (the preload has normally done so already): a first answer a
little late beats an empty one that looks like an empty store. On a team server a principal is
offered only the names in namespaces it may read.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
from mcp.types import Completion, PromptReference, ResourceTemplateReference

from ..auth.principal import current_scope
from ..errors import SpatialMemoryError
from ..tools.calls import in_worker
from .mcp_server import SpatialMemoryMCPServer
from .resources import RECENT_TEMPLATE

log = logging.getLogger(__name__)

# argument name -> the kind of name it completes to
COMPLETED_ARGUMENTS = {"namespace": "namespace", "tag": "tag"}
NOTHING = Completion(values=[], total=0, has_more=False)


def register_completions(server: SpatialMemoryMCPServer) -> None:
    @server.completion()
    async def complete(ref: Any, argument: Any, context: Any) -> Completion | None:
        kind = COMPLETED_ARGUMENTS.get(argument.name)
        completes = isinstance(ref, PromptReference) or (
            isinstance(ref, ResourceTemplateReference) and ref.uri == RECENT_TEMPLATE
        )
        if kind is None or not completes:
            return None
        if server.app is None:
            return NOTHING
        # A principal's App reads through its confined store: it completes only names it may read.
        app = server.app.for_scope(current_scope())
        chosen = (context.arguments or {}).get("namespace") if context is not None and kind == "tag" else None
        within = [chosen] if chosen else None
        prefix = argument.value

        def names(app: Any):
            return app.vocabulary.names(kind, prefix, namespaces=within)

        try:
            found = await anyio.to_thread.run_sync(in_worker(names), app, abandon_on_cancel=True)
        except SpatialMemoryError as exc:  # a store that cannot open: nothing to offer, the tools say why
            log.info("no completion for %s: %s", argument.name, exc.message)
            return NOTHING
        return Completion(values=found.values, total=found.total, has_more=found.has_more)
