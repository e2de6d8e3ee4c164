"""A corpus of near-copies and near-misses, written for checking threshold decisions (not LoCoMo):
developer notes and conversation lines, each beside light rewordings of itself (near-copies: a word
changed, a clause added, case and punctuation) and near-misses (another number, another tool or
person, a negation, the same topic said otherwise). benchmarks/near_copies.py and
benchmarks/similarity_band.py measure on it; tests/test_threshold_decisions.py checks its closest pairs.
"""

from __future__ import annotations

# Every threshold a decision on embedded vectors uses by default (embeddings/decisions.py's callers).
THRESHOLDS = {
    "how_to 0.2": 0.2,
    "connections 0.5": 0.5,
    "distill 0.6": 0.6,
    "contradiction 0.75": 0.75,
    "bridges 0.8": 0.8,
    "consolidate 0.85": 0.85,
    "remember / extract 0.9": 0.9,
    "import 0.95": 0.95,
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
