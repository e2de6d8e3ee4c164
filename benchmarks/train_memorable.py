"""Train and score the memorability classifier (spatial_memory/capture/memorable.py) on the
hand-labelled text turns of the capture development sessions (benchmarks/data/capture_turn_labels.json;
the transcripts are read from ../shared/eval/capture, never copied).

    python -m benchmarks.train_memorable            # leave-one-session-out figures
    python -m benchmarks.train_memorable --write    # also refit on every session and write the weights

Reports precision and recall of "kept" against the labels, out of sample (each session scored by a
model trained on the other three): the turn-selection rules alone (capture/turns.py), the classifier
alone at 0.5, and the rules with the classifier's veto (memorable.VETO), as the store applies them.
Needs scikit-learn (a dev dependency); the package applies the weights with numpy alone.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np

from spatial_memory.capture import memorable, turns
from spatial_memory.capture.transcript import text_turns

ROOT = Path(__file__).resolve().parents[1]
LABELS = ROOT / "benchmarks" / "data" / "capture_turn_labels.json"
EVAL = Path(os.environ.get("SPATIAL_MEMORY_EVAL_DIR") or ROOT.parent / "shared" / "eval") / "capture" / "transcripts"


def load() -> list[dict]:
    """The labelled turns with their text (as capture keeps it) and whether each ends its turn."""
    labels = {(x["session"], x["ref"]): x["keep"] for x in json.loads(LABELS.read_text())["labels"]}
    rows = []
    for path in sorted(EVAL.glob("*/*.jsonl")):
        entries = [json.loads(line) for line in path.open("rb") if line.strip()]
        said = [m for _, m in text_turns(entries) if m is not None]
        for i, m in enumerate(said):
            key = (path.stem[:8], m.ref)
            if key not in labels:
                continue
            answer = m.speaker == "assistant" and (i + 1 == len(said) or said[i + 1].speaker == "user")
            kept = turns.user_turn(m.text) if m.speaker == "user" else turns.assistant_turn(m.text, final=answer)
            own = turns.clean(m.text, m.speaker)
            text = (kept or turns.chunks(own) or [own])[0]
            rows.append(
                {
                    "session": key[0],
                    "speaker": m.speaker,
                    "answer": answer,
                    "text": text,
                    "rules": bool(kept),
                    "keep": labels[key],
                }
            )
    return rows


def scores(predicted: np.ndarray, truth: np.ndarray) -> dict[str, float]:
    tp = int((predicted & truth).sum())
    fp = int((predicted & ~truth).sum())
    fn = int((~predicted & truth).sum())
    return {
        "kept": int(predicted.sum()),
        "precision": round(tp / (tp + fp), 3) if tp + fp else 0.0,
        "recall": round(tp / (tp + fn), 3) if tp + fn else 0.0,
    }


def main() -> None:
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    from spatial_memory.embeddings import EmbeddingRouter

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="refit on all sessions and write the weights")
    parser.add_argument("--c", type=float, default=0.05, help="inverse regularisation strength")
    args = parser.parse_args()
    rows = load()
    vectors = EmbeddingRouter().embed_documents([r["text"] for r in rows])
    x = np.stack([memorable.features(v, r["text"], r["speaker"], r["answer"]) for v, r in zip(vectors, rows)])
    y = np.array([r["keep"] for r in rows])
    rules = np.array([r["rules"] for r in rows])
    sessions = np.array([r["session"] for r in rows])
    probability = np.zeros(len(rows))
    for held in sorted(set(sessions)):
        train = sessions != held
        scaler = StandardScaler().fit(x[train])
        model = LogisticRegression(C=args.c, max_iter=2000, class_weight="balanced")
        model.fit(scaler.transform(x[train]), y[train])
        probability[~train] = model.predict_proba(scaler.transform(x[~train]))[:, 1]
    result = {
        "turns": len(rows),
        "labelled_keep": int(y.sum()),
        "rules": scores(rules, y),
        "classifier_0.5": scores(probability >= 0.5, y),
        f"rules_with_veto_{memorable.VETO}": scores(rules & (probability >= memorable.VETO), y),
        **{f"rules_or_classifier_{t}": scores(rules | (probability >= t), y) for t in (0.6, 0.7, 0.8, 0.9)},
        f"rules_with_veto_or_classifier_{memorable.ADMIT}": scores(
            (rules & (probability >= memorable.VETO)) | (probability >= memorable.ADMIT), y
        ),
        "per_session": {
            s: {
                "rules": scores(rules[sessions == s], y[sessions == s]),
                "rules_with_veto": scores(
                    rules[sessions == s] & (probability[sessions == s] >= memorable.VETO), y[sessions == s]
                ),
            }
            for s in sorted(set(sessions))
        },
    }
    print(json.dumps(result, indent=1))
    if args.write:
        scaler = StandardScaler().fit(x)
        model = LogisticRegression(C=args.c, max_iter=2000, class_weight="balanced").fit(scaler.transform(x), y)
        scale = np.where(scaler.scale_ > 0, scaler.scale_, 1.0)
        weights = {
            "about": "benchmarks/train_memorable.py: logistic regression over MiniLM + memorable.CUES",
            "cues": list(memorable.CUES),
            "coef": [round(float(c), 4) for c in model.coef_[0]],
            "intercept": round(float(model.intercept_[0]), 4),
            "mean": [round(float(m), 4) for m in scaler.mean_],
            "scale": [float(f"{s:.4g}") for s in scale],
        }
        memorable.WEIGHTS.write_text(json.dumps(weights, separators=(",", ":")) + "\n")
        print(f"wrote {memorable.WEIGHTS} ({memorable.WEIGHTS.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
