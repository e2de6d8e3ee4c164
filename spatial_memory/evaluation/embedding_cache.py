"""An embedder wrapper for evaluations that store and ask the same texts again."""

from __future__ import annotations

from typing import Any

import numpy as np


class CachedEmbedder:
    """Wraps an embedder so a text is embedded once: repeated queries (one per alpha) and
    documents stored again (the same turns in another store or namespace). The model is
    deterministic, so a cached vector is the one the model would give."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.model_id = inner.model_id
        self._queries: dict[str, np.ndarray] = {}
        self._documents: dict[str, np.ndarray] = {}

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    @property
    def loaded(self) -> bool:
        return self._inner.loaded

    def load(self) -> None:
        self._inner.load()

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        missing = list(dict.fromkeys(text for text in texts if text not in self._documents))
        if missing:
            self._documents.update(zip(missing, self._inner.embed_documents(missing), strict=True))
        if not texts:
            return self._inner.embed_documents(texts)
        return np.stack([self._documents[text] for text in texts])

    def embed_query(self, text: str) -> np.ndarray:
        if text not in self._queries:
            self._queries[text] = self._inner.embed_query(text)
        return self._queries[text]
