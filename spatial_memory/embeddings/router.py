"""EmbeddingRouter: one object the services call, whatever the model behind it.

- the bundled all-MiniLM-L6-v2: onnxruntime over a graph built from the packaged
  weights (fast start, no torch), in fp32, int8-row or int8 arithmetic (three paths, three model
  ids: a store records which one wrote its vectors), or sentence-transformers (fp32) when asked;
- any other sentence-transformers model name or local path;
- `openai:<model>` through the optional `openai` package.

Loading is lazy and thread-safe; all methods block and belong in worker threads.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path

import numpy as np

from ..config import BUNDLED_MODEL
from ..errors import ConfigurationError, EmbeddingError
from ..runtime.heap import trim
from .decisions import band_at, load_shifts
from .onnx_encoder import OnnxSentenceEncoder, bundled_model_dir

log = logging.getLogger(__name__)

BUNDLED_ALIASES = {BUNDLED_MODEL.lower(), f"sentence-transformers/{BUNDLED_MODEL}".lower()}
BUNDLED_DIMENSION = 384
# The bundled model's arithmetic paths, as recorded in a store: fp32 keeps the model's own id
# (what every store written before the int8 paths existed records), the others add a suffix.
PATH_IDS = {"fp32": BUNDLED_MODEL, "int8-row": f"{BUNDLED_MODEL}#int8-row", "int8": f"{BUNDLED_MODEL}#int8"}
PRECISIONS = ("auto", *PATH_IDS)
# The path a new store gets when the precision setting is auto: int8-row, batch independent
# (activations scaled per row) and about twice fp32's speed; a similarity near a threshold that
# changes the store is decided again on fp32 vectors (decisions.py). A store written on fp32 keeps
# being served by fp32 (its recorded model id); `spatial-memory reembed` moves it.
NEW_STORE_PATH = "int8-row"
# fp32 vectors of texts decided again near a threshold, kept: a stored memory near many new ones
# (a batch of restatements, a consolidate pass) is embedded once.
REFERENCE_CACHE = 4096
# How long the fp32 model stays loaded after it last decided a similarity (loading it again: ~0.3 s).
REFERENCE_IDLE_SECONDS = 30.0
OPENAI_DIMENSIONS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}


def canonical_model_id(name: str) -> str:
    """The id recorded in the store: aliases of the bundled model collapse to one name."""
    return BUNDLED_MODEL if name.strip().lower() in BUNDLED_ALIASES else name.strip()


def bundled_path_of(model_id: str | None) -> str | None:
    """The bundled model's path (a key of PATH_IDS) a recorded model id names, else None."""
    return next((path for path, known in PATH_IDS.items() if known == model_id), None)


Encode = Callable[[list[str]], np.ndarray]


class EmbeddingRouter:
    def __init__(
        self,
        model: str = BUNDLED_MODEL,
        *,
        backend: str = "auto",
        precision: str = "auto",
        cache_dir: Path | None = None,
        batch_size: int = 32,
        threads: int = 0,
        openai_api_key: str | None = None,
    ) -> None:
        self._model = canonical_model_id(model)
        self.backend = backend
        self.precision = precision  # as configured: one of PRECISIONS
        # The path this router embeds with (bundled model only): auto means the store's, and for
        # a new store NEW_STORE_PATH on onnxruntime (sentence-transformers computes in fp32 only).
        if precision != "auto":
            self.path = precision
        else:
            self.path = NEW_STORE_PATH if self.is_bundled and backend in ("auto", "onnx") else "fp32"
        self._cache_dir = cache_dir or Path.home() / ".cache" / "spatial-memory-mcp"
        self._batch_size = batch_size
        self._threads = threads
        self._openai_api_key = openai_api_key
        self._encode: Encode | None = None
        # The loaded model's early start of one query (the bundled model on onnxruntime only).
        self._begin_one: Callable[[str], Future[np.ndarray] | None] | None = None
        self._dimension: int | None = self.dimension_hint()
        self._lock = threading.Lock()
        self.backend_name = ""
        # The fp32 sibling that re-decides similarities near a threshold (decisions.py): built at
        # the first such case, never on the fp32 path.
        self._reference: EmbeddingRouter | None = None
        self._reference_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._reference_lock = threading.Lock()
        self._release_timer: threading.Timer | None = None
        self.reference_texts = 0  # texts the reference embedded (not from its cache)
        self.reference_asks = 0  # calls: groups of decisions near a threshold

    @property
    def is_bundled(self) -> bool:
        return self._model == BUNDLED_MODEL

    @property
    def model_id(self) -> str:
        """What a store records as the writer of its vectors: the model, and its path if bundled."""
        return PATH_IDS.get(self.path, self._model) if self.is_bundled else self._model

    def use_store_model(self, recorded: str | None) -> None:
        """Called before the store opens, with the model id it records (None: a new store). A store
        written by the bundled model's other path is embedded the same way when the precision is
        auto; a precision set to the other path is refused: one store never mixes the two. (A
        store of another model is MemoryStore's to refuse.)"""
        if not self.is_bundled:
            return
        if recorded is None:  # a new store: auto's path for new stores, whatever an earlier store used
            path = NEW_STORE_PATH if self.precision == "auto" and self.backend in ("auto", "onnx") else self.path
        else:
            path = bundled_path_of(recorded)
        if path is None or path == self.path:
            return
        if self.precision != "auto":
            raise ConfigurationError(
                f"this store's vectors were written by the bundled model's {path} path, and the server is set to "
                f"{self.precision} (SPATIAL_MEMORY_EMBEDDING_PRECISION); one store never mixes the two. Set "
                f"SPATIAL_MEMORY_EMBEDDING_PRECISION to auto or {path} to use this store, or move it to "
                f"{self.precision}: `spatial-memory reembed --precision {self.precision}` with its servers "
                "stopped, or export_memories, then import_memories with regenerate_embeddings=true into a store at "
                "another SPATIAL_MEMORY_PATH."
            )
        with self._lock:
            if path != self.path:
                log.info("embedding on the %s path, the one this store's vectors were written with", path)
                self.path = path
                self._encode = None  # a model loaded on the other path is dropped
                self._begin_one = None

    def decision_band(self, threshold: float) -> float:
        """How near the threshold a similarity is decided again on fp32 vectors (0: never; decisions.py)."""
        if self.path != "int8-row" or not self.is_bundled or self.backend not in ("auto", "onnx"):
            return 0.0
        return band_at(load_shifts(), threshold)

    def reference_vectors(self, texts: list[str]) -> np.ndarray:
        """fp32 vectors of texts (unit length), from the bundled model's fp32 path, loaded on first use."""
        with self._reference_lock:
            self.reference_asks += 1
            missing = list(dict.fromkeys(t for t in texts if t not in self._reference_cache))
            if missing:
                if self._reference is None:
                    log.info("loading the fp32 path to decide similarities near a threshold (%s path)", self.path)
                    self._reference = EmbeddingRouter(
                        self._model,
                        backend="onnx",
                        precision="fp32",
                        cache_dir=self._cache_dir,
                        batch_size=self._batch_size,
                        threads=self._threads,
                    )
                self.reference_texts += len(missing)
                for text, vector in zip(missing, self._reference.embed_documents(missing), strict=True):
                    self._reference_cache[text] = vector
                self._release_reference_later()
            for text in texts:
                self._reference_cache.move_to_end(text)
            out = np.stack([self._reference_cache[t] for t in texts])
            while len(self._reference_cache) > max(REFERENCE_CACHE, len(texts)):
                self._reference_cache.popitem(last=False)
            return out

    @property
    def reference_loaded(self) -> bool:
        """Whether the fp32 model that decides similarities near a threshold is loaded now."""
        return self._reference is not None

    def _release_reference_later(self) -> None:
        """Drop the fp32 model REFERENCE_IDLE_SECONDS after its last use (called under the reference
        lock): it is needed for the rare write near a threshold, and holding it beside the default
        path's model would cost the whole session its memory."""
        if self._release_timer is not None:
            self._release_timer.cancel()
        timer = threading.Timer(REFERENCE_IDLE_SECONDS, lambda: self._release_reference(timer))
        timer.daemon = True
        timer.name = "spatial-memory-fp32-release"
        self._release_timer = timer
        timer.start()

    def _release_reference(self, timer: threading.Timer) -> None:
        with self._reference_lock:
            # A timer that fired while a later use held the lock is not the latest one: the model stays.
            if self._reference is None or self._release_timer is not timer:
                return
            self._reference = None
            self._release_timer = None
        log.info("released the fp32 path (idle %.0f s)", REFERENCE_IDLE_SECONDS)
        trim()  # the session's arenas go back to the system: without it most of them stay resident

    def decision_note(self) -> str:
        """What the fp32 reference has done so far, for health."""
        if self.decision_band(0.9) <= 0:
            return ""
        if self._reference is None:
            return "; similarities near a threshold are decided on fp32 vectors (none yet)"
        return (
            f"; similarities near a threshold are decided on fp32 vectors: {self.reference_asks} times, "
            f"{self.reference_texts} texts embedded"
        )

    @property
    def loaded(self) -> bool:
        return self._encode is not None

    def dimension_hint(self) -> int | None:
        """The dimension when it is known without loading the model."""
        if self.is_bundled:
            return BUNDLED_DIMENSION
        if self.model_id.startswith("openai:"):
            return OPENAI_DIMENSIONS.get(self.model_id.split(":", 1)[1])
        return None

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self.load()
        assert self._dimension is not None
        return self._dimension

    def load(self) -> None:
        with self._lock:
            if self._encode is not None:
                return
            try:
                self._encode, dimension = self._load_backend()
            except (ConfigurationError, EmbeddingError):
                raise
            except Exception as exc:
                raise EmbeddingError(f"cannot load embedding model '{self.model_id}': {exc}") from exc
            if self._dimension is not None and dimension != self._dimension:
                raise ConfigurationError(
                    f"model '{self.model_id}' produces {dimension} dimensions, expected {self._dimension}"
                )
            self._dimension = dimension

    def _load_backend(self) -> tuple[Encode, int]:
        if self.model_id.startswith("openai:"):
            return self._load_openai(self.model_id.split(":", 1)[1])
        if self.precision not in PRECISIONS:
            raise ConfigurationError(
                f"unknown embedding precision '{self.precision}': use one of {', '.join(PRECISIONS)}"
            )
        if self.is_bundled and self.backend in ("auto", "onnx"):
            encoder = OnnxSentenceEncoder(
                bundled_model_dir(),
                self._cache_dir,
                precision=self.path,
                threads=self._threads,
                batch_size=self._batch_size,
            )
            self.backend_name = "onnxruntime"
            self._begin_one = encoder.begin_one
            return encoder.encode, encoder.dimension
        if self.backend == "onnx":
            raise ConfigurationError("the onnx backend serves only the bundled all-MiniLM-L6-v2 model")
        if self.path != "fp32":
            raise ConfigurationError(
                f"the {self.path} path (SPATIAL_MEMORY_EMBEDDING_PRECISION, or a store written by it) runs only the "
                f"bundled {BUNDLED_MODEL} on onnxruntime: set SPATIAL_MEMORY_EMBEDDING_BACKEND to auto, or the "
                "precision to fp32"
            )
        return self._load_sentence_transformers()

    def _load_sentence_transformers(self) -> tuple[Encode, int]:
        try:
            from sentence_transformers import SentenceTransformer  # the optional `models` extra (torch)
        except ImportError as exc:
            raise ConfigurationError(
                "sentence-transformers is not installed; install it to use the model "
                f"'{self.model_id}', or use the bundled {BUNDLED_MODEL}"
            ) from exc
        if self.is_bundled:
            source = str(bundled_model_dir())
        else:
            source = self.model_id
        try:
            model = SentenceTransformer(source, device="cpu", local_files_only=True)
        except Exception as exc:
            if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes"):
                raise EmbeddingError(
                    f"model '{self.model_id}' is not in the local cache and HF_HUB_OFFLINE is set: "
                    "download it once with network access, or give a local path"
                ) from exc
            log.info("model %s not cached locally; downloading", self.model_id)
            model = SentenceTransformer(source, device="cpu")
        batch_size = self._batch_size

        def encode(texts: list[str]) -> np.ndarray:
            vectors = model.encode(texts, batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False)
            return np.asarray(vectors, dtype=np.float32)

        self.backend_name = "sentence-transformers"
        dim = model.get_embedding_dimension() if hasattr(model, "get_embedding_dimension") else None
        dim = dim or model.get_sentence_embedding_dimension()
        if dim is None:
            raise ConfigurationError(f"{source} does not say how many dimensions its embeddings have")
        return encode, int(dim)

    def _load_openai(self, name: str) -> tuple[Encode, int]:
        try:
            import openai  # pyright: ignore[reportMissingImports] - the optional `openai` extra, not installed to check types
        except ImportError as exc:
            raise ConfigurationError(
                "OpenAI embeddings need the optional extra: pip install 'spatial-memory-mcp[openai]'"
            ) from exc
        key = self._openai_api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            raise ConfigurationError(
                f"model 'openai:{name}' needs an API key: set SPATIAL_MEMORY_OPENAI_API_KEY or OPENAI_API_KEY"
            )
        client = openai.OpenAI(api_key=key)

        def encode(texts: list[str]) -> np.ndarray:
            response = client.embeddings.create(model=name, input=texts)
            vectors = np.array([item.embedding for item in response.data], dtype=np.float32)
            return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)

        self.backend_name = "openai"
        dimension = self.dimension_hint() or int(encode(["dimension probe"]).shape[1])
        return encode, dimension

    def _run(self, texts: list[str]) -> np.ndarray:
        self.load()
        assert self._encode is not None
        try:
            vectors = self._encode(texts)
        except (ConfigurationError, EmbeddingError):
            raise
        except Exception as exc:
            raise EmbeddingError(f"embedding failed: {exc}") from exc
        if vectors.shape != (len(texts), self.dimension) or not np.isfinite(vectors).all():
            raise EmbeddingError("the embedding model returned malformed vectors")
        return vectors

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return self._run(list(texts))

    def embed_query(self, text: str) -> np.ndarray:
        return self._run([text])[0]

    def begin_query(self, text: str) -> Future[np.ndarray] | None:
        """embed_query's rows (1 x dimension) for `text`, begun on the model's query thread without
        waiting for it (runtime/early_queries.py); None when the model is not loaded yet or is not
        the bundled one on onnxruntime."""
        begin = self._begin_one
        return begin(text) if begin is not None and self._encode is not None else None
