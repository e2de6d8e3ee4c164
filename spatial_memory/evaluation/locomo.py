"""LoCoMo (dev split) loading and retrieval metrics, following the evaluation data's README.

The data is not part of the project and is never copied into it: it is found in the directory
SPATIAL_MEMORY_EVAL_DIR names (default: shared/eval beside the checkout, i.e. ../shared/eval).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import numpy as np

from ..records import Conversation as Structure
from ..records import NewMemory

EVAL_DIR_VARIABLE = "SPATIAL_MEMORY_EVAL_DIR"
CHECKOUT = Path(__file__).resolve().parents[2]


def eval_dir() -> Path:
    """The directory holding the evaluation data: $SPATIAL_MEMORY_EVAL_DIR, else ../shared/eval."""
    configured = os.environ.get(EVAL_DIR_VARIABLE)
    return Path(configured).expanduser() if configured else CHECKOUT.parent / "shared" / "eval"


DEFAULT_PATH = eval_dir() / "locomo-dev.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_DIA_ID = re.compile(r"D(\d+):(\d+)")


@dataclass
class Turn:
    """One dialog turn as ../shared/eval/README.md stores it: its text, and its conversation structure."""

    dia_id: str
    text: str
    session_id: str = ""  # "<sample_id>/S<n>"
    sequence: int = 0  # index within its session, from 0
    speaker: str = ""
    occurred_at: str = ""  # the session's date_time as ISO 8601 (UTC)

    def memory(self, namespace: str, *, structure: bool) -> dict:
        """The turn as a remember_batch item (its dia_id in metadata), with or without its structure."""
        item = {"content": self.text, "namespace": namespace, "metadata": {"dia_id": self.dia_id}}
        if structure:
            item.update(
                session_id=self.session_id, sequence=self.sequence, speaker=self.speaker, occurred_at=self.occurred_at
            )
        return item


def store_turns(app, conversations: Sequence[Conversation]) -> dict[str, str]:
    """Every turn of these conversations stored in `app` (server/app.py's App) as one memory, with
    its conversation structure, in a namespace per conversation; returns memory id -> dia_id."""
    dia_of: dict[str, str] = {}
    for conv in conversations:
        items = [
            NewMemory(
                t.text,
                namespace=conv.sample_id,
                metadata={"dia_id": t.dia_id},
                conversation=Structure(
                    session_id=t.session_id,
                    sequence=t.sequence,
                    speaker=t.speaker,
                    occurred_at=datetime.fromisoformat(t.occurred_at.replace("Z", "+00:00")) if t.occurred_at else None,
                ),
            )
            for t in conv.turns
        ]
        records = app.memory.build_records(items)
        app.memory.store_records(records)
        dia_of.update({r.id: r.metadata["dia_id"] for r in records})
    return dia_of


def session_time(text: str) -> str:
    """LoCoMo's session date_time ("1:56 pm on 8 May, 2023") as ISO 8601 ("2023-05-08T13:56:00Z")."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").strftime("%Y-%m-%dT%H:%M:00Z")


@dataclass
class Question:
    question: str
    category: int
    evidence: list[str]


@dataclass
class Conversation:
    sample_id: str
    turns: list[Turn] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


def load(path: Path = DEFAULT_PATH) -> list[Conversation]:
    conversations = []
    for sample in json.loads(Path(path).read_text()):
        conv = Conversation(sample["sample_id"])
        c = sample["conversation"]
        sessions = sorted(
            (int(k.split("_")[1]) for k in c if re.fullmatch(r"session_\d+", k)),
        )
        for n in sessions:
            when = c.get(f"session_{n}_date_time", "")
            for sequence, turn in enumerate(c[f"session_{n}"]):
                text = f"({when}) {turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" [shares {turn['blip_caption']}]"
                conv.turns.append(
                    Turn(
                        turn["dia_id"],
                        text,
                        session_id=f"{conv.sample_id}/S{n}",
                        sequence=sequence,
                        speaker=turn["speaker"],
                        occurred_at=session_time(when) if when else "",
                    )
                )
        known = {t.dia_id for t in conv.turns}
        for qa in sample["qa"]:
            evidence = []
            for item in qa.get("evidence", []):
                for s, t in _DIA_ID.findall(item):
                    dia = f"D{s}:{t}"
                    if dia in known and dia not in evidence:
                        evidence.append(dia)
            if evidence:
                conv.questions.append(Question(qa["question"], int(qa["category"]), evidence))
        conversations.append(conv)
    return conversations


def recall_at(ranked: Sequence[str], relevant: Sequence[str], k: int) -> float:
    return len(set(ranked[:k]) & set(relevant)) / len(relevant)


def ndcg_at(ranked: Sequence[str], relevant: Sequence[str], k: int) -> float:
    rel = set(relevant)
    dcg = sum(1 / math.log2(i + 2) for i, r in enumerate(ranked[:k]) if r in rel)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(rel), k)))
    return dcg / ideal if ideal else 0.0


def mrr_at(ranked: Sequence[str], relevant: Sequence[str], k: int) -> float:
    rel = set(relevant)
    for i, r in enumerate(ranked[:k]):
        if r in rel:
            return 1 / (i + 1)
    return 0.0


def score(ranked: Sequence[str], relevant: Sequence[str]) -> dict[str, float]:
    return {
        "recall@5": recall_at(ranked, relevant, 5),
        "recall@10": recall_at(ranked, relevant, 10),
        "ndcg@10": ndcg_at(ranked, relevant, 10),
        "mrr@10": mrr_at(ranked, relevant, 10),
    }


KEYS = ("recall@10", "ndcg@10")
MAIN_CATEGORIES = (1, 2, 3, 4)


def summarize(scores: dict[int, list[dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Mean metrics per category name, plus 'categories 1-4' over the main categories."""
    out: dict[str, dict[str, float]] = {}
    main = [s for cat in MAIN_CATEGORIES for s in scores.get(cat, [])]
    groups = {"categories 1-4": main, **{CATEGORIES[c]: scores[c] for c in sorted(scores)}}
    for name, group in groups.items():
        if group:
            out[name] = {k: float(np.mean([s[k] for s in group])) for k in KEYS} | {"queries": len(group)}
    return out
