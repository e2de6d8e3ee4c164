"""Tests for spatial_memory.text.extraction (pattern-based statement extraction).

Run with ``python -m pytest tests/test_extraction.py -q -s`` to see the
precision/recall figures of the evaluation on tests/fixtures/extraction_cases.json.
"""

from __future__ import annotations

import json
import re
import time
from collections import defaultdict
from pathlib import Path

import pytest

from spatial_memory.text.extraction import (
    PATTERN_TYPES,
    Statement,
    clean_span,
    extract_candidates,
    split_sentences,
)

FIXTURES = Path(__file__).parent / "fixtures" / "extraction_cases.json"
CASES = json.loads(FIXTURES.read_text(encoding="utf-8"))

WORD = re.compile(r"\w+")


def pieces(text: str) -> list:
    return [text[a:b] for a, b in split_sentences(text)]


# ---------------------------------------------------------------------------
# split_sentences: hard cases
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        # abbreviations
        (
            "We met Dr. Jones and Mr. Smith vs. the U.S. team, e.g. Alice, i.e. the lead. The end.",
            ["We met Dr. Jones and Mr. Smith vs. the U.S. team, e.g. Alice, i.e. the lead.", "The end."],
        ),
        ("Cost is approx. 5 USD. Fine by me.", ["Cost is approx. 5 USD.", "Fine by me."]),
        ("Bring cables, adapters, etc. Then set up.", ["Bring cables, adapters, etc.", "Then set up."]),
        ("The contract ends Dec. 2025 for sure. Next.", ["The contract ends Dec. 2025 for sure.", "Next."]),
        ("Read the book by M. Kleppmann first. Then code.", ["Read the book by M. Kleppmann first.", "Then code."]),
        ("See No. 5 and fig. 2 here. Ok then.", ["See No. 5 and fig. 2 here.", "Ok then."]),
        ("I said no. Then I left.", ["I said no.", "Then I left."]),
        # decimals and versions
        ("The value is 3.5 today. Next one.", ["The value is 3.5 today.", "Next one."]),
        (
            "Use v2.0.1 now. It works with Python 3.11. Done.",
            ["Use v2.0.1 now.", "It works with Python 3.11.", "Done."],
        ),
        # URLs and file paths
        (
            "Go to https://x.y/z?a=1. Then click. Also see http://a.b/c.html!",
            ["Go to https://x.y/z?a=1.", "Then click.", "Also see http://a.b/c.html!"],
        ),
        ("Edit src/app.py and docs/config.md. Then commit.", ["Edit src/app.py and docs/config.md.", "Then commit."]),
        # inline code: never split inside backticks
        ("Edit `foo. Bar` now. Next one.", ["Edit `foo. Bar` now.", "Next one."]),
        ("Run `pip install -e .` from the root. Done.", ["Run `pip install -e .` from the root.", "Done."]),
        # ellipses, question and exclamation marks
        ("Grocery run later... milk, eggs. Ugh.", ["Grocery run later... milk, eggs.", "Ugh."]),
        ("Use SELECT ... FOR UPDATE here. Next.", ["Use SELECT ... FOR UPDATE here.", "Next."]),
        ("Wait... What? Nothing! Yes.", ["Wait...", "What?", "Nothing!", "Yes."]),
        ('He said "stop." Then he left.', ['He said "stop."', "Then he left."]),
    ],
)
def test_split_sentences_inline_cases(text, expected):
    assert pieces(text) == expected


def test_split_fenced_code_is_skipped():
    text = (
        "Intro line.\n\n```python\n# we decided to keep this. Error: nope.\nx = 1\n```\n\n"
        "After fence. Second.\n~~~\nmore code. Yes.\n~~~\nTail."
    )
    assert pieces(text) == ["Intro line.", "After fence.", "Second.", "Tail."]
    # an unclosed fence runs to the end of the text
    assert pieces("Before.\n```\nunclosed code. Still code.\nmore") == ["Before."]


def test_split_lists_each_item_is_a_unit():
    text = "Steps:\n- first item\n* second item\n+ third item\n1. numbered one\n2) numbered two\n- [x] done task"
    assert pieces(text) == [
        "Steps:",
        "first item",
        "second item",
        "third item",
        "numbered one",
        "numbered two",
        "done task",
    ]


def test_split_list_item_with_continuation_line():
    text = "- a long item that wraps\n  onto the next line\n- next item"
    assert pieces(text) == ["a long item that wraps\n  onto the next line", "next item"]


def test_split_headings_and_quotes():
    text = "# Title\n\n## Sub heading\nBody text here.\n> quoted line\n> - quoted bullet"
    assert pieces(text) == ["Title", "Sub heading", "Body text here.", "quoted line", "quoted bullet"]


def test_split_chat_lines_and_speaker_prefixes():
    text = (
        "[10:32] alice: hey all\n[10:33] bob: we decided to use Redis\n"
        "carol: sounds good\ncarol: ship it\n<dave> irc style line\nuser: Remember this"
    )
    assert pieces(text) == [
        "hey all",
        "we decided to use Redis",
        "sounds good",
        "ship it",
        "irc style line",
        "Remember this",
    ]


def test_split_markdown_link_is_not_a_timestamp():
    text = "[docs](https://x.y/z) explain it. Next."
    assert pieces(text) == ["[docs](https://x.y/z) explain it.", "Next."]


def test_split_labels_are_not_mistaken_for_speakers():
    text = "Note: keep this label.\nDecision: and this one."
    assert pieces(text) == ["Note: keep this label.", "Decision: and this one."]


def test_split_hard_wrapped_commit_body_is_joined():
    text = (
        "Fix race in scheduler\n\nThe scheduler could pick the same job twice when two workers polled\n"
        "within the same millisecond. Fixed by taking a row lock with\nSELECT ... FOR UPDATE.\n\nCloses #1"
    )
    assert pieces(text) == [
        "Fix race in scheduler",
        "The scheduler could pick the same job twice when two workers polled\nwithin the same millisecond.",
        "Fixed by taking a row lock with\nSELECT ... FOR UPDATE.",
        "Closes #1",
    ]


def test_split_title_line_is_not_joined_with_next_line():
    assert pieces("Weekly sync 2024-03-04\nAttendees: Alice, Bob") == [
        "Weekly sync 2024-03-04",
        "Attendees: Alice, Bob",
    ]


def test_split_crlf_and_empty_inputs():
    assert pieces("First one.\r\nSecond one.\r\n") == ["First one.", "Second one."]
    assert split_sentences("") == []
    assert split_sentences("  \n\n \t") == []


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_split_spans_are_sorted_disjoint_and_trimmed(case):
    text = case["text"]
    spans = split_sentences(text)
    prev_end = 0
    for a, b in spans:
        assert prev_end <= a < b <= len(text)
        assert not text[a].isspace() and not text[b - 1].isspace()
        prev_end = b


# ---------------------------------------------------------------------------
# extract_candidates: invariants
# ---------------------------------------------------------------------------


def _fence_ranges(text: str) -> list:
    ranges = []
    for m in re.finditer(r"^```.*?^```", text, re.S | re.M):
        ranges.append((m.start(), m.end()))
    return ranges


def check_candidate_invariants(text: str, cands: list, min_confidence: float = 0.5) -> None:
    """The position invariant.

    For every candidate c:
      * 0 <= c.start_pos < c.end_pos <= len(text);
      * c.content == clean_span(text[c.start_pos:c.end_pos]), i.e. the content
        is the span with ``**`` bold markers removed and whitespace collapsed,
        so the word sequences of content and span are identical;
      * if the span has neither ``**`` nor a line break,
        text[c.start_pos:c.end_pos].strip() == c.content exactly;
      * the span lies inside exactly one sentence of split_sentences(text),
        and no two candidates share a sentence;
    plus: sorted by start_pos, valid pattern type, confidence in
    [min_confidence, 1], unique normalized content, nothing from fenced code.
    """
    sentences = split_sentences(text)
    used = set()
    keys = set()
    fences = _fence_ranges(text)
    last = -1
    for c in cands:
        assert isinstance(c, Statement)
        assert 0 <= c.start_pos < c.end_pos <= len(text)
        span = text[c.start_pos : c.end_pos]
        assert c.content == clean_span(span)
        assert WORD.findall(c.content) == WORD.findall(span)
        if "**" not in span and "\n" not in span:
            assert span.strip() == c.content
        owners = [i for i, (a, b) in enumerate(sentences) if a <= c.start_pos and c.end_pos <= b]
        assert len(owners) == 1, (c, sentences)
        assert owners[0] not in used
        used.add(owners[0])
        assert c.pattern_matched in PATTERN_TYPES
        assert min_confidence <= c.confidence <= 1.0
        assert c.start_pos >= last
        last = c.start_pos
        key = " ".join(w.lower() for w in WORD.findall(c.content))
        assert key not in keys
        keys.add(key)
        for a, b in fences:
            assert not (a <= c.start_pos < b)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_candidate_invariants_on_fixtures(case):
    text = case["text"]
    check_candidate_invariants(text, extract_candidates(text))
    check_candidate_invariants(text, extract_candidates(text, min_confidence=0.0), 0.0)


def test_positions_with_markup_prefixes_are_excluded():
    text = "- **Shard**: a horizontal partition of the index.\n[10:35] alice: FYI the key rotates every 30 days"
    cands = extract_candidates(text)
    check_candidate_invariants(text, cands)
    by_content = {c.content: c for c in cands}
    shard = by_content["Shard: a horizontal partition of the index"]
    assert text[shard.start_pos : shard.end_pos] == "**Shard**: a horizontal partition of the index"
    fyi = by_content["FYI the key rotates every 30 days"]
    assert text[fyi.start_pos : fyi.end_pos] == "FYI the key rotates every 30 days"


def test_never_extracts_from_fenced_code():
    text = (
        "Intro.\n\n```python\n# we decided to keep this here\n# IMPORTANT: remember that this is code\n"
        "raise ValueError('Error: not real')\n```\n"
    )
    assert extract_candidates(text, min_confidence=0.0) == []


def test_duplicates_are_removed():
    text = "We decided to use Redis.\n\n- we decided to use redis\n\nWe decided to use Redis!"
    cands = extract_candidates(text)
    assert len(cands) == 1
    assert cands[0].start_pos == 0


def test_empty_and_whitespace_input():
    assert extract_candidates("") == []
    assert extract_candidates("   \n\t ") == []


# ---------------------------------------------------------------------------
# extract_candidates: behaviour
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "ptype, text",
    [
        ("decision", "We decided to use PostgreSQL for the billing service."),
        ("definition", "SLO stands for service level objective."),
        ("solution", "The workaround was to disable HTTP keep-alive on the client."),
        ("error", "The importer throws ValueError when the CSV header is missing."),
        ("pattern", "Always run the linter before pushing to main."),
        ("explicit", "Remember that the staging cluster is shared with the QA team."),
        ("important", "IMPORTANT: the backup bucket must never be made public."),
        ("fact", "The metrics service runs on port 9090 in every environment."),
        ("preference", "I prefer dark roast coffee in the morning."),
        ("insight", "Turns out the slowness came from DNS lookups on every request."),
        ("requirement", "Every release needs to be signed with the team GPG key."),
        ("problem", "The search page is broken on Safari since the last update."),
    ],
)
def test_each_pattern_type_is_recognised(ptype, text):
    cands = extract_candidates(text)
    assert len(cands) == 1
    assert cands[0].pattern_matched == ptype


@pytest.mark.parametrize(
    "text",
    [
        "thanks!",
        "sounds good",
        "lol",
        "can you check?",
        "how was your weekend?",
        "ok thanks, see you tomorrow!",
        "Morning all :)",
        "haha nice one",
        "Great job everyone, thanks!",
        "Should we use Postgres for this?",
        "Did we decide to use Redis?",
        "What if we switched to Go?",
        "Could you take a look at the failing build?",
        "Is the API limit 100 requests per minute?",
        "Any thoughts on the new design?",
        "alice: thanks!\nbob: np\nalice: lol\nbob: can you check the deploy?\nalice: sure, one sec",
    ],
)
def test_questions_and_filler_are_not_extracted(text):
    assert extract_candidates(text) == []


def test_questions_are_lowered_strongly():
    statement = extract_candidates("We will use Redis for caching.", min_confidence=0.0)
    question = extract_candidates("Should we use Redis for caching?", min_confidence=0.0)
    assert statement and statement[0].confidence >= 0.5
    assert not question or question[0].confidence < statement[0].confidence - 0.3


def test_hedges_lower_confidence():
    plain = extract_candidates("We decided to use Redis for caching.", min_confidence=0.0)[0]
    hedged = extract_candidates("I think we maybe decided to use Redis for caching.", min_confidence=0.0)[0]
    assert hedged.confidence < plain.confidence


def test_explicit_markers_raise_confidence():
    plain = extract_candidates("The deploy key rotates every 30 days.", min_confidence=0.0)[0]
    marked = extract_candidates("Note: the deploy key rotates every 30 days.", min_confidence=0.0)[0]
    assert marked.confidence > plain.confidence


def test_length_sanity_lowers_very_short_and_very_long():
    normal = extract_candidates("We decided to use Redis for the cache layer.", min_confidence=0.0)[0]
    short = extract_candidates("Decided: Redis.", min_confidence=0.0)
    long_text = "We decided to use Redis " + " ".join(f"word{i}" for i in range(80)) + "."
    long = extract_candidates(long_text, min_confidence=0.0)[0]
    assert not short or short[0].confidence < normal.confidence
    assert long.confidence < normal.confidence


def test_headings_are_not_statements():
    text = "## Bug: export crashes on empty projects\n\nThe exporter crashes with IndexError when there are no rows."
    cands = extract_candidates(text)
    assert [c.content for c in cands] == ["The exporter crashes with IndexError when there are no rows"]


def test_min_confidence_filtering():
    text = "\n\n".join(case["text"] for case in CASES)
    everything = extract_candidates(text, min_confidence=0.0)
    default = extract_candidates(text)
    strict = extract_candidates(text, min_confidence=0.8)
    assert len(everything) > len(default) > len(strict) > 0
    assert all(c.confidence >= 0.5 for c in default)
    assert all(c.confidence >= 0.8 for c in strict)
    by_start = {c.start_pos: c for c in everything}
    # stricter thresholds return a subset with the same scores
    for c in default + strict:
        assert by_start[c.start_pos] == c
    assert extract_candidates(text, min_confidence=1.01) == []


# ---------------------------------------------------------------------------
# performance (generous bounds: the machine is shared)
# ---------------------------------------------------------------------------


def _timed(fn, *args):
    t0 = time.perf_counter()
    result = fn(*args)
    return result, time.perf_counter() - t0


PERF_INPUTS = {
    "one_long_line_no_punctuation": ("lorem ipsum dolor sit amet " * 4000)[:100_000],
    "5000_repeated_sentences": "We decided to use Redis 7.2 for caching. " * 5000,
    "5000_repeated_lines": "alice: the API limit is 100 requests per minute\n" * 5000,
    "distinct_sentences": " ".join(
        f"Service {i} runs on port {8000 + i} since v{i % 9}.{i % 7} and e.g. Dr. Who approved it." for i in range(1300)
    ),
    "punctuation_runs": "." * 50_000 + "x" + "?!" * 25_000,
    "no_whitespace": "a" * 100_000,
    "many_backticks": "` a " * 25_000,
    "hard_wrapped_paragraph": "the quick brown fox jumps over the lazy dog and\n" * 2100,
}


@pytest.mark.parametrize("name", list(PERF_INPUTS))
def test_performance_on_large_inputs(name):
    text = PERF_INPUTS[name]
    assert len(text) >= 90_000
    _, t_split = _timed(split_sentences, text)
    cands, t_extract = _timed(extract_candidates, text)
    assert t_split < 5.0, (name, t_split)
    assert t_extract < 5.0, (name, t_extract)
    check_candidate_invariants(text, cands)


# ---------------------------------------------------------------------------
# evaluation against the hand-labelled fixtures
# ---------------------------------------------------------------------------


def _overlaps(a: tuple, b: tuple) -> bool:
    """Spans match when their overlap is >= 50% of the shorter span."""
    inter = min(a[1], b[1]) - max(a[0], b[0])
    return inter > 0 and inter >= 0.5 * min(a[1] - a[0], b[1] - b[0])


def evaluate(cases: list, min_confidence: float = 0.5) -> dict:
    """Micro counts overall and per kind.

    A candidate is a true positive when it overlaps some expected statement,
    otherwise a false positive; an expected statement is found when at least
    one candidate overlaps it.
    """
    stats = defaultdict(lambda: {"tp": 0, "fp": 0, "found": 0, "expected": 0, "passages": 0})
    for case in cases:
        text = case["text"]
        expected = []
        for e in case["expected"]:
            i = text.find(e)
            assert i >= 0, (case["id"], e)
            expected.append((i, i + len(e)))
        cands = extract_candidates(text, min_confidence=min_confidence)
        found = set()
        tp = fp = 0
        for c in cands:
            hits = [k for k, span in enumerate(expected) if _overlaps((c.start_pos, c.end_pos), span)]
            if hits:
                tp += 1
                found.update(hits)
            else:
                fp += 1
        for key in ("all", case["kind"]):
            st = stats[key]
            st["tp"] += tp
            st["fp"] += fp
            st["found"] += len(found)
            st["expected"] += len(expected)
            st["passages"] += 1
    for st in stats.values():
        predicted = st["tp"] + st["fp"]
        st["precision"] = st["tp"] / predicted if predicted else 1.0
        st["recall"] = st["found"] / st["expected"] if st["expected"] else 1.0
    return dict(stats)


def test_fixture_file_is_well_formed():
    assert len(CASES) >= 45
    ids = [c["id"] for c in CASES]
    assert len(ids) == len(set(ids))
    assert sum(1 for c in CASES if not c["expected"]) >= 5
    assert {c["kind"] for c in CASES} >= {"meeting", "chat", "commit", "bug", "doc", "personal"}
    for c in CASES:
        for e in c["expected"]:
            assert e in c["text"], (c["id"], e)


def test_evaluation_precision_recall():
    stats = evaluate(CASES)
    print()
    print(f"{'kind':<10} {'passages':>8} {'expected':>8} {'predicted':>9} {'precision':>9} {'recall':>7}")
    for key in ["all"] + sorted(k for k in stats if k != "all"):
        st = stats[key]
        print(
            f"{key:<10} {st['passages']:>8} {st['expected']:>8} {st['tp'] + st['fp']:>9} "
            f"{st['precision']:>9.3f} {st['recall']:>7.3f}"
        )
    overall = stats["all"]
    assert overall["precision"] >= 0.7
    assert overall["recall"] >= 0.7
