"""App: every service, wired once over one store's resources (what the server and capture share).

A server builds one in its lifespan (server/app.py); capture's ingester and context hook build one
over the store they write to. The services are imported when an App is built, not when this module
is: the server's `initialize` and `tools/list` must not wait for numpy-heavy modules.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .runtime.resources import Resources

if TYPE_CHECKING:
    from .auth.scope import NamespaceScope

# Principals whose services (and result caches) stay built; older ones are rebuilt on their next call.
MAX_SCOPED_APPS = 64


@dataclass
class App:
    """Everything a tool needs, wired once per server in the lifespan."""

    resources: Resources

    def for_scope(self, scope: NamespaceScope | None) -> App:
        """The App a principal's requests use (None: this one, full access). Its services reach the
        store only through the confined store of auth/principal.py, and their result caches are its
        own: nothing cached for one principal is served to another. Built once per scope."""
        if scope is None:
            return self
        with self._scoped_lock:
            app = self._scoped.pop(scope, None)
            if app is None:
                # Only a team server's principals need it (it reads the MCP SDK's auth context).
                from .auth.principal import ScopedResources

                app = App(ScopedResources(self.resources, scope))  # type: ignore[arg-type]
            self._scoped[scope] = app  # most recently used last
            while len(self._scoped) > MAX_SCOPED_APPS:
                self._scoped.pop(next(iter(self._scoped)))
            return app

    def __post_init__(self) -> None:
        self._scoped: dict[NamespaceScope, App] = {}
        self._scoped_lock = threading.Lock()
        # Here, not at the top: importing the services loads numpy-heavy modules, which the server's
        # opening answers must not wait for (server/app.py imports this module).
        from .services.atlas import AtlasService
        from .services.connections import ConnectionService
        from .services.consolidation import ConsolidationService
        from .services.extraction import ExtractionService
        from .services.health import HealthService
        from .services.lifecycle import LifecycleService
        from .services.memory import MemoryService
        from .services.namespaces import NamespaceService
        from .services.portability import PortabilityService
        from .services.procedures import ProcedureService
        from .services.revisions import RevisionService
        from .services.search import SearchService
        from .services.spatial import SpatialService
        from .services.visualization import VisualizationService
        from .services.vocabulary import VocabularyService

        self.memory = MemoryService(self.resources)
        self.revisions = RevisionService(self.resources)
        self.search = SearchService(self.resources)
        self.namespaces = NamespaceService(self.resources)
        self.portability = PortabilityService(self.resources)
        self.spatial = SpatialService(self.resources)
        self.visualization = VisualizationService(self.resources)
        self.lifecycle = LifecycleService(self.resources)
        self.extraction = ExtractionService(self.resources, self.memory)
        self.consolidation = ConsolidationService(self.resources)
        self.connections = ConnectionService(self.resources)
        self.health = HealthService(self.resources)
        self.vocabulary = VocabularyService(self.resources)
        self.atlas = AtlasService(self.resources)
        self.procedures = ProcedureService(self.resources)
