"""Conversation-aware recall ranking on LoCoMo dev (issue 16): a study of spatial_memory.algorithms.ranking.

    python -m benchmarks.ranking_study                 # ~2-3 minutes on 2 cores (first run + ~1 min embedding)
    python -m benchmarks.ranking_study --wide          # also a 6-parameter grid (about 4x longer)

Reproduces the server's retrieval pipeline in-process (protocol: ../shared/eval/README.md; the data is read
from there, never copied):

(a) vector search: the top K_v = 50 turns of the conversation by cosine similarity to the query, bundled
    all-MiniLM-L6-v2 (exact search, as the server's in-memory exact copy does at this size);
(b) keyword search: LanceDB's native BM25 full-text index, one table per conversation, built with the server's
    own index options and query sanitiser (storage.fulltext: FTS_OPTIONS, match_text), top K_k = 100 with raw
    scores;
(c) with conversation structure: the turns at sequence -2..+2 in the same session as each keyword hit;
(d) ranking.rank over the union (about 300 candidates with structure, 125 without).

"With structure": session, sequence, speaker, occurred_at of every turn are known (the README's mapping).
"Without": none of them is (no neighbours fetched, no speaker / date / session cues); text-derived features
(length, question mark, time words) still apply.

Out of sample: leave one conversation out. The grid tunes alpha, cue_weight and prior_weight (75 points). For
each of the 5 conversations, the grid point with the best objective on the other 4 (recall@10 + nDCG@10 on
categories 1-4, with structure plus without, so that one parameter set serves both modes, as RankingParams'
defaults do) scores the held-out conversation; the pooled held-out scores are the out-of-sample figures. The
ranking's form and its fixed constants were explored on all 5 conversations, so only the three weights are out
of sample. The default (RankingParams()) is the grid's best point on three conversations (TUNE_3: conv-26,
conv-30, conv-41); its figures on the other two (HELD_2) are out of sample for the three weights and are what
the server's benchmark (benchmarks/run.py HELD_OUT) reproduces; on all five they are reported as in sample,
beside ablations and pipeline-size sweeps (in sample too). --wide repeats the
leave-one-out over 6 parameters.

Embeddings of the turns and questions are cached under ~/.cache/spatial-memory-mcp/ranking-study (or --cache).
Writes benchmarks/results/ranking_study.json and prints markdown tables.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # small products: threads only add overhead on a shared box

import argparse
import dataclasses
import hashlib
import itertools
import json
import math
import platform
import re
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from spatial_memory.algorithms import ranking
from spatial_memory.evaluation import locomo

MAIN = (1, 2, 3, 4)
METRICS = ("recall@5", "recall@10", "ndcg@10", "mrr@10")
RESULTS = Path(__file__).resolve().parent / "results" / "ranking_study.json"
DEFAULT_CACHE = Path.home() / ".cache" / "spatial-memory-mcp" / "ranking-study"
RRF_K = 1  # services: the server's hybrid search today (weighted RRF, k = 1)
TUNE_3 = ("conv-26", "conv-30", "conv-41")  # chose RankingParams' defaults
HELD_2 = ("conv-42", "conv-43")  # never chose anything: out of sample for the defaults
HYBRID_DEPTH = 50  # services: hybrid_depth(10), candidates per side
K_MAX = 100  # keyword hits fetched once per question; pipelines take a prefix


# ---------------------------------------------------------------------------------------------
# data


@dataclass
class Conv:
    sample_id: str
    dia_ids: list[str]
    texts: list[str]
    session: np.ndarray  # session number
    sequence: np.ndarray  # index within the session, from 0
    speaker: list[str]
    occurred_at: np.ndarray  # UTC epoch seconds of the session's date_time
    questions: list[locomo.Question]
    vectors: np.ndarray = field(default_factory=lambda: np.zeros((0, 384), np.float32))
    words: np.ndarray = field(default_factory=lambda: np.zeros(0))
    question: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    time_ref: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    stated_at: np.ndarray = field(default_factory=lambda: np.zeros(0))
    table: Any = None

    @property
    def speakers(self) -> list[str]:
        return sorted(set(self.speaker))


def parse_when(text: str) -> float:
    """LoCoMo's session date_time ("1:56 pm on 8 May, 2023") as UTC epoch seconds."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc).timestamp()


def load(path: Path) -> list[Conv]:
    """locomo.load's turns and questions, plus each turn's conversation structure read from the same file."""
    raw = {s["sample_id"]: s["conversation"] for s in json.loads(Path(path).read_text())}
    out = []
    for conv in locomo.load(path):
        c = raw[conv.sample_id]
        structure: dict[str, tuple[int, int, str, float]] = {}
        for key in c:
            if m := re.fullmatch(r"session_(\d+)", key):
                n = int(m.group(1))
                when = parse_when(c[f"session_{n}_date_time"])
                for seq, turn in enumerate(c[key]):
                    structure[turn["dia_id"]] = (n, seq, turn["speaker"], when)
        rows = [structure[t.dia_id] for t in conv.turns]
        texts = [t.text for t in conv.turns]
        out.append(
            Conv(
                conv.sample_id,
                [t.dia_id for t in conv.turns],
                texts,
                np.array([r[0] for r in rows], np.int64),
                np.array([r[1] for r in rows], np.int64),
                [r[2] for r in rows],
                np.array([r[3] for r in rows], np.float64),
                conv.questions,
                words=ranking.word_counts(texts),
                question=ranking.asks_question(texts),
                time_ref=ranking.mentions_time(texts),
                stated_at=ranking.stated_times(texts),
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


def _fulltext() -> tuple[dict[str, Any], Callable[[str], str]]:
    """The server's full-text index options and query sanitiser."""
    try:
        from spatial_memory.storage.search.fulltext import FTS_OPTIONS, match_text
    except ImportError:  # pragma: no cover - the layout before storage/search/fulltext.py
        from spatial_memory.storage.store import FTS_OPTIONS, match_text  # type: ignore[attr-defined,no-redef]
    return FTS_OPTIONS, match_text


def build_tables(convs: list[Conv], root: Path) -> None:
    """One LanceDB table per conversation with the server's full-text index on `content`."""
    import lancedb
    import pyarrow as pa
    from lancedb.index import FTS

    options, _ = _fulltext()
    db = lancedb.connect(str(root))
    for conv in convs:
        data = pa.table({"row": pa.array(range(len(conv.texts)), pa.int32()), "content": conv.texts})
        table = db.create_table(conv.sample_id.replace("-", "_"), data=data, mode="overwrite")
        table.create_index("content", config=FTS(**options))
        conv.table = table


def fts(conv: Conv, text: str, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """The server's keyword search (Store.fts_search): rows and raw BM25 scores, best first."""
    from lancedb.query import MatchQuery

    _, match_text = _fulltext()
    terms = match_text(text)
    if not terms:
        return np.zeros(0, np.int64), np.zeros(0)
    query = conv.table.search(MatchQuery(terms, "content"), query_type="fts").select(["row", "_score"])
    table = query.limit(limit).to_arrow()
    return np.asarray(table.column("row").to_pylist(), np.int64), np.asarray(table.column("_score").to_pylist())


# ---------------------------------------------------------------------------------------------
# per-question retrieval (a)-(c)


@dataclass
class Query:
    conv: int
    text: str
    category: int
    relevant: list[str]
    cos: np.ndarray  # cosine similarity to every turn of the conversation
    kw_rows: np.ndarray  # keyword hits, best first (K_MAX)
    kw_scores: np.ndarray


@dataclass(frozen=True)
class Pipeline:
    """Server-side retrieval settings (not ranking parameters)."""

    structure: bool = True
    k_v: int = 50
    k_k: int = 100
    radius: int = 2  # neighbours fetched around each keyword hit (structure only)


@dataclass
class Prepared:
    """One question's candidate set for one pipeline, ready for ranking.rank."""

    rows: np.ndarray
    arrays: ranking.CandidateArrays
    features: ranking.QueryFeatures


def candidates(conv: Conv, q: Query, pipe: Pipeline) -> Prepared:
    """The union of (a)-(c) and its arrays, as the server would build them."""
    n = len(conv.texts)
    k_v = min(pipe.k_v, n)
    vec_rows = np.argsort(-q.cos, kind="stable")[:k_v]
    kw_rows, kw_scores = q.kw_rows[: pipe.k_k], q.kw_scores[: pipe.k_k]
    parts = [vec_rows, kw_rows]
    if pipe.structure:
        # (c) by (session, sequence): the rows are in conversation order, so sequence +- d in the same session
        # is row +- d when that row is in the same session
        for d in range(1, pipe.radius + 1):
            for step in (-d, d):
                nb = kw_rows + step
                ok = (nb >= 0) & (nb < n)
                nb, src = nb[ok], kw_rows[ok]
                parts.append(
                    nb[(conv.session[nb] == conv.session[src]) & (conv.sequence[nb] == conv.sequence[src] + step)]
                )
    rows = np.unique(np.concatenate(parts))
    bm25 = np.full(len(rows), np.nan)
    bm25[np.searchsorted(rows, kw_rows)] = kw_scores
    text = {
        "words": conv.words[rows],
        "question": conv.question[rows],
        "time_ref": conv.time_ref[rows],
        "stated_at": conv.stated_at[rows],
    }
    if pipe.structure:
        arrays = ranking.CandidateArrays.build(
            q.cos[rows],
            bm25,
            session=[f"{conv.sample_id}/S{s}" for s in conv.session[rows]],
            sequence=conv.sequence[rows],
            speaker=[conv.speaker[r] for r in rows],
            occurred_at=conv.occurred_at[rows],
            vectors=conv.vectors[rows],
            **text,
        )
        features = ranking.query_features(q.text, sorted({conv.speaker[r] for r in rows}))
    else:
        arrays = ranking.CandidateArrays.build(q.cos[rows], bm25, vectors=conv.vectors[rows], **text)
        features = ranking.query_features(q.text)
    return Prepared(rows, arrays, features)


def prepare(convs: list[Conv], queries: list[Query], pipe: Pipeline) -> list[Prepared]:
    return [candidates(convs[q.conv], q, pipe) for q in queries]


# ---------------------------------------------------------------------------------------------
# evaluation


def score_rows(conv: Conv, q: Query, ranked_rows: Iterable[int]) -> list[float]:
    ranked = [conv.dia_ids[int(r)] for r in itertools.islice(ranked_rows, 10)]
    s = locomo.score(ranked, q.relevant)
    return [s[m] for m in METRICS]


def run_rank(
    convs: list[Conv], queries: list[Query], prepared: list[Prepared], params: ranking.RankingParams
) -> np.ndarray:
    """Per-question metrics (rows: questions, columns: METRICS) of ranking.rank on prepared candidates."""
    out = np.zeros((len(queries), len(METRICS)))
    for i, (q, prep) in enumerate(zip(queries, prepared, strict=True)):
        order, _ = ranking.rank(prep.features, prep.arrays, params)
        out[i] = score_rows(convs[q.conv], q, prep.rows[order[:10]])
    return out


def run_vector(convs: list[Conv], queries: list[Query]) -> np.ndarray:
    """recall today: the top 10 by cosine similarity."""
    return np.array([score_rows(convs[q.conv], q, np.argsort(-q.cos, kind="stable")[:10]) for q in queries])


# The baseline the ranking was measured against (hybrid_recall before issue 16); the server does not use it.
def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[str]],
    weights: Sequence[float],
    k: int = 60,
) -> list[tuple[str, float]]:
    """Weighted RRF: score(id) = sum_i w_i / (k + rank_i), rank from 1.

    Sorted by score desc; ties by rank in the first ranking, then best rank in
    any ranking, then id. Zero-weight rankings contribute nothing, and ids that
    appear only in them are dropped. Repeated ids keep their first rank.
    """
    if len(rankings) != len(weights):
        raise ValueError("rankings and weights must have the same length")
    if k < 0:
        raise ValueError("k must be >= 0")
    if any(not math.isfinite(w) or w < 0 for w in weights):
        raise ValueError("weights must be finite and >= 0")

    scores: dict[str, float] = {}
    best_rank: dict[str, int] = {}
    for one, weight in zip(rankings, weights, strict=True):
        if weight == 0:
            continue
        seen: set[str] = set()
        for rank, item in enumerate(one, start=1):
            if item in seen:
                continue
            seen.add(item)
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
            best_rank[item] = min(best_rank.get(item, rank), rank)

    first_rank: dict[str, int] = {}
    if rankings:
        for rank, item in enumerate(rankings[0], start=1):
            first_rank.setdefault(item, rank)

    def key(item: str) -> tuple[float, float, int, str]:
        # Rounding makes sums of the same terms in a different order tie exactly.
        return (
            -round(scores[item], 12),
            first_rank.get(item, math.inf),
            best_rank[item],
            item,
        )

    return [(item, scores[item]) for item in sorted(scores, key=key)]


def run_rrf(convs: list[Conv], queries: list[Query], alpha: float = 0.5) -> np.ndarray:
    """hybrid_recall before issue 16: weighted RRF (k = 1) of the top-50 vector and top-50 keyword lists."""
    out = []
    for q in queries:
        by_vector = np.argsort(-q.cos, kind="stable")[:HYBRID_DEPTH]
        fused = reciprocal_rank_fusion(
            [[str(r) for r in by_vector], [str(r) for r in q.kw_rows[:HYBRID_DEPTH]]], [alpha, 1 - alpha], k=RRF_K
        )
        out.append(score_rows(convs[q.conv], q, (int(r) for r, _ in fused[:10])))
    return np.array(out)


def summarize(m: np.ndarray, cats: np.ndarray, mask: np.ndarray | None = None) -> dict[str, dict[str, float]]:
    """Mean metrics for categories 1-4 and each category, over the questions in mask."""
    keep = np.ones(len(cats), bool) if mask is None else mask
    groups = {"1-4": keep & np.isin(cats, MAIN)} | {
        f"{c} {locomo.CATEGORIES[c]}": keep & (cats == c) for c in sorted(locomo.CATEGORIES)
    }
    out = {}
    for name, sel in groups.items():
        if sel.any():
            out[name] = {k: round(float(m[sel, j].mean()), 4) for j, k in enumerate(METRICS)} | {"n": int(sel.sum())}
    return out


def objective(m: np.ndarray, sel: np.ndarray) -> float:
    """Tuning objective: recall@10 + nDCG@10, categories 1-4 (sel already restricted to them)."""
    return float(m[sel, 1].mean() + m[sel, 2].mean())


# ---------------------------------------------------------------------------------------------
# the study


def grid(wide: bool = False) -> list[ranking.RankingParams]:
    """The parameters leave-one-out tunes: alpha, cue_weight, prior_weight (75 points). The rest keeps
    RankingParams' values, set while exploring the ranking's form on all 5 conversations (keyword_power 2,
    the neighbour shares, reply_share, session_weight, semantic_share and floor, length range, date slack).

    wide: a check of tuning more: alpha, cue and prior near the default (27 points) times session_weight,
    a scale of the neighbour shares (2/3, 1, 1.5) and semantic_share (729 points)."""
    base = ranking.RankingParams()
    if wide:
        axes = [(0.4, 0.5, 0.6), (0.15, 0.2, 0.25), (0.05, 0.1, 0.15), (0.0, 0.1, 0.2), (2 / 3, 1.0, 1.5)]
        axes.append((0.25, 0.5, 0.75))
    else:
        axes = [(0.4, 0.5, 0.6), (0.05, 0.1, 0.15, 0.2, 0.25), (0.05, 0.1, 0.15, 0.2, 0.25)]
        axes += [(base.session_weight,), (1.0,), (base.semantic_share,)]
    out = []
    for a, cue, prior, sess, scale, sem in itertools.product(*axes):
        out.append(
            dataclasses.replace(
                base,
                alpha=a,
                cue_weight=cue,
                prior_weight=prior,
                session_weight=sess,
                after=tuple(round(w * scale, 4) for w in base.after),
                before=tuple(round(w * scale, 4) for w in base.before),
                semantic_share=sem,
            )
        )
    return out


def score_grid(
    convs: list[Conv], queries: list[Query], prep: dict[str, list[Prepared]], points: list[ranking.RankingParams]
) -> dict[str, list[np.ndarray]]:
    """Per-question metrics of every grid point in both modes. Each mode is scored once per distinct setting
    of the parameters it uses: with structure every candidate has a session and a sequence, so the semantic
    share never applies; without, the neighbour shares and session support never do."""
    per_mode: dict[str, list[np.ndarray]] = {"with": [], "without": []}
    runs: dict[tuple[str, tuple[Any, ...]], np.ndarray] = {}
    for p in points:
        keys = {
            "with": (p.alpha, p.cue_weight, p.prior_weight, p.session_weight, p.after, p.before),
            "without": (p.alpha, p.cue_weight, p.prior_weight, p.semantic_share),
        }
        for mode, key in keys.items():
            if (mode, key) not in runs:
                runs[mode, key] = run_rank(convs, queries, prep[mode], p)
            per_mode[mode].append(runs[mode, key])
    return per_mode


def leave_one_out(
    convs: list[Conv],
    conv_of: np.ndarray,
    main_q: np.ndarray,
    points: list[ranking.RankingParams],
    per_mode: dict[str, list[np.ndarray]],
) -> tuple[dict[str, np.ndarray], list[dict[str, Any]], int]:
    """Pooled held-out metrics per mode, the choice per fold, and the index of the best point on all 5.
    Objective: recall@10 + nDCG@10 on categories 1-4, with structure plus without (one parameter set for
    both modes, as the server uses one)."""

    def joint(i: int, sel: np.ndarray) -> float:
        return objective(per_mode["with"][i], sel) + objective(per_mode["without"][i], sel)

    shape = per_mode["with"][0].shape
    pooled = {"with": np.zeros(shape), "without": np.zeros(shape)}
    choices = []
    for ci, conv in enumerate(convs):
        tune = main_q & (conv_of != ci)
        best = max(range(len(points)), key=lambda i: joint(i, tune))
        held = conv_of == ci
        for mode in pooled:
            pooled[mode][held] = per_mode[mode][best][held]
        choices.append({"held_out": conv.sample_id, "params": describe(points[best])})
    best_all = max(range(len(points)), key=lambda i: joint(i, main_q))
    return pooled, choices, best_all


def describe(p: ranking.RankingParams) -> dict[str, Any]:
    return dataclasses.asdict(p)


def setup(path: Path, cache: Path, workdir: Path) -> tuple[list[Conv], list[Query]]:
    from spatial_memory.embeddings import EmbeddingRouter

    started = time.perf_counter()
    convs = load(path)
    embedder = EmbeddingRouter(cache_dir=cache.parent)
    texts = [t for c in convs for t in c.texts]
    vectors = embed_cached(embedder, texts, cache, "documents")
    at = 0
    for c in convs:
        c.vectors = vectors[at : at + len(c.texts)]
        at += len(c.texts)
    qvecs = embed_cached(embedder, [q.question for c in convs for q in c.questions], cache, "queries")
    build_tables(convs, workdir)
    queries = []
    for ci, conv in enumerate(convs):
        for q in conv.questions:
            rows, scores = fts(conv, q.question, K_MAX)
            cos = conv.vectors @ qvecs[len(queries)]
            queries.append(Query(ci, q.question, q.category, q.evidence, cos.astype(np.float64), rows, scores))
    elapsed = time.perf_counter() - started
    print(f"{len(texts)} turns, {len(queries)} questions, {len(convs)} conversations: {elapsed:.1f} s")
    return convs, queries


def latency(prepared: list[Prepared], params: ranking.RankingParams, texts: list[list[str]]) -> dict[str, Any]:
    """Per-call time of rank (and of the text features, CandidateArrays.from_texts' extra work)."""
    sizes = np.array([len(p.rows) for p in prepared])
    pick = [i for i in np.argsort(sizes) if 200 <= sizes[i] <= 300][:: max(1, int((sizes >= 200).sum() // 200))]
    rank_us, text_us = [], []
    for i in pick:
        p = prepared[i]
        best = min(_timed(lambda p=p: ranking.rank(p.features, p.arrays, params)) for _ in range(5))
        rank_us.append(best * 1e6)
        t = texts[i]
        text_us.append(min(_timed(lambda t=t: ranking.TextFeatures().of(t)) for _ in range(3)) * 1e6)
    return {
        "calls": len(pick),
        "candidates_median": int(np.median(sizes[pick])) if pick else 0,
        "rank_us_median": round(statistics.median(rank_us), 1) if pick else None,
        "rank_us_p95": round(float(np.percentile(rank_us, 95)), 1) if pick else None,
        "text_features_us_median": round(statistics.median(text_us), 1) if pick else None,
    }


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def table(rows: dict[str, dict[str, dict[str, float]]], keys: tuple[str, ...] = ("recall@10", "ndcg@10")) -> str:
    """Markdown: one row per method, one column per category group."""
    first = next(iter(rows.values()))
    groups = list(first)
    names = {"recall@5": "R@5", "recall@10": "R@10", "ndcg@10": "nDCG@10", "mrr@10": "MRR@10"}
    head = f"| method ({' / '.join(names[k] for k in keys)}) | " + " | ".join(
        f"{g} (n={first[g]['n']})" for g in groups
    )
    lines = [head + " |", "|" + "---|" * (len(groups) + 1)]
    for name, by in rows.items():
        cells = [" / ".join(f"{by[g][k]:.3f}" for k in keys) if g in by else "-" for g in groups]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--path", type=Path, default=locomo.DEFAULT_PATH)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--wide", action="store_true", help="also leave-one-out over a 6-parameter grid (slow)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    started = time.perf_counter()

    with tempfile.TemporaryDirectory(prefix="sm-ranking-") as tmp:
        convs, queries = setup(args.path, args.cache, Path(tmp))
    cats = np.array([q.category for q in queries])
    conv_of = np.array([q.conv for q in queries])
    main_q = np.isin(cats, MAIN)
    with_s, without_s = Pipeline(structure=True), Pipeline(structure=False)
    prep = {"with": prepare(convs, queries, with_s), "without": prepare(convs, queries, without_s)}
    sizes = {m: float(np.mean([len(p.rows) for p in prep[m]])) for m in prep}
    coverage = {
        m: float(
            np.mean(
                [
                    len({convs[q.conv].dia_ids[r] for r in p.rows} & set(q.relevant)) / len(q.relevant)
                    for q, p, keep in zip(queries, prep[m], main_q, strict=True)
                    if keep
                ]
            )
        )
        for m in prep
    }

    # baselines, through the same harness
    results: dict[str, Any] = {"baselines": {}, "with_structure": {}, "without_structure": {}}
    results["baselines"]["vector (recall today)"] = summarize(run_vector(convs, queries), cats)
    results["baselines"]["hybrid RRF alpha 0.5 (hybrid_recall today)"] = summarize(run_rrf(convs, queries), cats)
    fusion_only = ranking.RankingParams(
        keyword_power=1.0, after=(), before=(), cue_weight=0, prior_weight=0, session_weight=0
    )
    results["baselines"]["min-max fusion alpha 0.5 only (rank, no cues)"] = summarize(
        run_rank(convs, queries, prep["without"], fusion_only), cats
    )

    points = grid()
    per_mode = score_grid(convs, queries, prep, points)
    print(f"grid of {len(points)} points scored: {time.perf_counter() - started:.0f} s")
    loo, choices, best_all = leave_one_out(convs, conv_of, main_q, points, per_mode)
    # the default: RankingParams(), the grid's best point on TUNE_3; scored on HELD_2 it is out of sample
    default = ranking.RankingParams()
    default_runs = {m: run_rank(convs, queries, prep[m], default) for m in prep}
    ids = [c.sample_id for c in convs]
    tune3 = main_q & np.isin(conv_of, [ids.index(c) for c in TUNE_3])
    held2 = np.isin(conv_of, [ids.index(c) for c in HELD_2])
    best3 = max(range(len(points)), key=lambda i: sum(objective(per_mode[m][i], tune3) for m in ("with", "without")))
    for mode, key in (("with", "with_structure"), ("without", "without_structure")):
        results[key]["leave-one-conversation-out (out of sample)"] = summarize(loo[mode], cats)
        results[key][f"default RankingParams() on {', '.join(HELD_2)} (out of sample)"] = summarize(
            default_runs[mode], cats, held2
        )
        results[key]["default RankingParams() on all 5 (in sample)"] = summarize(default_runs[mode], cats)
    results["loo_choices"] = choices
    results["grid_best_on_all_5"] = describe(points[best_all])
    results["grid_best_on_tune_3"] = describe(points[best3])
    results["default_params"] = describe(default)
    results["default_is_grid_best_on_tune_3"] = describe(points[best3]) == describe(default)
    # the defaults' objective on TUNE_3 minus the grid best's there (0 when the default is that point)
    default_on_tune3 = sum(objective(default_runs[m], tune3) for m in ("with", "without"))
    results["default_gap_to_grid_best_on_tune_3"] = round(
        default_on_tune3 - sum(objective(per_mode[m][best3], tune3) for m in ("with", "without")), 5
    )
    if args.wide:
        wide = grid(wide=True)
        wide_loo, wide_choices, _ = leave_one_out(convs, conv_of, main_q, wide, score_grid(convs, queries, prep, wide))
        results["wide_grid_loo"] = {
            "points": len(wide),
            "with_structure": summarize(wide_loo["with"], cats),
            "without_structure": summarize(wide_loo["without"], cats),
            "choices": wide_choices,
        }
        print(f"wide grid of {len(wide)} points scored: {time.perf_counter() - started:.0f} s")

    # ablations of the default, in sample: one term off at a time
    ablations: dict[str, dict[str, Any]] = {}
    variants = {
        "default": (default, None),
        "no neighbours": (dataclasses.replace(default, after=(), before=()), None),
        "keyword_power 1 (plain bm25 / best)": (dataclasses.replace(default, keyword_power=1.0), None),
        "no cues": (dataclasses.replace(default, cue_weight=0.0), None),
        "no speaker cue": (default, lambda f: dataclasses.replace(f, speakers=frozenset())),
        "no time cue": (default, lambda f: dataclasses.replace(f, temporal=False)),
        "no date cue": (default, lambda f: dataclasses.replace(f, period=None)),
        "no prior": (dataclasses.replace(default, prior_weight=0.0), None),
        "no session support": (dataclasses.replace(default, session_weight=0.0), None),
        "no semantic neighbours": (dataclasses.replace(default, semantic_share=0.0), None),
        "symmetric neighbours 0.5/0.25": (dataclasses.replace(default, after=(0.5, 0.25), before=(0.5, 0.25)), None),
    }
    for name, (params, edit) in variants.items():
        row = {}
        for mode in prep:
            prepared = (
                prep[mode] if edit is None else [dataclasses.replace(p, features=edit(p.features)) for p in prep[mode]]
            )
            row[mode] = summarize(run_rank(convs, queries, prepared, params), cats)["1-4"]
        ablations[name] = row
    results["ablations_in_sample"] = ablations

    # pipeline sizes, default ranking, in sample
    sweeps: dict[str, dict[str, Any]] = {}
    for k_v, k_k, radius in ((50, 100, 2), (50, 100, 1), (50, 50, 2), (50, 50, 1), (20, 20, 2), (100, 100, 2)):
        row: dict[str, Any] = {}
        for structure in (True, False):
            if not structure and radius != 2:
                continue  # no neighbours without structure
            prepared = prepare(convs, queries, Pipeline(structure, k_v, k_k, radius))
            row["with" if structure else "without"] = summarize(run_rank(convs, queries, prepared, default), cats)[
                "1-4"
            ] | {"candidates": round(float(np.mean([len(p.rows) for p in prepared])), 1)}
        sweeps[f"K_v={k_v} K_k={k_k} radius={radius}"] = row
    results["pipeline_sweep_in_sample"] = sweeps
    results["candidates"] = {"mean_size": sizes, "evidence_coverage_1_4": coverage}
    texts = [[convs[q.conv].texts[r] for r in p.rows] for q, p in zip(queries, prep["with"], strict=True)]
    results["latency"] = latency(prep["with"], default, texts)
    results["meta"] = {
        "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()} {platform.python_version()} numpy {np.__version__}",
        "data": "LoCoMo dev (5 conversations: conv-26, conv-30, conv-41, conv-42, conv-43)",
        "grid_points": len(points),
        "tuned_by_loo": ["alpha", "cue_weight", "prior_weight"],
        "objective": "recall@10 + nDCG@10, categories 1-4, with structure + without structure",
        "pipeline": dataclasses.asdict(with_s),
        "seconds": round(time.perf_counter() - started, 1),
    }

    print("\n## Baselines (same harness)\n")
    print(table(results["baselines"]))
    for key, title in (("with_structure", "With conversation structure"), ("without_structure", "Without structure")):
        print(f"\n## {title}\n")
        print(table(results["baselines"] | results[key]))
        print()
        print(table(results[key], METRICS))
    print("\n## Leave-one-out choices\n")
    for c in choices:
        p = c["params"]
        print(
            f"- held out {c['held_out']}: alpha {p['alpha']}, cue {p['cue_weight']}, prior {p['prior_weight']}, "
            f"session {p['session_weight']}, after {p['after']}, before {p['before']}, "
            f"semantic {p['semantic_share']}"
        )
    same = results["default_is_grid_best_on_tune_3"]
    gap = results["default_gap_to_grid_best_on_tune_3"]
    print(f"\ngrid best on {', '.join(TUNE_3)}: {results['grid_best_on_tune_3']}; the default equals it: {same}")
    print(f"the default's objective there minus the grid best's (R@10 + nDCG@10, both modes): {gap}")
    print(f"grid best on all 5 (not used): {results['grid_best_on_all_5']}")
    if "wide_grid_loo" in results:
        w = results["wide_grid_loo"]
        print(f"\n## Leave-one-out over the wide grid ({w['points']} points, 6 parameters)\n")
        print(table({"with structure": w["with_structure"], "without structure": w["without_structure"]}))
    print("\n## Ablations of the default (in sample), categories 1-4, R@10 / nDCG@10\n")
    print("| variant | with structure | without |\n|---|---|---|")
    for name, row in ablations.items():
        w, wo = row["with"], row["without"]
        print(f"| {name} | {w['recall@10']:.3f} / {w['ndcg@10']:.3f} | {wo['recall@10']:.3f} / {wo['ndcg@10']:.3f} |")
    print("\n## Pipeline sizes, default ranking (in sample), categories 1-4: candidates, R@10 / nDCG@10\n")
    print("| pipeline | with structure | without |\n|---|---|---|")
    for name, row in sweeps.items():
        cells = [
            f"{row[m]['candidates']:.0f}: {row[m]['recall@10']:.3f} / {row[m]['ndcg@10']:.3f}" if m in row else "-"
            for m in ("with", "without")
        ]
        print(f"| {name} | {cells[0]} | {cells[1]} |")
    print(f"\ncandidates: {sizes}; evidence in the candidate set (1-4): {coverage}")
    print(f"latency: {results['latency']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nwrote {args.out} in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
