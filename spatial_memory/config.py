"""Settings: environment variables prefixed SPATIAL_MEMORY_, or a .env file."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from .limits import MAX_BATCH, MAX_CONTENT, MAX_NAMESPACE_CHARS, MAX_TAG_CHARS, MAX_TAGS
from .tool_profiles import parse_selection

# Stores on object storage, served through LanceDB's own object-store support.
REMOTE_SCHEMES = ("s3", "gs", "az")

# The model this package ships (served by embeddings/ on onnxruntime), and the default.
BUNDLED_MODEL = "all-MiniLM-L6-v2"


def default_data_dir() -> Path:
    # MCP clients start servers in unpredictable directories, so never default to the cwd.
    import platformdirs

    return platformdirs.user_data_path("spatial-memory-mcp", appauthor=False)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="SPATIAL_MEMORY_",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        validate_by_name=True,
        validate_default=True,
        env_ignore_empty=True,
    )

    path: Path | str = Field(
        default_factory=default_data_dir,
        validation_alias=AliasChoices("SPATIAL_MEMORY_PATH", "SPATIAL_MEMORY_MEMORY_PATH"),
        description="Storage directory (LanceDB data, model cache, exports), or a store on object storage: "
        "s3://bucket/prefix, gs://bucket/prefix or az://container/prefix (credentials and endpoint from the "
        "standard environment, e.g. AWS_ENDPOINT_URL; what must stay local goes to SPATIAL_MEMORY_LOCAL_PATH).",
    )
    local_path: Path = Field(
        default_factory=default_data_dir,
        description="With a store on object storage: the local directory for the model cache, exports and "
        "imports, and the capture spool.",
    )
    embedding_model: str = Field(
        default=BUNDLED_MODEL,
        description="all-MiniLM-L6-v2 (bundled), any sentence-transformers name or local path, or openai:<model>.",
    )
    embedding_backend: Literal["auto", "onnx", "sentence-transformers"] = Field(
        default="auto", description="auto = onnxruntime for the bundled model, sentence-transformers otherwise."
    )
    embedding_precision: Literal["auto", "fp32", "int8-row", "int8"] = Field(
        default="auto",
        description="The bundled model's arithmetic: int8-row (integer layers scaled per token, so a text's vector "
        "never depends on its batch; a similarity near a threshold that changes the store is decided again on fp32 "
        "vectors, so its near-copy decisions are fp32's), fp32 (sentence-transformers' vectors) or int8 (scaled per "
        "model call: a text's vector shifts slightly with its batch; for stores it wrote). auto = the one the "
        "store's vectors were written with, int8-row for a new store; a store never mixes paths (`spatial-memory "
        "reembed` moves one).",
    )
    embedding_batch_size: int = Field(
        default=32,
        ge=1,
        le=256,
        description="Most texts per model call (the bundled model also caps the padded tokens).",
    )
    embedding_threads: int = Field(
        default=0, ge=0, le=64, description="Threads for onnxruntime (0 = one per physical core)."
    )
    openai_api_key: SecretStr | None = Field(default=None, description="Key for openai:<model> embeddings.")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        default="INFO", description="Logs go to stderr only."
    )
    preload: bool = Field(default=True, description="Load the store and model in the background right after start-up.")
    fast_handshake: bool = Field(
        default=True,
        description="Answer initialize / server/discover / tools/list from the user cache directory while the "
        "MCP SDK imports (answers the SDK gave before, for this build, SDK and the limit settings in the "
        "tool schemas).",
    )
    warm_up_projection: bool = Field(
        default=False,
        description=(
            "After preloading, import the map's layout and clustering code and run a tiny map in the "
            "background so the first visualize is a little quicker (more RSS while idle)."
        ),
    )

    tools: str = Field(
        default="all",
        description="The tools the server lists: a profile (all; core: remember, remember_batch, recall, "
        "update_memory, forget, namespaces; readonly: the tools that never write), tool names, or both, "
        "comma-separated. Fewer tools, less context in every conversation.",
    )

    max_content_length: int = Field(
        default=MAX_CONTENT.default,
        ge=1,
        description="Characters per memory (and per extract text). The tool schemas state this and the other "
        "limits, so a client reads the limit it meets.",
    )
    max_batch_size: int = Field(
        default=MAX_BATCH.default, ge=1, description="Memories per remember_batch, ids per forget_batch."
    )
    max_tags: int = Field(default=MAX_TAGS.default, ge=0, description="Tags per memory.")
    max_tag_length: int = Field(default=MAX_TAG_CHARS.default, ge=1, description="Characters per tag.")
    max_metadata_bytes: int = Field(default=65_536, ge=2, description="A memory's metadata, as JSON bytes.")
    max_namespace_length: int = Field(
        default=MAX_NAMESPACE_CHARS.default, ge=1, description="Characters per namespace name."
    )
    max_result_bytes: int = Field(
        default=16_777_216,
        ge=1024,
        description="Largest tool result (JSON bytes); a bigger one is a ResultTooLargeError.",
    )

    compact_fragment_threshold: int = Field(
        default=24,
        ge=2,
        description="Compact the table once it has more fragments than this: one per write since the last "
        "compaction, or the fragments found when the store opens. During a burst of writes nobody searches by "
        "keyword, the compaction waits for the pause after it (storage/table/maintenance.py: BURST_COMPACT_FACTOR).",
    )
    version_retention_seconds: int = Field(
        default=60, ge=0, description="Old table versions older than this are removed during compaction."
    )
    vector_index_threshold: int = Field(
        default=20_000,
        ge=1_000,
        description="Build the approximate (IVF_HNSW_SQ) vector index once the table has this many rows.",
    )
    index_ef: int = Field(default=400, ge=10, le=2_000, description="HNSW search breadth for indexed queries.")
    index_refine_factor: int = Field(
        default=5,
        ge=1,
        le=50,
        description="Indexed queries re-rank this many times `limit` candidates on full vectors.",
    )
    index_cache_mb: int = Field(
        default=0,
        ge=0,
        le=65_536,
        description=("LanceDB's index cache in MB (0 = auto: 64 MB, or 1024 MB once the table has its vector index)."),
    )
    access_flush_seconds: float = Field(
        default=2.0,
        ge=0.0,
        description="How often upkeep looks for recorded recall accesses to write "
        "(written in a 0.25 s pause between tool calls, at most 30 s after).",
    )
    read_only: bool = Field(
        default=False,
        description="Open the store read-only: reads work, every write is a ReadOnlyStoreError. A store on "
        "read-only media or without write permission is opened so anyway.",
    )
    lock_timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        description="Longest wait for the store's write lock held by another process; then the write fails, retryable.",
    )

    max_versions: int = Field(
        default=20, ge=1, le=1_000, description="Versions kept per memory (update_memory keeps the previous ones)."
    )
    conversation_ttl_days: float = Field(
        default=30.0, gt=0, description="How long a memory of type conversation lives before it expires."
    )
    context_ttl_hours: float = Field(
        default=0.0,
        ge=0,
        description="How long a memory of type context lives (0 = until the end of the day, server local time).",
    )
    duplicate_threshold: float = Field(
        default=0.9,
        ge=0.5,
        le=1.0,
        description="Similarity from which remember reports a stored memory as a near-duplicate.",
    )
    contradiction_threshold: float = Field(
        default=0.75,
        ge=0.5,
        le=1.0,
        description="Similarity from which a stored look-alike that differs in a number, date or negation is "
        "reported as a likely contradiction.",
    )
    max_pinned_in_recall: int = Field(
        default=10, ge=0, le=100, description="Pinned memories recall puts first, at most (0 = none)."
    )

    capture_ingest: bool = Field(
        default=True,
        description="Store what client hooks captured (`spatial-memory setup-hooks`) within a second of the hook; "
        "with no server running, a hook starts `spatial-memory ingest` itself. False: the spool waits for "
        "`spatial-memory ingest`.",
    )
    capture_namespace: str | None = Field(
        default=None,
        description="The namespace hooks capture into (default: project-<the git repository's directory name>); "
        "hooks read it from the environment.",
    )

    export_dirs: list[Path] = Field(
        default_factory=list, description="Directories export_memories may write to (default: <path>/exports)."
    )
    import_dirs: list[Path] = Field(
        default_factory=list, description="Directories import_memories may read from (default: <path>/exports)."
    )
    max_import_file_mb: float = Field(default=100.0, gt=0, description="The largest file import_memories reads (MB).")
    max_import_records: int = Field(default=100_000, ge=1, description="The most records one import reads.")

    # Serving over HTTP (a team server): see docs/TEAM.md.
    transport: Literal["stdio", "http"] = Field(
        default="stdio", description="stdio (what MCP clients start) or http (MCP's streamable HTTP at /mcp)."
    )
    host: str = Field(
        default="127.0.0.1",
        description="The HTTP address to listen on. Beyond localhost only with a tokens file or OAuth configured.",
    )
    port: int = Field(default=8765, ge=0, le=65_535, description="The HTTP port (0: any free port, logged at start).")
    http_sessions: bool = Field(
        default=False,
        description="Keep MCP sessions over HTTP (one server, or sticky load balancing). Default: stateless, every "
        "request stands alone, so any replica behind a load balancer can answer it.",
    )
    http_max_request_mb: float = Field(
        default=64.0,
        gt=0,
        description="The largest HTTP request body (MB); a bigger one gets 413. The tool limits allow bigger "
        "remember_batch / import calls than this default: split them, or raise it.",
    )
    tokens_file: Path | None = Field(
        default=None,
        description="Bearer tokens (stored hashed) naming a principal and its namespaces: `spatial-memory tokens add`.",
    )
    oauth_issuer: str | None = Field(
        default=None,
        description="OAuth 2.1 resource-server mode: the authorization server whose JWT access tokens count.",
    )
    oauth_audience: str | None = Field(
        default=None, description="The `aud` the access tokens must carry (default: the resource URL)."
    )
    oauth_jwks_url: str | None = Field(
        default=None, description="The issuer's JWKS (default: jwks_uri from the issuer's metadata)."
    )
    oauth_resource_url: str | None = Field(
        default=None,
        description="This server's public MCP URL, e.g. https://memory.example.com/mcp "
        "(default: http://<host>:<port>/mcp).",
    )
    oauth_namespaces_claim: str = Field(
        default="spatial_memory_namespaces",
        description="The access-token claim listing the namespaces the subject may read and write "
        "(a list, or a space-separated string; `team-*` is a prefix).",
    )
    oauth_read_namespaces_claim: str = Field(
        default="spatial_memory_read_namespaces", description="The claim listing namespaces the subject may only read."
    )
    oauth_required_scopes: list[str] = Field(
        default_factory=list, description="OAuth scopes every access token must carry (JSON list)."
    )

    @field_validator("path", mode="before")
    @classmethod
    def _location(cls, value: object) -> object:
        """A directory made absolute, or a store URI with its scheme checked and no trailing slash."""
        if isinstance(value, str) and "://" in value:
            scheme, _, rest = value.partition("://")
            if scheme.lower() not in REMOTE_SCHEMES:
                raise ValueError(f"unsupported store URI scheme '{scheme}://' (use a directory, s3://, gs:// or az://)")
            if not rest.strip("/"):
                raise ValueError("a store URI needs a bucket: s3://bucket/prefix")
            return f"{scheme.lower()}://{rest.strip('/')}"
        if not isinstance(value, (str, Path)):
            return value
        return _directory(Path(value).expanduser().resolve())

    @field_validator("local_path", mode="after")
    @classmethod
    def _absolute(cls, value: Path) -> Path:
        return _directory(value.expanduser().resolve())

    @field_validator("embedding_model")
    @classmethod
    def _model_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value.strip()

    @field_validator("tools")
    @classmethod
    def _known_tools(cls, value: str) -> str:
        return ",".join(parse_selection(value))

    @property
    def handshake_cache_dir(self) -> Path:
        import platformdirs  # as in default_data_dir: only when asked

        return platformdirs.user_cache_path("spatial-memory-mcp", appauthor=False)

    @property
    def remote_store(self) -> str | None:
        """The store's URI when it lives on object storage, else None."""
        return self.path if isinstance(self.path, str) else None

    @property
    def local_dir(self) -> Path:
        """Where what must be local lives: the store's directory, or local_path beside a remote store."""
        return self.path if isinstance(self.path, Path) else self.local_path

    @property
    def db_path(self) -> Path | str:
        """The LanceDB database: <path>/lancedb, or the store URI itself."""
        return self.path if isinstance(self.path, str) else self.path / "lancedb"

    @property
    def model_cache_dir(self) -> Path:
        return self.local_dir / "models"

    @property
    def resource_url(self) -> str:
        """This server's MCP endpoint as clients reach it (OAuth's resource identifier)."""
        if self.oauth_resource_url:
            return self.oauth_resource_url
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/mcp"

    @property
    def authorization_configured(self) -> bool:
        return self.tokens_file is not None or self.oauth_issuer is not None

    @property
    def allowed_export_dirs(self) -> list[Path]:
        return [d.expanduser().resolve() for d in self.export_dirs] or [self.local_dir / "exports"]

    @property
    def allowed_import_dirs(self) -> list[Path]:
        return [d.expanduser().resolve() for d in self.import_dirs] or [self.local_dir / "exports"]


def _directory(path: Path) -> Path:
    """A store directory: anything but a directory already there would fail every call later."""
    if path.exists() and not path.is_dir():
        raise ValueError(f"{path} exists and is not a directory: name a directory (created when missing)")
    return path


def describe_settings_error(exc: Exception) -> str:
    """One line naming the bad setting(s), for stderr at start-up."""
    if isinstance(exc, ValidationError):
        parts = []
        for err in exc.errors():
            name = str(err["loc"][0]) if err["loc"] else "?"
            env = name if name.startswith("SPATIAL_MEMORY_") else f"SPATIAL_MEMORY_{name.upper()}"
            parts.append(f"{env}: {err['msg']}")
        return "invalid setting " + "; ".join(parts)
    return f"invalid settings: {exc}"
