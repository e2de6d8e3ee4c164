"""Who is calling, and the runtime as that principal sees it.

The SDK's bearer middleware verifies the token of every HTTP request and keeps the resulting
AccessToken in a contextvar (`get_access_token`); the SDK hands each message's handler the
context of the request that carried it. `current_scope()` reads it on the event loop, before any
work goes to a worker thread: the scope is then passed explicitly (the principal's App), never
read from a contextvar inside a worker.

No token (stdio, unauthenticated localhost HTTP) means no scope: full access, as before.
"""

from __future__ import annotations

import hashlib
import re
import threading
from typing import TYPE_CHECKING, Any, NoReturn

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken

from .scope import NamespaceScope

if TYPE_CHECKING:  # storage imports numpy and pyarrow: seconds of start-up
    from ..storage.confined import ConfinedStore
    from ..storage.protocol import Store


class PrincipalToken(AccessToken):
    """A verified token of this server's verifiers: the principal (`subject`) and its namespaces."""

    namespaces: list[str] = []
    read_namespaces: list[str] = []

    def scope(self) -> NamespaceScope:
        realm = str((self.claims or {}).get("iss") or "")
        return NamespaceScope.of(self.subject or self.client_id, self.namespaces, self.read_namespaces, realm=realm)


def current_scope() -> NamespaceScope | None:
    """The calling principal's scope; None without authentication (full access). A token some other
    verifier produced carries no namespaces: it sees nothing (fail closed)."""
    token = get_access_token()
    if token is None:
        return None
    if isinstance(token, PrincipalToken):
        return token.scope()
    return NamespaceScope.of(token.subject or token.client_id, ())


def principal_folder(principal: str, realm: str = "") -> str:
    """A directory name for a principal's export/import files: readable, and distinct per principal
    (and realm: auth/scope.py)."""
    readable = re.sub(r"[^A-Za-z0-9._-]", "_", principal)[:60].strip(".") or "principal"
    digest = hashlib.sha256(f"{realm}\n{principal}".encode() if realm else principal.encode()).hexdigest()
    return f"{readable}-{digest[:8]}"


class ScopedResources:
    """The server's Resources as one principal sees them: the store confined to its namespaces
    (storage/confined.py) and export/import confined to a folder of its own under each configured
    directory (another principal's exported file must not be importable). Everything else - the
    model, upkeep, the worker count - is the server's, shared."""

    def __init__(self, resources: Any, scope: NamespaceScope) -> None:
        self._base = resources
        self.scope = scope
        folder = principal_folder(scope.principal, scope.realm)
        settings = resources.settings
        self.settings = settings.model_copy(
            update={
                "export_dirs": [d / folder for d in settings.allowed_export_dirs],
                "import_dirs": [d / folder for d in settings.allowed_import_dirs],
            }
        )
        self._store: ConfinedStore | None = None
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._base, name)

    def store(self) -> Store:
        store = self._base.store()
        with self._lock:
            if self._store is None or not self._store.wraps(store):
                # Imported here, on first use: storage imports numpy and pyarrow (start-up).
                from ..storage.confined import ConfinedStore

                self._store = ConfinedStore(store, self.scope)
            return self._store

    def memory_store(self) -> NoReturn:
        """The whole store is the server's own (upkeep): a principal's requests never get it."""
        raise AttributeError("the unconfined store is not available to a principal's request")
