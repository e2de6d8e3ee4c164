"""Near-copy decisions on each path of the bundled model: do they match fp32's?

    python -m benchmarks.near_copies                      # fp32 against int8-row
    python -m benchmarks.near_copies --paths fp32,int8-row,int8

A corpus of pairs written for this check (not LoCoMo): developer notes and conversation lines,
each beside light rewordings of itself (near-copies: a word changed, a clause added, case and
punctuation) and near-misses (another number, another tool or person, a negation, the same topic
said otherwise). Per path:

- every pair's cosine, the texts embedded in one batch as ingest does; the decisions at each
  threshold a tool uses by default (remember's and extract's 0.9, consolidate's and distill's
  0.85, the contradiction check's 0.75, import's 0.95, connections' 0.8, how_to's 0.2), counted
  against fp32's: a flip is a pair on one side for fp32 and the other for the path;
- through a spawned server on that path: each pair in its own namespace by `remember_batch`,
  `consolidate` (dry run, default threshold), then `extract` of the second text (default
  threshold): whether a group is found, whether the text is deduplicated; compared with fp32's.

Results: benchmarks/results/near_copies.json.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from .common import print_table, write_json
from .reference import call, host_load, ours_command, spawn

THRESHOLDS = {
    "remember / extract 0.9": 0.9,
    "consolidate / distill 0.85": 0.85,
    "contradiction 0.75": 0.75,
    "import 0.95": 0.95,
    "connections 0.8": 0.8,
    "how_to 0.2": 0.2,
}

BASE = [
    "We decided to use PostgreSQL for the main database.",
    "The fix for the flaky test was to pin the random seed.",
    "Carol moved the nightly job to 2am because backups overlapped.",
    "Deploys go out on Tuesdays and Thursdays after the standup.",
    "The API rate limit is 100 requests per minute per token.",
    "Use ruff for linting and formatting; black is no longer used.",
    "The staging server runs on port 8080 behind nginx.",
    "Alice prefers short pull requests with one change each.",
    "The build broke because the lockfile was out of date.",
    "We store session tokens in Redis with a 30 minute expiry.",
    "Bob is on call this week and Dana takes over on Monday.",
    "The frontend uses React 18 with Vite as the bundler.",
    "Retries use exponential backoff starting at 200 milliseconds.",
    "The customer asked for CSV export of the monthly report.",
    "Logs older than 14 days are deleted by the cleanup task.",
    "I moved to Berlin last spring and started learning German.",
    "My sister's wedding is on the 12th of June in Lisbon.",
    "Biscuit the cat hides under the bed during thunderstorms.",
    "I run 5 kilometres every morning before work.",
    "We adopted a rescue dog named Pepper in March.",
    "The migration script must run before the new release starts.",
    "Feature flags live in LaunchDarkly, not in the config file.",
    "The search index is rebuilt every night at midnight UTC.",
    "Memory usage spiked to 2 GB when the cache was disabled.",
    "Tests run in parallel with pytest-xdist on four workers.",
    "The release branch is cut every second Friday.",
    "Error reports go to Sentry and page the on-call engineer.",
    "The mobile app caches images for seven days.",
    "We pay for the database by storage, not by queries.",
    "The design review for the payments page is on Wednesday.",
    "Never commit secrets; they belong in the vault.",
    "The timeout for external calls is 10 seconds.",
    "Grace wrote the original billing service in Go.",
    "The docs site is built with MkDocs and deployed to GitHub Pages.",
    "We switched from Jenkins to GitHub Actions last year.",
    "The upload limit for attachments is 25 MB.",
    "I'm allergic to peanuts, so I skip the office snacks.",
    "Our team meets for a retro every other Thursday afternoon.",
    "The queue workers scale between 2 and 10 instances.",
    "Python 3.11 is the minimum version we support.",
]

NEAR_MISS = {
    "PostgreSQL": "MySQL",
    "random seed": "timezone",
    "2am": "4am",
    "Tuesdays": "Mondays",
    "100 requests": "500 requests",
    "ruff": "pylint",
    "8080": "9090",
    "Alice": "Erin",
    "lockfile": "compiler",
    "30 minute": "5 minute",
    "Bob": "Frank",
    "React 18": "Vue 3",
    "200 milliseconds": "2 seconds",
    "CSV": "PDF",
    "14 days": "90 days",
    "Berlin": "Madrid",
    "12th of June": "3rd of May",
    "cat": "dog",
    "5 kilometres": "10 kilometres",
    "March": "October",
    "before": "after",
    "LaunchDarkly": "Unleash",
    "midnight": "noon",
    "2 GB": "500 MB",
    "four workers": "eight workers",
    "Friday": "Monday",
    "Sentry": "Datadog",
    "seven days": "one day",
    "storage": "compute",
    "Wednesday": "Friday",
    "vault": "repository",
    "10 seconds": "60 seconds",
    "Go": "Rust",
    "MkDocs": "Sphinx",
    "Jenkins": "CircleCI",
    "25 MB": "100 MB",
    "peanuts": "shellfish",
    "retro": "planning session",
    "2 and 10": "1 and 3",
    "3.11": "3.9",
}


def pairs() -> list[tuple[str, str, str]]:
    """(text, other, kind) for every base note: near-copies and near-misses."""
    out = []
    for text in BASE:
        stem = text.rstrip(".")
        out.append((text, stem.lower(), "near-copy: case and punctuation"))
        out.append((text, f"Note: {stem}.", "near-copy: a prefix"))
        out.append((text, f"{stem}, as agreed in the last meeting.", "near-copy: a clause added"))
        out.append((text, f"Reminder for the team: {stem[0].lower()}{stem[1:]}!", "near-copy: reworded framing"))
        old = next(k for k in NEAR_MISS if k in text)
        out.append((text, text.replace(old, NEAR_MISS[old]), "near-miss: another number, name or tool"))
        out.append((text, f"It is not true that {stem[0].lower()}{stem[1:]}.", "near-miss: a negation"))
    for i, text in enumerate(BASE):  # the same kind of note about something else
        out.append((text, BASE[(i + 1) % len(BASE)], "unrelated neighbour"))
    return out


def decisions(cosines: np.ndarray) -> dict[str, np.ndarray]:
    return {name: cosines >= t for name, t in THRESHOLDS.items()}


def vector_decisions(paths: tuple[str, ...], models: Path) -> tuple[list[dict[str, Any]], dict[str, np.ndarray]]:
    from spatial_memory.embeddings import EmbeddingRouter

    corpus = pairs()
    texts = list(dict.fromkeys(t for a, b, _ in corpus for t in (a, b)))
    index = {t: i for i, t in enumerate(texts)}
    cosines = {}
    for path in paths:
        vectors = EmbeddingRouter(precision=path, cache_dir=models).embed_documents(texts)
        cosines[path] = np.array([vectors[index[a]] @ vectors[index[b]] for a, b, _ in corpus])
    base = decisions(cosines["fp32"])
    rows = []
    for path in paths[1:]:
        mine = decisions(cosines[path])
        shift = np.abs(cosines[path] - cosines["fp32"])
        row: dict[str, Any] = {"path": path, "pairs": len(corpus), "max |cosine change|": round(float(shift.max()), 5)}
        for name, t in THRESHOLDS.items():
            flips = int((mine[name] != base[name]).sum())
            margin = float(np.abs(cosines["fp32"] - t).min())
            row[f"flips at {name} (closest fp32 pair)"] = f"{flips} ({margin:.4f} away)"
        rows.append(row)
    return rows, cosines


async def through_server(path: str, root: Path) -> list[tuple[bool, int]]:
    """Per pair: consolidate found a group, and extract's deduplicated count."""
    store = root / f"store-{path}"
    store.mkdir(parents=True)
    argv, env = ours_command(store, root / "user-cache")
    env["SPATIAL_MEMORY_EMBEDDING_PRECISION"] = path
    corpus = pairs()
    out = []
    async with spawn(argv, env, root) as (client, _pid):
        batch = [{"content": t, "namespace": f"pair-{i}"} for i, (a, b, _) in enumerate(corpus) for t in (a, b)]
        for start in range(0, len(batch), 100):
            await call(client, "remember_batch", {"memories": batch[start : start + 100]})
        for i, (_a, b, _kind) in enumerate(corpus):
            merged = await call(client, "consolidate", {"namespace": f"pair-{i}", "dry_run": True})
            extracted = await call(client, "extract", {"text": b, "namespace": f"pair-{i}"})
            out.append((merged["groups_found"] > 0, extracted["deduplicated_count"]))
    return out


async def main_async(paths: tuple[str, ...]) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="sm-near-"))
    rows, cosines = vector_decisions(paths, root / "models")
    print_table(f"Decisions at the default thresholds against fp32 (pairs; {host_load()})", rows)
    served = {path: await through_server(path, root) for path in paths}
    corpus = pairs()
    server_rows = []
    for path in paths[1:]:
        flips = [
            {"pair": i, "kind": corpus[i][2], "fp32": served["fp32"][i], path: served[path][i]}
            for i in range(len(corpus))
            if served["fp32"][i] != served[path][i]
        ]
        server_rows.append(
            {
                "path": path,
                "pairs": len(corpus),
                "consolidate groups (fp32 / path)": f"{sum(g for g, _ in served['fp32'])} / "
                f"{sum(g for g, _ in served[path])}",
                "extract deduplicated (fp32 / path)": f"{sum(d for _, d in served['fp32'])} / "
                f"{sum(d for _, d in served[path])}",
                "pairs decided differently": len(flips),
                "which": "; ".join(f"{f['pair']} {f['kind']}" for f in flips) or "none",
            }
        )
    print_table("consolidate and extract through each path's server, default thresholds", server_rows)
    kinds = sorted({k for _, _, k in corpus})
    ranges = [
        {
            "kind": kind,
            **{
                f"{path} cosine min-max": (
                    f"{min(c for c, (_, _, k) in zip(cosines[path], corpus, strict=True) if k == kind):.3f}-"
                    f"{max(c for c, (_, _, k) in zip(cosines[path], corpus, strict=True) if k == kind):.3f}"
                )
                for path in paths
            },
        }
        for kind in kinds
    ]
    print_table("Cosine ranges of the corpus's pairs", ranges)
    return {"vectors": rows, "server": server_rows, "ranges": ranges, "host": host_load()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--paths", default="fp32,int8-row", help="comma-separated; fp32 first (the baseline)")
    paths = tuple(parser.parse_args().paths.split(","))
    if paths[0] != "fp32":
        parser.error("fp32 comes first: every figure is against it")
    write_json("near_copies", asyncio.run(main_async(paths)))


if __name__ == "__main__":
    main()
