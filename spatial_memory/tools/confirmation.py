"""A destructive call's confirmation, asked of the user where the client can ask.

`delete_namespace` with dry_run=false and no confirm=true: a client that declared form elicitation
gets the question - on 2026-07-28 as an `input_required` result the client answers and retries
with, before that as an `elicitation/create` request mid-call (the SDK's resolvers pick the one
the negotiated version uses). A client that cannot ask gets today's answer: a typed error saying
to pass confirm=true. Declining or cancelling the question deletes nothing.
"""

from __future__ import annotations

from typing import Any

from mcp.server.elicitation import AcceptedElicitation
from mcp.server.mcpserver.resolve import Elicit
from pydantic import BaseModel, Field

from .types import Context


class Confirmation(BaseModel):
    confirm: bool = Field(description="Yes, delete them: this cannot be undone.")


def can_ask(ctx: Context) -> bool:
    capabilities = ctx.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


def confirm_namespace_deletion(
    namespace: str, confirm: bool, dry_run: bool, ctx: Context
) -> Elicit[Confirmation] | Confirmation:
    """The resolver of delete_namespace's confirmation (`confirmed` below reads its outcome)."""
    if dry_run or confirm or not can_ask(ctx):
        return Confirmation(confirm=confirm)
    return Elicit(f"Delete every memory in namespace '{namespace}'? This cannot be undone.", Confirmation)


def confirmed(outcome: Any) -> bool:
    """True when the argument said so or the user accepted the question with confirm checked."""
    return isinstance(outcome, AcceptedElicitation) and bool(outcome.data.confirm)
