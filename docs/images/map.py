"""docs/images/map.svg: the visualize tool's SVG over a small demo store (the bundled model).

python docs/images/map.py docs/images/map.svg
"""

import sys
import tempfile
from pathlib import Path

from spatial_memory.app import App
from spatial_memory.config import Settings
from spatial_memory.records import NewMemory
from spatial_memory.runtime.resources import Resources

DEMO = {
    "work": [
        "The billing service stores invoices in PostgreSQL 16.",
        "We decided to deploy on Tuesdays and Thursdays only.",
        "The staging cluster is shared with the QA team.",
        "Alice owns the search index and its nightly rebuild.",
        "The API rate limit is 100 requests per minute per key.",
        "Bob prefers feature flags over long-lived branches.",
        "The nightly job times out when the export exceeds 2 GB.",
        "Postgres connection pool size was raised to 50 after the incident.",
        "The mobile app talks to the API through the gateway.",
        "Logs go to the central collector with structured JSON.",
    ],
    "home": [
        "The boiler service is due every October.",
        "Lunch on Fridays is pizza with the neighbours.",
        "The car's winter tyres are in the garage loft.",
        "Mia's piano lessons are on Wednesday at five.",
        "The spare house key is with the neighbour at number 12.",
        "We water the tomatoes every other evening in summer.",
        "The internet router restarts itself at 4 am.",
        "Recycling goes out on Monday mornings.",
    ],
    "ideas": [
        "A memory map could show how topics drift over a year.",
        "Spaced repetition might decide which memories decay first.",
        "Clustering notes by meaning finds forgotten projects.",
        "A walk between two memories shows what connects them.",
        "Keyword search and meaning search fail on different questions.",
        "Pinned memories work like a standing profile of the user.",
        "Conversation turns make more sense with their neighbours.",
    ],
}
with tempfile.TemporaryDirectory() as tmp:
    app = App(Resources(Settings(path=Path(tmp) / "store", preload=False)))
    for namespace, texts in DEMO.items():
        app.memory.remember_batch(
            [NewMemory(content=t, namespace=namespace, importance=0.3 + 0.05 * (i % 8)) for i, t in enumerate(texts)]
        )
    result = app.visualization.visualize(format="svg")
    Path(sys.argv[1]).write_text(result.output)
    app.resources.close(10)
print("ok")
