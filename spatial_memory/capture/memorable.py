"""How memorable a captured statement is: a logistic regression over the MiniLM vector the store
computes anyway and a few cues of the text (who said it, whether it asks, narrates, concludes),
trained on hand-labelled turns of real sessions (benchmarks/train_memorable.py rebuilds
memorable_weights.json; docs/BENCHMARKS.md has its leave-one-session-out precision and recall).

It runs where the vector is known - when captures are stored (capture/store.py) - and admits a
turn the rules left (a candidate) when its probability of being worth keeping is ADMIT or more;
with another embedding model than the bundled one, no candidate is admitted. (VETO: the
training script also reports the rules with a veto below it; the store does not veto.) Pure
numpy at run time (scikit-learn only trains it).
"""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path

import numpy as np

from . import turns

WEIGHTS = Path(__file__).with_name("memorable_weights.json")
VETO = 0.2  # below this probability a kept statement is dropped
ADMIT = 0.8  # at or above it a turn the rules left is kept
CUES = ("user", "answer", "asks", "narrates", "concludes", "states", "length", "code")


def cues(text: str, speaker: str, answer: bool) -> np.ndarray:
    """The text cues, in CUES order, each within [0, 1]."""
    said = turns.sentences_of(text) or [text]
    n = len(said)
    return np.array(
        [
            speaker == "user",
            answer,
            sum(turns.is_question(s) for s in said) / n,
            sum(turns.is_narration(s) for s in said) / n,
            any(turns.concludes(s) for s in said),
            any(turns.states_something(s) for s in said),
            min(1.0, math.log1p(len(text.split())) / 6),
            "`" in text or "\n    " in text,
        ],
        dtype=np.float64,
    )


def features(vector: np.ndarray, text: str, speaker: str, answer: bool) -> np.ndarray:
    return np.concatenate([np.asarray(vector, dtype=np.float64).reshape(-1), cues(text, speaker, answer)])


@cache
def _model() -> tuple[np.ndarray, float, np.ndarray, np.ndarray]:
    data = json.loads(WEIGHTS.read_text())
    return (
        np.array(data["coef"], dtype=np.float64),
        float(data["intercept"]),
        np.array(data["mean"], dtype=np.float64),
        np.where(np.array(data["scale"], dtype=np.float64) > 0, np.array(data["scale"], dtype=np.float64), 1.0),
    )


def probability(vector: np.ndarray, text: str, speaker: str, answer: bool) -> float | None:
    """P(worth keeping) of a statement, from its embedding vector (the bundled model's) and its
    text; None when the vector is not of the model the weights were trained on (its size differs)."""
    coef, intercept, mean, scale = _model()
    x = features(vector, text, speaker, answer)
    if x.shape != coef.shape:
        return None
    x = (x - mean) / scale
    return float(1.0 / (1.0 + math.exp(-(float(x @ coef) + intercept))))


def available() -> bool:
    return WEIGHTS.exists()
