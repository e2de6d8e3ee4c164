"""A soak's parts: a realistic mix of tool calls that keeps the store at a steady size, and the
process readings (resident memory, open files) sampled along it, so growth can only come from the
server itself (benchmarks/soak.py runs 10,000 calls; tests/test_reliability_leaks.py a bounded form)."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any


def short_texts(n: int, seed: int = 0) -> list[str]:
    """Varied short memory-like sentences (deterministic; no external data)."""
    rng = random.Random(seed)
    subjects = [
        "The deploy script",
        "Our API",
        "The billing service",
        "Alice",
        "The nightly job",
        "The cache layer",
        "The mobile app",
        "Bob",
        "The search index",
        "The staging cluster",
        "The design doc",
        "Carol",
    ]
    verbs = [
        "now uses",
        "depends on",
        "was migrated to",
        "should avoid",
        "times out with",
        "is documented in",
        "was rewritten for",
        "prefers",
        "logs errors to",
        "is blocked by",
    ]
    objects = [
        "PostgreSQL 16",
        "a Redis cluster",
        "the new auth flow",
        "gRPC streaming",
        "S3 lifecycle rules",
        "feature flags",
        "the on-call rotation",
        "Kubernetes 1.31",
        "a retry budget",
        "structured logging",
        "the quarterly roadmap",
        "vector search",
        "TypeScript strict mode",
        "the EU data residency rule",
    ]
    tails = [
        "since Monday.",
        "per the last review.",
        "until further notice.",
        "after the incident.",
        "in prod.",
        "for the beta.",
        "as agreed with the team.",
        "to cut latency.",
        "",
    ]
    return [
        f"{rng.choice(subjects)} {rng.choice(verbs)} {rng.choice(objects)} {rng.choice(tails)} (note {i})".strip()
        for i in range(n)
    ]


def rss_mb(pid: int) -> dict[str, float]:
    """Current and peak resident memory of a process (Linux /proc)."""
    values = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(("VmRSS:", "VmHWM:")):
                key, value = line.split(":")
                values["rss_mb" if key == "VmRSS" else "peak_rss_mb"] = round(int(value.split()[0]) / 1024, 1)
    except OSError:
        pass
    return values


def open_fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


class MixedWorkload:
    """The next tool call of a realistic mix (writes, reads, searches, spatial tools, deletes),
    keeping the store at a steady size so growth can only come from the server itself."""

    def __init__(self, seed: int = 0, tools: set[str] | None = None, target_size: int = 400) -> None:
        self.rng = random.Random(seed)
        self.tools = tools or set()
        self.target = target_size
        self.ids: list[str] = []
        self.texts = short_texts(5000, seed)
        self.n = 0

    def _text(self) -> str:
        self.n += 1
        return f"{self.rng.choice(self.texts)} #{self.n}"

    def next_call(self) -> tuple[str, dict[str, Any]]:
        rng, have = self.rng, len(self.ids)
        grow = have < self.target
        choices: list[tuple[str, float]] = [
            ("remember", 20 if grow else 8),
            ("remember_batch", 4 if grow else 1),
            ("forget", 2 if grow else 10),
            ("recall", 22),
            ("hybrid_recall", 8),
            ("nearby", 8),
            ("stats", 4),
            ("namespaces", 4),
            ("wander", 3),
            ("journey", 2),
            ("forget_batch", 0 if grow else 2),
            ("reinforce", 2),
            ("bad_input", 3),
        ]
        names, weights = zip(*[(n, w) for n, w in choices if n in self.tools or n == "bad_input" or not self.tools])
        name = rng.choices(names, weights)[0]
        if name in ("nearby", "forget", "journey", "wander", "forget_batch", "reinforce") and have < 3:
            name = "remember"
        namespace = rng.choice(["work", "home", "ideas"])
        if name == "remember":
            return name, {"content": self._text(), "namespace": namespace, "tags": [namespace]}
        if name == "remember_batch":
            return name, {"memories": [{"content": self._text(), "namespace": namespace} for _ in range(10)]}
        if name in ("recall", "hybrid_recall"):
            limit, where = rng.choice([1, 5, 10]), rng.choice([None, namespace])
            return name, {"query": self._text(), "limit": limit, "namespace": where}
        if name == "nearby":
            return name, {"memory_id": rng.choice(self.ids), "limit": 5}
        if name == "forget":
            return name, {"memory_id": self.ids.pop(rng.randrange(have))}
        if name == "forget_batch":
            return name, {"memory_ids": [self.ids.pop(rng.randrange(len(self.ids))) for _ in range(3)]}
        if name == "wander":
            return name, {"start_id": rng.choice(self.ids), "steps": 3, "random_seed": rng.randrange(1000)}
        if name == "journey":
            a, b = rng.sample(self.ids, 2)
            return name, {"start_id": a, "end_id": b, "steps": 4}
        if name == "reinforce":
            return name, {"memory_ids": rng.sample(self.ids, 2)}
        if name == "bad_input":  # errors must not leak either
            return rng.choice(
                [
                    ("remember", {"content": ""}),
                    ("recall", {"query": "x", "limit": 0}),
                    ("nearby", {"memory_id": "not-a-uuid"}),
                    ("recall", {"query": "x", "filters": {"nope": 1}}),
                ]
            )
        return name, {}

    def observe(self, name: str, data: dict[str, Any]) -> None:
        if data.get("isError"):
            return
        if name == "remember" and "id" in data:
            self.ids.append(data["id"])
        elif name == "remember_batch":
            self.ids.extend(data.get("ids", []))


def summarize(samples: list[dict[str, Any]], warm_up_calls: int) -> dict[str, Any]:
    after = [s for s in samples if s["calls"] >= warm_up_calls] or samples
    first, last = after[0], samples[-1]
    return {
        "warm_up_calls": warm_up_calls,
        "rss_after_warm_up_mb": first["rss_mb"],
        "rss_end_mb": last["rss_mb"],
        "rss_growth_after_warm_up_mb": round(last["rss_mb"] - first["rss_mb"], 1),
        "rss_max_after_warm_up_mb": max(s["rss_mb"] for s in after),
        "fds_after_warm_up": first["open_fds"],
        "fds_end": last["open_fds"],
        "fds_max_after_warm_up": max(s["open_fds"] for s in after),
    }
