"""Measurements of quality shared by the benchmarks and the tests (never imported by the server):
LoCoMo retrieval (locomo.py; the data through SPATIAL_MEMORY_EVAL_DIR), capture replayed on
labelled sessions (capture_replay.py), an embedder that embeds each text once (embedding_cache.py),
and a soak's workload and process readings (soak.py)."""
