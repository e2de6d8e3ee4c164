"""Entry point: `spatial-memory-mcp`, `spatial-memory`, `python -m spatial_memory`.

With no command the server speaks MCP on stdio, which is how MCP clients start it. Each
command is a subparser of `build_parser()` that sets `handler`; `main()` parses and runs it.
Nothing heavy is imported before serving (argparse is imported by pydantic-settings anyway),
and nothing but --help/--version output ever goes to stdout when serving: stdout carries the
protocol. `doctor` is not a server: its report goes to stdout.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

PROG = "spatial-memory-mcp"


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else list(argv))
    args.handler(args)


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = _Parser(
        prog=_prog(),
        usage="%(prog)s [-h] [-V] [COMMAND]",  # argparse's own would show COMMAND as required
        description="A local-first MCP server giving LLM clients persistent memory.\n"
        "Without a command it serves MCP on stdio (what MCP clients start).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-V", "--version", action="version", version=f"{PROG} {__version__}")
    parser.set_defaults(handler=_serve_command)
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    serve_parser = commands.add_parser(
        "serve",
        help="serve MCP on stdio (the default)",
        description="Serve MCP on stdio.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve_parser.set_defaults(handler=_serve_command)
    doctor_parser = commands.add_parser(
        "doctor",
        help="check a store (versions, fragments, indexes, model record, rows); --repair fixes it",
        description="Check a memory store without writing to it: every version's manifest, the model record, "
        "every fragment's rows (naming the memories a damaged or missing data file lost), the indexes. "
        "With --repair, a damaged newest version is moved to a doctor-backup-<time> folder so the store "
        "opens at its last good version and takes writes again; nothing is deleted. "
        "Exit status: 0 healthy (after the repair), 1 problems remain, 2 no store.",
    )
    doctor_parser.add_argument(
        "--path", type=Path, help="the store: SPATIAL_MEMORY_PATH or its lancedb directory (default: the setting)"
    )
    doctor_parser.add_argument("--repair", action="store_true", help="restore the last good version")
    doctor_parser.add_argument("--json", action="store_true", help="print the report as JSON")
    doctor_parser.set_defaults(handler=_doctor_command)
    # More commands: commands.add_parser(...).set_defaults(handler=...).
    return parser


class _Parser(argparse.ArgumentParser):
    """Help ends with the main settings, with this machine's default store path."""

    def format_help(self) -> str:
        self.epilog = _settings_help()
        return super().format_help()


def _settings_help() -> str:
    try:
        import platformdirs

        store = str(platformdirs.user_data_path(PROG, appauthor=False))
    except Exception:  # noqa: BLE001 - help must print whatever happens
        store = "the per-user data directory"
    return (
        "settings (environment variables, or a .env file in the working directory):\n"
        f"  SPATIAL_MEMORY_PATH             the store's directory (default: {store})\n"
        "  SPATIAL_MEMORY_EMBEDDING_MODEL  all-MiniLM-L6-v2 (bundled, the default), another\n"
        "                                  sentence-transformers model, or openai:<model>\n"
        "  SPATIAL_MEMORY_LOG_LEVEL        DEBUG, INFO (default), WARNING or ERROR; logs go to stderr\n"
        "  SPATIAL_MEMORY_EXPORT_DIRS      directories export_memories may write to, and\n"
        "  SPATIAL_MEMORY_IMPORT_DIRS      import_memories may read from (JSON lists;\n"
        "                                  default: <store>/exports)\n"
        'every setting: the "Settings" section of the README'
    )


def _prog() -> str:
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    name = name[:-4] if name.lower().endswith(".exe") else name  # Windows console scripts
    return name if name in (PROG, "spatial-memory") else "python -m spatial_memory"


def _serve_command(args: argparse.Namespace) -> None:
    from .runtime.shutdown import serve_then_exit

    serve_then_exit(serve)


def _doctor_command(args: argparse.Namespace) -> None:
    import json

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if args.path is None:
        from .config import Settings, describe_settings_error

        try:
            path = Settings().db_path
        except Exception as exc:  # noqa: BLE001 - one clear line, no traceback
            sys.stderr.write(f"{PROG}: {describe_settings_error(exc)}\n")
            raise SystemExit(2) from None
    else:
        path = args.path.expanduser().resolve()
    from .runtime.imports import import_heavy_modules
    from .storage import doctor

    import_heavy_modules()
    db_path = doctor.resolve_db_path(path)
    report = doctor.repair(db_path) if args.repair else doctor.check(db_path)
    sys.stdout.write((json.dumps(report.to_dict(), indent=2) if args.json else doctor.render(report)) + "\n")
    if report.opened_version is None:
        raise SystemExit(2)
    raise SystemExit(0 if report.healthy else 1)


def serve() -> None:
    """Serve MCP on stdio until the client goes away."""
    from .config import Settings, describe_settings_error

    try:
        settings = Settings()
    except Exception as exc:  # noqa: BLE001 - one clear line, no traceback
        sys.stderr.write(f"{PROG}: {describe_settings_error(exc)}\n")
        raise SystemExit(2) from None

    # stdout carries the protocol: every log line goes to stderr.
    logging.basicConfig(
        stream=sys.stderr,
        level=settings.log_level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    from .runtime.heap import limit_arenas

    limit_arenas()  # before any thread starts
    from .transport import stdio_pipes

    if settings.fast_handshake and stdio_pipes.pipes_on_stdio():
        _serve_with_fast_handshake(settings)
    else:
        from .server.app import create_server

        create_server(settings).run("stdio")


def _serve_with_fast_handshake(settings) -> None:
    """Import the SDK in a background thread while cached answers to the client's opening
    requests go out (handshake.py); then hand the wire to the SDK."""
    import threading

    from .transport.handshake import HandshakeCache, fingerprint, serve_until_ready
    from .transport.stdio_pipes import claim_wire

    wire_in, wire_out = claim_wire()
    cache = HandshakeCache(settings.handshake_cache_dir, fingerprint(settings))
    loaded: dict = {}
    ready = threading.Event()

    def load() -> None:
        try:
            from .server.app import create_server

            loaded["server"] = create_server(settings)
        except BaseException as exc:  # noqa: BLE001 - re-raised on the main thread
            loaded["error"] = exc
        finally:
            ready.set()

    threading.Thread(target=load, name="spatial-memory-sdk-import", daemon=True).start()
    try:
        handover = serve_until_ready(wire_in, wire_out, cache, ready)
    except OSError as exc:  # the client went away mid-handshake
        logging.getLogger(__name__).info("client closed the connection: %s", exc)
        return
    if "error" in loaded:
        raise loaded["error"]
    server = loaded["server"]
    server.handover, server.handshake_cache = handover, cache
    server.run("stdio")


if __name__ == "__main__":
    main()
