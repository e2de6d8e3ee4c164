"""Entry point: `spatial-memory-mcp`, `spatial-memory`, `python -m spatial_memory`.

With no command the server speaks MCP on stdio, which is how MCP clients start it. Each
command is a subparser of `build_parser()` that sets `handler`; `main()` parses and runs it.
Each command imports what it needs inside its handler, when it runs: `spatial-memory hook` (run at
every client event) must not pay for argparse, the settings or the server, and the server must
answer its opening requests before numpy, LanceDB or the model load. Nothing heavy is imported
before serving (argparse is imported by pydantic-settings anyway), and nothing but
--help/--version output ever goes to stdout when serving: stdout carries the protocol. `doctor`
is not a server: its report goes to stdout.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

PROG = "spatial-memory-mcp"


def main(argv: Sequence[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["hook"]:
        # A hook runs at every client event: straight to it, without argparse or the settings.
        from .capture.hook import main as hook_main

        raise SystemExit(hook_main(argv[1:]))
    args = build_parser().parse_args(argv)
    args.handler(args)


def build_parser() -> argparse.ArgumentParser:
    # Imported when this command runs: each command loads only what it needs (module docstring).
    import argparse

    from . import __version__

    class _Parser(argparse.ArgumentParser):
        """Help ends with the main settings, with this machine's default store path, laid out as
        written (a command's help would otherwise rewrap them into one paragraph)."""

        def format_help(self) -> str:
            return super().format_help() + "\n" + _settings_help() + "\n"

    parser = _Parser(
        prog=_prog(),
        # argparse's own would show COMMAND as required
        usage="%(prog)s [-h] [-V] [--transport {stdio,http}] [--host HOST] [--port PORT] [COMMAND]",
        description="A local-first MCP server giving LLM clients persistent memory.\n"
        "Without a command it serves MCP on stdio (what MCP clients start).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-V", "--version", action="version", version=f"{PROG} {__version__}")
    parser.set_defaults(handler=_serve_command)
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    serve_parser = commands.add_parser(
        "serve",
        help="serve MCP on stdio (the default), or over HTTP for a team",
        description="Serve MCP on stdio (the default), or MCP's streamable HTTP at /mcp with --transport http "
        "(beyond localhost only with SPATIAL_MEMORY_TOKENS_FILE or SPATIAL_MEMORY_OAUTH_ISSUER set).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    for serving in (parser, serve_parser):  # `spatial-memory-mcp --transport http` is `serve --transport http`
        _add_transport_options(serving)
    serve_parser.set_defaults(handler=_serve_command)
    tokens = commands.add_parser(
        "tokens",
        help="bearer tokens of an HTTP team server: add (prints the token once), list, remove",
        description="Manage the tokens file (SPATIAL_MEMORY_TOKENS_FILE, or --file): only each token's SHA-256 "
        "hash is stored, with the principal and the namespaces it may use.",
    )
    tokens.add_argument("action", choices=["add", "list", "remove"])
    tokens.add_argument("--principal", help="who the token is for (add, remove)")
    tokens.add_argument(
        "--namespace", action="append", default=[], help="a namespace it may read and write (repeat; team-* = prefix)"
    )
    tokens.add_argument("--read-namespace", action="append", default=[], help="a namespace it may only read")
    tokens.add_argument("--file", type=Path, help="the tokens file (default: SPATIAL_MEMORY_TOKENS_FILE)")
    tokens.set_defaults(handler=_tokens_command)
    # `hook` is dispatched by main() before parsing (capture/hook.py parses its own arguments);
    # it is listed here for --help.
    commands.add_parser(
        "hook",
        help="run one client hook: capture from the event on stdin (see setup-hooks)",
        add_help=False,
    )
    setup = commands.add_parser(
        "setup-hooks",
        help="show (or with --write, install) the hooks and MCP entry for Claude Code or Cursor",
        description="Show the hook configuration and the MCP server entry that make a client capture "
        "memories automatically. With --write, merge them into the client's files (a backup of each "
        "changed file first; other hooks and servers are kept; running it again changes nothing).",
    )
    setup.add_argument("--client", required=True, choices=["claude-code", "cursor"])
    where = setup.add_mutually_exclusive_group()
    where.add_argument("--project", dest="scope", action="store_const", const="project", help="this project's files")
    where.add_argument("--user", dest="scope", action="store_const", const="user", help="your user files (default)")
    setup.add_argument("--write", action="store_true", help="write the files (otherwise only show them)")
    setup.set_defaults(handler=_setup_hooks_command, scope="user")
    ingest = commands.add_parser(
        "ingest",
        help="store what hooks captured and the server has not stored yet, then exit",
        description="Store the spooled captures (hooks start this on their own when no server runs).",
    )
    ingest.add_argument("--store", help="the store's directory (default: SPATIAL_MEMORY_PATH)")
    ingest.set_defaults(handler=_ingest_command)
    backfill = commands.add_parser(
        "backfill",
        help="capture memories and procedures from the transcripts a client keeps on disk",
        description="Replay the transcripts Claude Code (~/.claude/projects) or Cursor (~/.cursor/projects) "
        "already keeps through the hooks' capture rules and store the result: a memory that does not start "
        "empty. Running it again stores nothing twice; secrets are redacted. Progress goes to stderr.",
    )
    backfill.add_argument("--client", required=True, choices=["claude-code", "cursor"])
    backfill.add_argument("--since", help="only what happened from this date (YYYY-MM-DD) or time (ISO 8601)")
    backfill.add_argument("--project", type=Path, help="only this project's transcripts (its directory)")
    backfill.add_argument("--store", help="the store's directory (default: SPATIAL_MEMORY_PATH)")
    backfill.set_defaults(handler=_backfill_command)
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
        "--path", help="the store: SPATIAL_MEMORY_PATH or its lancedb directory (default: the setting)"
    )
    doctor_parser.add_argument("--repair", action="store_true", help="restore the last good version")
    doctor_parser.add_argument("--json", action="store_true", help="print the report as JSON")
    doctor_parser.set_defaults(handler=_doctor_command)
    reembed = commands.add_parser(
        "reembed",
        help="write every vector of a store again on another path of the bundled model (--precision)",
        description="Re-embed a local store with the bundled model on another arithmetic path (the store records "
        "which path wrote its vectors): the one a new store gets (int8-row) unless --precision names another. "
        "All or nothing: the work is done on a copy beside the store, swapped in when complete; a run that stops "
        "leaves the old store as it was. Stop the servers using the store first. Progress goes to stderr. "
        "Exit status: 0 done (or nothing to do), 2 no store or it cannot be re-embedded.",
    )
    reembed.add_argument(
        "--path", help="the store: SPATIAL_MEMORY_PATH or its lancedb directory (default: the setting)"
    )
    reembed.add_argument(
        "--precision",
        default="auto",
        choices=["auto", "fp32", "int8-row", "int8"],
        help="the path to move to (auto: the one a new store gets)",
    )
    reembed.set_defaults(handler=_reembed_command)
    ui = commands.add_parser(
        "ui",
        help="open the atlas: the memory's map and browser, as a local web page",
        description="Serve the atlas (map, search, memory panel, history, captures) on 127.0.0.1 and open it in "
        "the browser. The first line printed is its URL, with a token of this launch: the page answers only "
        "to requests carrying it, at that address.",
    )
    ui.add_argument("--path", help="the store's directory (default: SPATIAL_MEMORY_PATH)")
    ui.add_argument("--port", type=int, default=0, help="the port (default: a free one)")
    ui.add_argument("--no-open", action="store_true", help="print the URL but do not open a browser")
    ui.set_defaults(handler=_ui_command)
    # More commands: commands.add_parser(...).set_defaults(handler=...).
    return parser


def _settings_help() -> str:
    try:
        # Imported when this command runs: each command loads only what it needs (module docstring).
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
        "every setting: docs/SETTINGS.md"
    )


def _prog() -> str:
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    name = name[:-4] if name.lower().endswith(".exe") else name  # Windows console scripts
    return name if name in (PROG, "spatial-memory") else "python -m spatial_memory"


def _settings_or_exit(**overrides):
    # Imported when this command runs: each command loads only what it needs (module docstring).
    from .config import Settings, describe_settings_error

    try:
        return Settings(**overrides)
    except Exception as exc:  # noqa: BLE001 - one clear line, no traceback
        sys.stderr.write(f"{PROG}: {describe_settings_error(exc)}\n")
        raise SystemExit(2) from None


def _setup_hooks_command(args: argparse.Namespace) -> None:
    # Imported when this command runs: each command loads only what it needs (module docstring).
    from .capture.namespace import project_root
    from .capture.setup import plan, registered_entry, write
    from .errors import SpatialMemoryError
    from .services.results import SetupHooksResult

    settings = _settings_or_exit()
    setup = registered_entry(
        plan(args.client, args.scope, project=project_root(Path.cwd()), home=Path.home(), store=_custom_store(settings))
    )
    # This command talks to a person in a terminal, not to an MCP client: stdout is theirs.
    result = SetupHooksResult.of(setup)
    print(result.render())
    if setup.registered is not None:
        print(f"\nThe MCP server is already registered as 'spatial-memory' in {setup.registered}: that entry is kept.")
    if not args.write:
        print(f"\nNothing was written. To merge this into the files above: {result.write_command}")
        return
    try:
        written = write(setup)
    except SpatialMemoryError as exc:
        sys.stderr.write(f"{PROG}: {exc.message}\n")
        raise SystemExit(1) from None
    for w in written:
        state = f"updated (backup: {w.backup})" if w.changed and w.backup else "created" if w.changed else "unchanged"
        print(f"{w.path}: {state}")


def _custom_store(settings):
    """The store path when it is not the default one (then hooks and server must be told)."""
    # Imported when this command runs: each command loads only what it needs (module docstring).
    from .config import default_data_dir

    return None if settings.path == default_data_dir().expanduser().resolve() else settings.path


def _backfill_command(args: argparse.Namespace) -> None:
    # Imported when this command runs: each command loads only what it needs (module docstring).
    from .capture.backfill import backfill, parse_since

    try:
        since = parse_since(args.since) if args.since else None
    except ValueError as exc:
        sys.stderr.write(f"{PROG}: {exc}\n")
        raise SystemExit(2) from None
    project = args.project.expanduser().resolve() if args.project else None
    if project is not None and not project.is_dir():
        sys.stderr.write(f"{PROG}: --project {args.project} is not a directory\n")
        raise SystemExit(2)
    settings = _settings_or_exit(**({"path": args.store} if args.store else {}))
    # Imported when this command runs: each command loads only what it needs (module docstring).
    from .app import App
    from .runtime.resources import Resources

    app = App(Resources(settings))
    try:
        done = backfill(app, args.client, since=since, project=project)
    finally:
        app.resources.close(settings.lock_timeout_seconds)
    sys.stderr.write(f"backfill: {done.describe(args.client)}\n")


def _ingest_command(args: argparse.Namespace) -> None:
    # Imported when this command runs: each command loads only what it needs (module docstring).
    from .capture.ingest import run_ingester

    overrides = {"path": args.store} if args.store else {}
    settings = _settings_or_exit(preload=False, **overrides)
    # Imported when this command runs: each command loads only what it needs (module docstring).
    import logging

    logging.basicConfig(
        stream=sys.stderr, level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    stored = run_ingester(settings)
    logging.getLogger(__name__).info("ingested %d captured memories", stored)


def _add_transport_options(parser: argparse.ArgumentParser) -> None:
    # Imported when this command runs: each command loads only what it needs (module docstring).
    import argparse

    # SUPPRESS: an option left out sets nothing, so `--port 1 serve` keeps the port given before `serve`.
    given: dict[str, Any] = {"default": argparse.SUPPRESS}
    parser.add_argument(
        "--transport", choices=["stdio", "http"], help="default: SPATIAL_MEMORY_TRANSPORT, stdio", **given
    )
    parser.add_argument("--host", help="HTTP listen address (default: SPATIAL_MEMORY_HOST, 127.0.0.1)", **given)
    parser.add_argument("--port", type=int, help="HTTP port (default: SPATIAL_MEMORY_PORT, 8765)", **given)


def _serve_command(args: argparse.Namespace) -> None:
    # Imported when this command runs: each command loads only what it needs (module docstring).
    from .runtime.shutdown import serve_then_exit

    overrides = {k: getattr(args, k, None) for k in ("transport", "host", "port")}
    serve_then_exit(lambda: serve(**{k: v for k, v in overrides.items() if v is not None}))


def _tokens_command(args: argparse.Namespace) -> None:
    # Imported when this command runs: each command loads only what it needs (module docstring).
    from .auth import tokens
    from .errors import SpatialMemoryError

    path = args.file or _settings_or_exit(preload=False).tokens_file
    if path is None:
        sys.stderr.write(f"{PROG}: no tokens file: pass --file or set SPATIAL_MEMORY_TOKENS_FILE\n")
        raise SystemExit(2)
    path = path.expanduser().resolve()
    try:
        if args.action == "list":
            for entry in tokens.read_entries(path):
                readable = f"; read-only: {', '.join(entry.read_namespaces)}" if entry.read_namespaces else ""
                print(f"{entry.principal}: {', '.join(entry.namespaces) or '-'}{readable} (created {entry.created_at})")
            return
        if not args.principal:
            sys.stderr.write(f"{PROG}: tokens {args.action} needs --principal\n")
            raise SystemExit(2)
        if args.action == "remove":
            removed = tokens.revoke(path, args.principal)
            print(f"removed {removed} token(s) of {args.principal} from {path}")
            raise SystemExit(0 if removed else 1)
        token = tokens.mint(path, args.principal, args.namespace, args.read_namespace)
    except SpatialMemoryError as exc:
        sys.stderr.write(f"{PROG}: {exc.message}\n")
        raise SystemExit(2) from None
    sys.stderr.write(f"token for {args.principal} added to {path}; it is shown only now:\n")
    print(token)


def _local_store_path(args: argparse.Namespace, command: str) -> Path:
    """The lancedb directory `--path` (or the setting) names, or exit 2 with one clear line."""
    # Imported when a command runs: each command loads only what it needs (module docstring).
    from .storage.table.connection import is_remote

    if args.path is None:
        # Imported when this command runs: each command loads only what it needs (module docstring).
        from .config import Settings, describe_settings_error

        try:
            path = Settings().db_path
        except Exception as exc:  # noqa: BLE001 - one clear line, no traceback
            sys.stderr.write(f"{PROG}: {describe_settings_error(exc)}\n")
            raise SystemExit(2) from None
    else:
        path = args.path if is_remote(args.path) else Path(args.path).expanduser().resolve()
    if is_remote(path):  # a store on object storage
        sys.stderr.write(
            f"{PROG}: {command} works on stores on a local disk; {path} is on object storage, whose "
            "provider keeps its durability (its versions are Lance's own: a failed commit never becomes one)\n"
        )
        raise SystemExit(2)
    # Imported when this command runs: each command loads only what it needs (module docstring).
    from .runtime.imports import import_heavy_modules
    from .storage.repair import doctor

    import_heavy_modules()
    return doctor.resolve_db_path(Path(path))


def _doctor_command(args: argparse.Namespace) -> None:
    # Imported when this command runs: each command loads only what it needs (module docstring).
    import json
    import logging

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    db_path = _local_store_path(args, "doctor")
    from .storage.repair import doctor  # imported when this command runs (module docstring)

    report = doctor.repair(db_path) if args.repair else doctor.check(db_path)
    sys.stdout.write((json.dumps(report.to_dict(), indent=2) if args.json else doctor.render(report)) + "\n")
    if report.opened_version is None:
        raise SystemExit(2)
    raise SystemExit(0 if report.healthy else 1)


def _reembed_command(args: argparse.Namespace) -> None:
    # Imported when this command runs: each command loads only what it needs (module docstring).
    import logging
    import time

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    db_path = _local_store_path(args, "reembed")
    # Imported when this command runs: each command loads only what it needs (module docstring).
    from .config import Settings
    from .embeddings import EmbeddingRouter
    from .embeddings.router import NEW_STORE_PATH, PATH_IDS
    from .errors import SpatialMemoryError
    from .storage.repair import reembed
    from .storage.store import MemoryStore
    from .storage.table.model_record import recorded_model_id
    from .storage.table.schema import TABLE_NAME

    done = reembed.recover(db_path)
    if done:
        sys.stderr.write(f"{PROG}: {done}\n")
    recorded = recorded_model_id(db_path)
    if recorded is None or not (db_path / f"{TABLE_NAME}.lance").is_dir():
        sys.stderr.write(f"{PROG}: no memory store at {db_path}\n")
        raise SystemExit(2)
    if recorded not in PATH_IDS.values():
        sys.stderr.write(
            f"{PROG}: this store's vectors were written by '{recorded}', not the bundled model: reembed moves "
            "stores between the bundled model's paths only (export_memories, then import_memories with "
            "regenerate_embeddings=true, moves others)\n"
        )
        raise SystemExit(2)
    path = NEW_STORE_PATH if args.precision == "auto" else args.precision
    # The models the store's own server uses: <SPATIAL_MEMORY_PATH>/models, beside lancedb/.
    store_dir = db_path.parent if db_path.name == "lancedb" else db_path
    settings = Settings(path=store_dir, embedding_precision=path, preload=False)
    router = EmbeddingRouter(
        precision=path,
        cache_dir=settings.model_cache_dir,
        batch_size=settings.embedding_batch_size,
        threads=settings.embedding_threads,
    )
    if recorded == router.model_id:
        sys.stderr.write(f"{PROG}: {db_path} is on the {path} path already ({recorded}); nothing to do\n")
        raise SystemExit(0)
    started = time.monotonic()

    def progress(done: int, total: int) -> None:
        sys.stderr.write(f"{PROG}: re-embedded {done:,} of {total:,} ({time.monotonic() - started:.0f} s)\n")
        sys.stderr.flush()

    def open_store(path: Path) -> None:
        MemoryStore(path, router.model_id, router.dimension)  # builds the keyword index the copy lacks

    try:
        result = reembed.reembed(
            db_path,
            router.model_id,
            router.dimension,
            router.embed_documents,
            progress=progress,
            lock_timeout=settings.lock_timeout_seconds,
            open_store=open_store,
        )
    except (SpatialMemoryError, OSError, ValueError) as exc:
        sys.stderr.write(f"{PROG}: nothing was changed: {exc}\n")
        raise SystemExit(2) from None
    sys.stderr.write(
        f"{PROG}: {result.memories:,} memories and {result.past_versions:,} past versions of {db_path} re-embedded: "
        f"{result.old_model} -> {result.new_model} in {time.monotonic() - started:.1f} s\n"
    )


def _ui_command(args: argparse.Namespace) -> None:
    import logging  # here, as every command's imports: `spatial-memory` without a command imports nothing heavy

    if not 0 <= args.port <= 65535:
        sys.stderr.write(f"{PROG}: --port must be from 0 to 65535\n")
        raise SystemExit(2)
    settings = _settings_or_exit(**({"path": args.path} if args.path else {}))
    logging.basicConfig(stream=sys.stderr, level=settings.log_level, format="%(levelname)s %(name)s: %(message)s")
    from .runtime.blas_threads import one_blas_thread  # here, as every command's imports (module docstring)

    one_blas_thread()  # a server too: before numpy loads
    from .atlas.server import serve_local  # the web server's stack, only for this command

    serve_local(settings, port=args.port, open_browser=not args.no_open)


def serve(**overrides) -> None:
    """Serve MCP on stdio until the client goes away (over HTTP until a signal, with transport=http)."""
    # Imported when this command runs: each command loads only what it needs (module docstring).
    from .config import Settings, describe_settings_error

    try:
        settings = Settings(**overrides)
    except Exception as exc:  # noqa: BLE001 - one clear line, no traceback
        sys.stderr.write(f"{PROG}: {describe_settings_error(exc)}\n")
        raise SystemExit(2) from None

    # stdout carries the protocol: every log line goes to stderr.
    import logging

    logging.basicConfig(
        stream=sys.stderr,
        level=settings.log_level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # Imported when this command runs: each command loads only what it needs (module docstring).
    from .runtime.blas_threads import one_blas_thread
    from .runtime.heap import limit_arenas

    limit_arenas()  # before any thread starts
    one_blas_thread()  # before numpy loads
    if settings.transport == "http":
        # Imported when this command runs: each command loads only what it needs (module docstring).
        from .server.http import serve_http

        return serve_http(settings)
    # Imported when this command runs: each command loads only what it needs (module docstring).
    from .transport import stdio_pipes

    if settings.fast_handshake and stdio_pipes.pipes_on_stdio():
        _serve_with_fast_handshake(settings)
    else:
        # Imported when this command runs: each command loads only what it needs (module docstring).
        from .server.app import create_server

        create_server(settings).run("stdio")


def _serve_with_fast_handshake(settings) -> None:
    """Import the SDK in a background thread while cached answers to the client's opening
    requests go out (handshake.py); then hand the wire to the SDK."""
    # Imported when this command runs: each command loads only what it needs (module docstring).
    import threading

    from .transport.handshake import HandshakeCache, fingerprint, serve_until_ready
    from .transport.stdio_pipes import claim_wire

    wire_in, wire_out = claim_wire()
    cache = HandshakeCache(settings.handshake_cache_dir, fingerprint(settings))
    loaded: dict = {}
    ready = threading.Event()

    def load() -> None:
        try:
            # Imported when this command runs: each command loads only what it needs (module docstring).
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
        # Imported when this command runs: each command loads only what it needs (module docstring).
        import logging

        logging.getLogger(__name__).info("client closed the connection: %s", exc)
        return
    if "error" in loaded:
        raise loaded["error"]
    server = loaded["server"]
    server.handover, server.handshake_cache = handover, cache
    server.run("stdio")


if __name__ == "__main__":
    main()
