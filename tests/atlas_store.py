"""A store for the atlas's tests and benchmark: memories on a handful of topics, some pinned, some
captured by a hook (with sessions), one superseded, one edited twice.

`seed(path, n, embedder)` writes through the services the tools use (one remember_batch per
thousand) and returns the ids by role."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

TOPICS = {
    "cooking": (
        ["The sourdough", "Grandma's lasagna", "The curry base", "Our pancake batter", "The pizza dough"],
        [
            "needs {n} grams of salt",
            "rests overnight in the fridge",
            "is best with fresh basil",
            "bakes at {n}0 degrees for twenty minutes",
            "uses butter instead of oil",
        ],
    ),
    "travel": (
        [
            "The Lisbon trip",
            "Our flight to Tokyo",
            "The hiking week in Norway",
            "The train to Vienna",
            "The Rome hotel",
        ],
        [
            "is booked for March {n}",
            "needs a visa checked by Friday",
            "leaves from gate {n}",
            "costs {n}00 euros in total",
            "includes a day at the museum",
        ],
    ),
    "code": (
        ["The deploy script", "The database migration", "Our CI pipeline", "The API gateway", "The login service"],
        [
            "fails when the cache is cold",
            "runs on Python 3.{n}",
            "needs a retry around the S3 upload",
            "was rewritten to use async IO",
            "times out after {n} seconds",
        ],
    ),
    "health": (
        ["My running plan", "The physiotherapy", "Sleep tracking", "The vitamin D dose", "Morning stretches"],
        [
            "is {n} kilometres three times a week",
            "focuses on the left knee",
            "shows {n} hours on average",
            "was raised after the blood test",
            "take ten minutes before work",
        ],
    ),
    "garden": (
        ["The tomato seedlings", "The apple tree", "Our compost heap", "The herb bed", "The lawn"],
        [
            "need watering every {n} days",
            "was pruned in February",
            "is turned every month",
            "gets afternoon sun only",
            "is mowed on Saturdays",
        ],
    ),
}


def sentences(n: int, seed: int = 7) -> list[tuple[str, str]]:
    """n distinct (topic, sentence) pairs."""
    rng = random.Random(seed)
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    topics = list(TOPICS)
    while len(out) < n:
        topic = topics[len(out) % len(topics)]
        subjects, predicates = TOPICS[topic]
        text = f"{rng.choice(subjects)} {rng.choice(predicates).format(n=rng.randint(2, 99))}."
        if text in seen:
            text = f"{text[:-1]} (note {len(out)})."
        seen.add(text)
        out.append((topic, text))
    return out


def seed(path: Path, n: int, embedder: Any = None) -> dict[str, Any]:
    from spatial_memory.app import App
    from spatial_memory.config import Settings
    from spatial_memory.records import Conversation, NewMemory, Provenance
    from spatial_memory.runtime.imports import import_heavy_modules
    from spatial_memory.runtime.resources import Resources

    import_heavy_modules()
    settings = Settings(path=path, preload=False)
    resources = Resources(settings, embedder, None)
    app = App(resources)
    try:
        items = []
        for k, (topic, text) in enumerate(sentences(n)):
            captured = k % 7 == 3
            items.append(
                NewMemory(
                    content=text,
                    namespace="work" if topic == "code" else "home",
                    tags=[topic] + (["urgent"] if k % 11 == 0 else []),
                    importance=round(0.2 + 0.75 * ((k * 37) % 100) / 100, 2),
                    metadata={"captured_by": "hook"} if captured else {},
                    conversation=Conversation(session_id=f"session-{k % 3}") if captured else Conversation(),
                    memory_type="conversation" if captured else None,
                    pinned=k % 23 == 5,
                )
            )
        ids: list[str] = []
        for start in range(0, len(items), 1000):
            ids += app.memory.remember_batch(items[start : start + 1000], provenance=Provenance(via="remember")).ids
        edited = ids[1]
        original = app.revisions.get_memories([edited]).memories[0].content
        app.revisions.update_memory(edited, content=original.replace(".", " and is written down."))
        app.revisions.update_memory(edited, tags=["cooking", "edited"])
        replaced = ids[2]
        successor = app.memory.remember(
            NewMemory(content="The travel plans changed: the Lisbon trip moved to May.", namespace="home"),
            supersedes=[replaced],
        ).id
        counts: dict[str, dict[str, int]] = {"namespaces": {}, "types": {}}
        for m in resources.store().scan():
            counts["namespaces"][m.namespace] = counts["namespaces"].get(m.namespace, 0) + 1
            counts["types"][m.memory_type] = counts["types"].get(m.memory_type, 0) + 1
        return {
            "ids": ids,
            "edited": edited,
            "original": original,
            "superseded": replaced,
            "successor": successor,
            **counts,
        }
    finally:
        resources.close(10.0)
