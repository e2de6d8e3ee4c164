"""The one error hierarchy. Services raise these; the tool layer turns them into isError results."""

from __future__ import annotations


class SpatialMemoryError(Exception):
    """Base class. The class name is the `error` type clients see."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    @property
    def error_type(self) -> str:
        return type(self).__name__


def with_context(exc: SpatialMemoryError, context: str) -> SpatialMemoryError:
    """The same error type with `context` before its message: a busy store stays a StorageError
    (which a client may retry), whatever operation it interrupted."""
    return type(exc)(f"{context}: {exc.message}")


class ValidationError(SpatialMemoryError):
    """Invalid input parameters."""


class ConfigurationError(SpatialMemoryError):
    """Invalid configuration or a store/model mismatch."""


class MemoryNotFoundError(SpatialMemoryError):
    """A memory id does not exist."""


class NamespaceNotFoundError(SpatialMemoryError):
    """A namespace does not exist."""


class NamespaceOperationError(SpatialMemoryError):
    """A namespace rename or delete failed."""


class StorageError(SpatialMemoryError):
    """A database operation failed."""


class ReadOnlyStoreError(StorageError):
    """The store can be read but not written: read-only media or permissions, SPATIAL_MEMORY_READ_ONLY,
    or a damaged newest version (served at the last good one until `spatial-memory doctor --repair`).
    Nothing was changed; retrying does not help."""


class EmbeddingError(SpatialMemoryError):
    """Embedding generation failed."""


class VisualizationError(SpatialMemoryError):
    """Visualization failed."""


class InsufficientMemoriesError(SpatialMemoryError):
    """Not enough memories for the operation."""


class JourneyError(SpatialMemoryError):
    """A journey path cannot be computed."""


class WanderError(SpatialMemoryError):
    """A wander cannot continue."""


class DecayError(SpatialMemoryError):
    """Decay failed."""


class ExtractionError(SpatialMemoryError):
    """Extraction failed."""


class ExportError(SpatialMemoryError):
    """Export failed."""


class MemoryImportError(SpatialMemoryError):
    """Import failed."""


class PathSecurityError(SpatialMemoryError):
    """A file path violates the security constraints."""


class FileSizeLimitError(SpatialMemoryError):
    """A file exceeds the size limit."""


class ImportRecordLimitError(SpatialMemoryError):
    """An import file has too many records."""


class DimensionMismatchError(SpatialMemoryError):
    """Vector dimensions do not match the store."""


class RequestCancelledError(SpatialMemoryError):
    """The request was cancelled or its client went away before anything was written."""


class InternalError(SpatialMemoryError):
    """Anything unexpected; its message carries a reference to the traceback on stderr."""


class ResultTooLargeError(SpatialMemoryError):
    """A result is larger than the configured limit; ask for less."""


class PermissionDeniedError(SpatialMemoryError):
    """The authenticated principal may not use this namespace (team server); the message lists the
    namespaces it may use. Memories of other principals are never named: they are not found."""


class AmbiguousIdError(ValidationError):
    """A short id (the start of a memory id, as results show ids) that begins more than one memory's id."""
