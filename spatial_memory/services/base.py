"""What every service holds: the server's shared runtime."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import validation as check
from ..config import Settings
from ..errors import NamespaceNotFoundError
from ..runtime.resources import Resources
from ..storage.filters import build_filter

if TYPE_CHECKING:  # named in annotations only
    from ..storage.protocol import Store


class Service:
    def __init__(self, resources: Resources) -> None:
        self._resources = resources

    @property
    def _settings(self) -> Settings:
        return self._resources.settings

    def require_namespace(self, store: Store, namespace: str) -> None:
        """A valid namespace name that has memories, or a typed error saying what to do."""
        check.namespace(namespace, self._settings)
        if store.count(build_filter(namespace=namespace)) == 0:
            raise NamespaceNotFoundError(
                f"Namespace not found: '{namespace}'. Use namespaces to list the existing ones."
            )
