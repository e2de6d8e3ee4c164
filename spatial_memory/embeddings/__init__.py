"""Embedding router: picks a backend for the configured model and serves normalized vectors."""

from .router import EmbeddingRouter, canonical_model_id

__all__ = ["EmbeddingRouter", "canonical_model_id"]
