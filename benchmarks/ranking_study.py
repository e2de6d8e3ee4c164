"""Conversation-aware recall ranking on LoCoMo dev (issue 16): a study of spatial_memory.algorithms.ranking.

    python -m benchmarks.ranking_study                 # full study, ~2-4 minutes on 2 cores
    python -m benchmarks.ranking_study --quick         # smaller grid

Reproduces the server's retrieval pipeline in-process (protocol: ../shared/eval/README.md):

(a) vector search: the top K_v turns of the conversation by cosine similarity to the query, with the bundled
    all-MiniLM-L6-v2 (exact search, as the server's in-memory exact copy does at this size);
(b) keyword search: LanceDB's native BM25 full-text index over the turn texts, one table per conversation,
    built with the server's own options (storage.store.FTS_OPTIONS, query through match_text), top K_k;
(c) with conversation structure: the neighbours (same session, sequence +-1, +-2) of the keyword hits;
(c') the RM3 expansion query (ranking.expansion_query over the top keyword hits' texts), a second keyword search;
(d) ranking.rank over the union.

Parameters are tuned by grid search with leave-one-conversation-out (for each of the 5 conversations, the grid
point best on the other 4 scores it; the pooled held-out scores are the out-of-sample figures). The study also
names one fixed default chosen on all 5 conversations (in sample) and reports it beside the LOO figures.

Embeddings of the turns and questions are cached under ~/.cache/spatial-memory-mcp/ranking-study (or --cache).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import itertools
import json
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from spatial_memory.algorithms import ranking

from . import locomo

MAIN = (1, 2, 3, 4)
METRICS = ("recall@5", "recall@10", "ndcg@10", "mrr@10")
RESULTS = Path(__file__).resolve().parent / "results" / "ranking_study.json"
DEFAULT_CACHE = Path.home() / ".cache" / "spatial-memory-mcp" / "ranking-study"
RRF_K = 1  # services.memory.RRF_K, the server's hybrid_search today
HYBRID_DEPTH = 50  # services.memory.hybrid_depth(10)


# ---------------------------------------------------------------------------------------------
# data


@dataclass
class Conv:
    sample_id: str
    dia_ids: list[str]
    texts: list[str]
    session: np.ndarray  # int, session number
    sequence: np.ndarray  # int, index within the session from 0
    speaker: list[str]
    occurred_at: np.ndarray  # epoch seconds
    questions: list[locomo.Question]
    vectors: np.ndarray = field(default_factory=lambda: np.zeros((0, 384), np.float32))
    time_ref: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    table: Any = None

    @property
    def speakers(self) -> list[str]:
        return sorted(set(self.speaker))


def parse_when(text: str) -> float:
    """LoCoMo's session date_time ("1:56 pm on 8 May, 2023") as UTC epoch seconds."""
    when = datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)
    return when.timestamp()


def load(path: Path) -> list[Conv]:
    """locomo.load's turns and questions, plus each turn's conversation structure from the same file."""
    raw = {s["sample_id"]: s["conversation"] for s in json.loads(Path(path).read_text())}
    out = []
    for conv in locomo.load(path):
        c = raw[conv.sample_id]
        structure: dict[str, tuple[int, int, str, float]] = {}
        for key in c:
            m = re.fullmatch(r"session_(\d+)", key)
            if not m:
                continue
            n = int(m.group(1))
            when = parse_when(c[f"session_{n}_date_time"])
            for seq, turn in enumerate(c[key]):
                structure[turn["dia_id"]] = (n, seq, turn["speaker"], when)
        rows = [structure[t.dia_id] for t in conv.turns]
        out.append(
            Conv(
                conv.sample_id,
                [t.dia_id for t in conv.turns],
                [t.text for t in conv.turns],
                np.array([r[0] for r in rows], np.int64),
                np.array([r[1] for r in rows], np.int64),
                [r[2] for r in rows],
                np.array([r[3] for r in rows], np.float64),
                conv.questions,
            )
        )
    return out


def embed_cached(embedder: Any, texts: list[str], cache: Path, kind: str) -> np.ndarray:
    digest = hashlib.sha256(("\x00".join(texts) + kind).encode()).hexdigest()[:16]
    file = cache / f"{kind}-{digest}.npy"
    if file.exists():
        return np.load(file)
    embedder.load()
    if kind == "documents":
        vectors = np.asarray(embedder.embed_documents(texts), np.float32)
    else:
        vectors = np.stack([np.asarray(embedder.embed_query(t), np.float32) for t in texts])
    cache.mkdir(parents=True, exist_ok=True)
    np.save(file, vectors)
    return vectors


def build_tables(convs: list[Conv], root: Path) -> None:
    """One LanceDB table per conversation with the server's full-text index on `content`."""
    import lancedb
    import pyarrow as pa
    from lancedb.index import FTS

    from spatial_memory.storage.store import FTS_OPTIONS

    db = lancedb.connect(str(root))
    for conv in convs:
        data = pa.table({"row": pa.array(range(len(conv.texts)), pa.int32()), "content": conv.texts})
        table = db.create_table(conv.sample_id.replace("-", "_"), data=data, mode="overwrite")
        table.create_index("content", config=FTS(**FTS_OPTIONS))
        conv.table = table


def fts(conv: Conv, text: str, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """The server's keyword search (storage.store.Store.fts_search): rows and BM25 scores, best first."""
    from lancedb.query import MatchQuery

    from spatial_memory.storage.store import match_text

    terms = match_text(text)
    if not terms:
        return np.zeros(0, np.int64), np.zeros(0, np.float64)
    table = conv.table.search(MatchQuery(terms, "content"), query_type="fts").select(["row", "_score"])
    table = table.limit(limit).to_arrow()
    return np.asarray(table.column("row").to_pylist(), np.int64), np.asarray(table.column("_score").to_pylist())


# ---------------------------------------------------------------------------------------------
# per-question retrieval (a)-(c), cached across grid points


@dataclass
class Query:
    conv: int
    text: str
    category: int
    relevant: list[str]
    cos: np.ndarray  # cosine similarity to every turn of the conversation
    kw_rows: np.ndarray  # keyword hits, best first (up to K_k max)
    kw_scores: np.ndarray
    features: ranking.QueryFeatures
    expansions: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)


K_MAX = 100


def prepare(convs: list[Conv], qvecs: np.ndarray) -> list[Query]:
    queries = []
    i = 0
    for ci, conv in enumerate(convs):
        for q in conv.questions:
            rows, scores = fts(conv, q.question, K_MAX)
            cos = conv.vectors @ qvecs[i]
            feats = ranking.query_features(q.question, conv.speakers)
            queries.append(Query(ci, q.question, q.category, q.evidence, cos, rows, scores, feats))
            i += 1
    return queries


def expansion(conv: Conv, q: Query, docs: int, terms: int, k_k: int) -> tuple[np.ndarray, np.ndarray]:
    """(c'): the RM3 expansion query over the top `docs` keyword hits, run as a second keyword search."""
    key = (docs, terms)
    if key not in q.expansions:
        top = q.kw_rows[:docs]
        text = ranking.expansion_query(
            q.text, [conv.texts[r] for r in top], q.kw_scores[:docs], terms=terms, exclude=conv.speakers
        )
        q.expansions[key] = fts(conv, text, K_MAX) if text else (np.zeros(0, np.int64), np.zeros(0))
    rows, scores = q.expansions[key]
    return rows[:k_k], scores[:k_k]


@dataclass(frozen=True)
class Pipeline:
    """The server-side retrieval settings (not ranking parameters)."""

    k_v: int = 50
    k_k: int = 50
    radius: int = 2  # neighbours fetched around keyword hits (structure only)
    rm3_docs: int = 5
    rm3_terms: int = 10
    structure: bool = True


def candidates(conv: Conv, q: Query, pipe: Pipeline, use_rm3: bool) -> tuple[np.ndarray, ranking.CandidateArrays]:
    """The candidate union of (a)-(c') and its arrays, as the server would build them."""
    n = len(conv.texts)
    k_v = min(pipe.k_v, n)
    vec_rows = np.argpartition(-q.cos, k_v - 1)[:k_v] if k_v else np.zeros(0, np.int64)
    kw_rows, kw_scores = q.kw_rows[: pipe.k_k], q.kw_scores[: pipe.k_k]
    parts = [vec_rows, kw_rows]
    ex_rows = ex_scores = None
    if use_rm3:
        ex_rows, ex_scores = expansion(conv, q, pipe.rm3_docs, pipe.rm3_terms, pipe.k_k)
        parts.append(ex_rows)
    if pipe.structure and pipe.radius:
        hits = kw_rows if ex_rows is None else np.concatenate([kw_rows, ex_rows])
        # neighbours by (session, sequence): rows are stored in conversation order, so a neighbour is a row
        # offset that stays in the same session
        for d in range(1, pipe.radius + 1):
            for s in (-d, d):
                nb = hits + s
                ok = (nb >= 0) & (nb < n)
                nb = nb[ok]
                nb = nb[conv.session[nb] == conv.session[hits[ok]]]
                parts.append(nb)
    rows = np.unique(np.concatenate(parts))
    bm25 = np.full(len(rows), np.nan)
    pos = np.searchsorted(rows, kw_rows)
    bm25[pos] = kw_scores
    bm25_ex = None
    if ex_rows is not None:
        bm25_ex = np.full(len(rows), np.nan)
        bm25_ex[np.searchsorted(rows, ex_rows)] = ex_scores
    if pipe.structure:
        arrays = ranking.CandidateArrays.build(
            similarity=q.cos[rows],
            bm25=bm25,
            bm25_expansion=bm25_ex,
            session=conv.session[rows],
            sequence=conv.sequence[rows],
            speaker=[conv.speaker[r] for r in rows],
            occurred_at=conv.occurred_at[rows],
            time_ref=conv.time_ref[rows],
        )
    else:
        arrays = ranking.CandidateArrays.build(
            similarity=q.cos[rows], bm25=bm25, bm25_expansion=bm25_ex, time_ref=conv.time_ref[rows]
        )
    return rows, arrays


# ---------------------------------------------------------------------------------------------
# evaluation


def metrics(ranked_rows: np.ndarray, conv: Conv, q: Query) -> np.ndarray:
    ranked = [conv.dia_ids[r] for r in ranked_rows[:10]]
    s = locomo.score(ranked, q.relevant)
    return np.array([s[m] for m in METRICS])


def run_rank(convs: list[Conv], queries: list[Query], pipe: Pipeline, params: ranking.RankingParams) -> np.ndarray:
    """Per-query metrics (rows: queries, columns: METRICS) of the full pipeline with ranking.rank."""
    use_rm3 = params.expansion_weight > 0
    out = np.zeros((len(queries), len(METRICS)))
    for i, q in enumerate(queries):
        conv = convs[q.conv]
        feats = q.features if pipe.structure else dataclasses.replace(q.features, speakers=frozenset())
        rows, arrays = candidates(conv, q, pipe, use_rm3)
        order, _ = ranking.rank(feats, arrays, params)
        out[i] = metrics(rows[order], conv, q)
    return out


def run_vector(convs: list[Conv], queries: list[Query]) -> np.ndarray:
    out = np.zeros((len(queries), len(METRICS)))
    for i, q in enumerate(queries):
        top = np.lexsort((np.arange(len(q.cos)), -q.cos))[:10]
        out[i] = metrics(top, convs[q.conv], q)
    return out


def run_rrf(convs: list[Conv], queries: list[Query], alpha: float = 0.5) -> np.ndarray:
    """The server's hybrid_search today: weighted RRF (k = 1) of the top-50 vector and top-50 keyword lists."""
    from spatial_memory.algorithms.fusion import reciprocal_rank_fusion

    out = np.zeros((len(queries), len(METRICS)))
    for i, q in enumerate(queries):
        by_vec = np.lexsort((np.arange(len(q.cos)), -q.cos))[:HYBRID_DEPTH]
        fused = reciprocal_rank_fusion(
            [[str(r) for r in by_vec], [str(r) for r in q.kw_rows[:HYBRID_DEPTH]]], [alpha, 1 - alpha], k=RRF_K
        )
        out[i] = metrics(np.array([int(r) for r, _ in fused[:10]]), convs[q.conv], q)
    return out


def setup(path: Path, cache: Path, workdir: Path) -> tuple[list[Conv], list[Query]]:
    from spatial_memory.embeddings import EmbeddingRouter

    convs = load(path)
    embedder = EmbeddingRouter(cache_dir=cache.parent)
    started = time.perf_counter()
    all_texts = [t for c in convs for t in c.texts]
    vectors = embed_cached(embedder, all_texts, cache, "documents")
    at = 0
    for c in convs:
        c.vectors = vectors[at : at + len(c.texts)]
        c.time_ref = ranking.mentions_time(c.texts)
        at += len(c.texts)
    qtexts = [q.question for c in convs for q in c.questions]
    qvecs = embed_cached(embedder, qtexts, cache, "queries")
    build_tables(convs, workdir)
    queries = prepare(convs, qvecs)
    print(
        f"{len(all_texts)} turns, {len(queries)} questions of {len(convs)} conversations ready "
        f"in {time.perf_counter() - started:.1f} s"
    )
    return convs, queries
