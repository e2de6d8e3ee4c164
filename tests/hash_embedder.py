"""The deterministic fake embedder of the plumbing tests, in a module of its own: the fake server
(tests/reliability_server.py), started hundreds of times by the suite, imports it without pytest."""

from __future__ import annotations

import hashlib
import re

import numpy as np


class HashEmbedder:
    """Deterministic bag-of-words hashing embedder for plumbing tests (not for quality)."""

    model_id = "test-hash-embedder"

    def __init__(self, dimension: int = 64) -> None:
        self._dimension = dimension
        self.calls = 0

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def loaded(self) -> bool:
        return True

    def load(self) -> None:
        pass

    def _one(self, text: str) -> np.ndarray:
        vec = np.zeros(self._dimension, dtype=np.float32)
        for word in re.findall(r"\w+", text.lower()) or [text]:
            digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
            vec[int.from_bytes(digest[:4], "little") % self._dimension] += 1.0
            vec[int.from_bytes(digest[4:], "little") % self._dimension] += 0.5
        norm = np.linalg.norm(vec)
        return vec / norm if norm else np.full(self._dimension, 1 / np.sqrt(self._dimension), np.float32)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        return np.stack([self._one(t) for t in texts]) if texts else np.zeros((0, self._dimension), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self._one(text)
