"""LoCoMo (dev split) loading and retrieval metrics, following ../shared/eval/README.md.

The data stays in shared/eval: pass its path; nothing is copied into the project.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "shared" / "eval" / "locomo-dev.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_DIA_ID = re.compile(r"D(\d+):(\d+)")


@dataclass
class Turn:
    dia_id: str
    text: str


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
            for turn in c[f"session_{n}"]:
                text = f"({when}) {turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" [shares {turn['blip_caption']}]"
                conv.turns.append(Turn(turn["dia_id"], text))
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
