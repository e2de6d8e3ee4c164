"""The process: shared resources wired once (settings, embedder, store, upkeep), heavy imports
one thread at a time, the C heap kept small, and a clean exit at any moment."""
