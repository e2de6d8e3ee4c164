"""The real stdio server with the fast fake embedder, for the reliability tests' many processes
(and the HTTP server with SPATIAL_MEMORY_TRANSPORT=http, for tests/test_team_server.py).

    PYTHONPATH=<repo> python -m tests.reliability_server

Everything but the embedding model is the shipped server (`spatial_memory.cli.main` minus the
model and the handshake cache; the same clean exit): settings from SPATIAL_MEMORY_* variables, logs on stderr, the protocol on stdout. The
tests that must exercise the bundled model start `python -m spatial_memory` instead.
"""

from __future__ import annotations

import logging
import sys


def main() -> None:
    from spatial_memory.config import Settings
    from spatial_memory.runtime.shutdown import serve_then_exit
    from spatial_memory.server.app import create_server
    from tests.hash_embedder import HashEmbedder

    settings = Settings()
    logging.basicConfig(
        stream=sys.stderr, level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if settings.transport == "http":
        from spatial_memory.server.http import serve_http

        serve_then_exit(lambda: serve_http(settings, embedder=HashEmbedder()))
    serve_then_exit(lambda: create_server(settings, embedder=HashEmbedder()).run("stdio"))


if __name__ == "__main__":
    main()
