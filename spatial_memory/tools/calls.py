"""Running a tool: its service call off the event loop, and every outcome as a CallToolResult.

A success carries the typed result as structured content (the output schema, whole) and its lean
form as text, what clients hand the model (tools/lean.py): short ids, which every tool taking an
id accepts back (`full_ids`, before the tool runs). Errors
are turned into results here and only here: a SpatialMemoryError becomes an isError result
whose text is its typed `{"error", "message", "isError"}` body; anything unexpected becomes
InternalError with a short reference id, its traceback going to stderr only.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import pydantic
import pydantic_core
from mcp.types import CallToolResult, EmbeddedResource, TextContent, TextResourceContents, ToolAnnotations

from ..auth.principal import current_scope
from ..errors import InternalError, ResultTooLargeError, SpatialMemoryError, ValidationError
from ..records import Provenance
from ..runtime.imports import import_heavy_modules
from ..transport.cancellation import request_scope
from ..transport.progress import Progress, Reported, progress_scope
from .lean import is_short_id, lean
from .types import Context

if TYPE_CHECKING:  # named in annotations only
    from ..app import App
log = logging.getLogger("spatial_memory.tools")


# A tool's work: one service call on the caller's App (its services confined to its namespaces on a
# team server).
Work = Callable[["App"], pydantic.BaseModel]
R = TypeVar("R")

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
ADDITIVE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
DESTRUCTIVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)
CHANGING = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False)


def provenance(ctx: Context, via: str) -> Provenance:
    """Who is writing: the tool (`via`) and the MCP client, by the name and version it gave in
    `initialize` (absent when the client gave none)."""
    info = None
    try:
        params = ctx.session.client_params
        info = params.client_info if params is not None else None
    except Exception:  # noqa: BLE001 - provenance is best effort, never a failed write
        info = None
    return Provenance(
        via=via,
        client=getattr(info, "name", None),
        client_version=getattr(info, "version", None),
    )


def _json(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def _size(data: dict[str, Any]) -> int:
    """The bytes of `data` as compact JSON (pydantic's serializer: several times json's speed; a
    string it cannot encode, such as an echoed lone surrogate, is measured by json)."""
    try:
        return len(pydantic_core.to_json(data))
    except pydantic_core.PydanticSerializationError:
        return len(_json(data).encode("utf-8", "surrogatepass"))


def success(result: pydantic.BaseModel) -> CallToolResult:
    """The whole result as structured content, its lean form (tools/lean.py) as the text."""
    data = result.model_dump(mode="json")
    return CallToolResult(content=[TextContent(type="text", text=_json(lean(result, data)))], structured_content=data)


def with_picture(out: CallToolResult, uri: str = "memory://map.svg") -> CallToolResult:
    """A successful SVG map also as an `image/svg+xml` resource: clients that render embedded
    resources show the picture instead of markup escaped inside JSON."""
    structured: dict[str, object] = out.structured_content or {}
    svg = structured.get("output") if not out.is_error else None
    if isinstance(svg, str):
        picture = TextResourceContents(uri=uri, mime_type="image/svg+xml", text=svg)
        out.content.append(EmbeddedResource(type="resource", resource=picture))
    return out


def failure(error: SpatialMemoryError) -> CallToolResult:
    """An isError result whose text is the typed JSON body `{"error", "message", "isError"}`.

    No structuredContent: clients built on the TypeScript SDK validate structuredContent against the
    tool's outputSchema even when isError is set, and would throw away the message."""
    message = error.message.encode("utf-8", "replace").decode("utf-8")  # an echoed lone surrogate cannot be sent
    data = {"error": error.error_type, "message": message, "isError": True}
    return CallToolResult(content=[TextContent(type="text", text=_json(data))], is_error=True)


def internal_failure(where: str) -> CallToolResult:
    return failure(typed_error(where))


def typed_error(where: str) -> SpatialMemoryError:
    """The exception being handled as the typed error a caller sees: ours as it is, too deep a
    nesting as a ValidationError, anything else an InternalError whose traceback goes to the log
    only, under a short reference. (The atlas's JSON answers use it too: one translation.)"""
    exc = sys.exc_info()[1]
    if isinstance(exc, SpatialMemoryError):
        return exc
    if isinstance(exc, RecursionError):
        return ValidationError("Invalid arguments: nested too deeply")
    reference = uuid.uuid4().hex[:8]
    log.exception("internal error in %s (reference %s)", where, reference)
    return InternalError(f"An internal error occurred. Reference: {reference}")


PROGRESS_INTERVAL = 0.25  # seconds between progress notifications at most


async def _send_progress(ctx: Context, progress: Progress, note: str | None, finished: anyio.Event) -> None:
    """The work's own progress (done of total) as it grows, the last value included. With `note`,
    until the work reports any, a heartbeat every second (elapsed seconds, no total); real progress
    then continues above the last heartbeat, as MCP wants every value sent larger than the last."""
    started = time.monotonic()
    sent: Reported | None = None
    beats = -1
    try:
        while True:
            latest = progress.latest
            if latest is not None and latest is not sent:
                offset = max(beats, 0)
                total = None if latest.total is None else offset + latest.total
                await ctx.report_progress(offset + latest.done, total, latest.message)
                sent = latest
            elif latest is None and note is not None and int(time.monotonic() - started) > beats:
                beats = int(time.monotonic() - started)
                await ctx.report_progress(beats, None, note)
            if finished.is_set():
                return
            with anyio.move_on_after(PROGRESS_INTERVAL):
                await finished.wait()
    except Exception:  # noqa: BLE001 - progress is best effort
        return


def in_worker(fn: Callable[[App], R]) -> Callable[[App], R]:
    """`fn(app)` as worker-thread work: counted for shutdown, after the heavy imports."""

    def run(app: App) -> R:
        with app.resources.workers.running():  # shutdown waits for this (runtime/shutdown.py)
            import_heavy_modules()  # never two threads importing pyarrow at once (see there)
            return fn(app)

    return run


async def _run_with_progress(fn: Work, app: App, ctx: Context, note: str | None) -> pydantic.BaseModel:
    # Every call: whether the client asked for progress is the SDK's to know (a token over JSON-RPC,
    # a callback in process); ctx.report_progress sends nothing when it did not. Without a `note`
    # (a heartbeat from the start), the sender starts only when the work first reports progress:
    # most calls report none, and then cost no task beside the worker's.
    fn = in_worker(fn)
    if note is not None:
        return await _run_with_heartbeat(fn, app, ctx, note)
    loop = asyncio.get_running_loop()
    finished = anyio.Event()
    sender: asyncio.Task[None] | None = None

    def start_sender() -> None:  # on the event loop
        nonlocal sender
        if sender is None and not finished.is_set():
            sender = loop.create_task(_send_progress(ctx, progress, None, finished))

    def first_report() -> None:  # in the worker
        try:
            loop.call_soon_threadsafe(start_sender)
        except RuntimeError:  # the loop is closed: an abandoned worker outlived its session
            pass

    with progress_scope(first_report) as progress:  # bound before the worker starts: it inherits it
        try:
            outcome = await anyio.to_thread.run_sync(fn, app, abandon_on_cancel=True)
        except BaseException:
            finished.set()
            if sender is not None:
                sender.cancel()
            raise
        finished.set()
        if sender is not None:
            # The last progress is sent before the result: the worker's first report reached the
            # loop before its return did, so the sender it asked for exists by now.
            await sender
    return outcome


async def _run_with_heartbeat(fn: Work, app: App, ctx: Context, note: str) -> pydantic.BaseModel:
    outcome: pydantic.BaseModel | None = None
    error: BaseException | None = None
    async with anyio.create_task_group() as group:
        with progress_scope() as progress:  # bound before the worker starts: it inherits the context
            finished = anyio.Event()
            group.start_soon(_send_progress, ctx, progress, note, finished)
            try:
                outcome = await anyio.to_thread.run_sync(fn, app, abandon_on_cancel=True)
            except BaseException as exc:  # noqa: BLE001 - re-raised below, unwrapped by the task group
                error = exc
                group.cancel_scope.cancel()
            finally:
                finished.set()  # the last progress is sent before the result
    if error is not None or outcome is None:
        raise error or RuntimeError("the work returned nothing")
    return outcome


async def call(ctx: Context, fn: Work, *, progress: str | None = None) -> CallToolResult:
    """Run `fn(app)` (one service call) in a worker thread and wrap its result or error: the one
    way every tool runs.

    A client that asked for progress gets the work's own (done of total, transport/progress.py);
    with `progress`, also a heartbeat every second until the work reports any."""
    app = _scoped_app(ctx)
    upkeep = app.resources.upkeep
    upkeep.call_started()  # background bookkeeping waits for a pause between calls
    try:
        return await _call(app, ctx, fn, progress)
    finally:
        upkeep.call_finished()


def _scoped_app(ctx: Context) -> App:
    """The caller's view: a team server's principal gets an App confined to its namespaces."""
    return ctx.request_context.lifespan_context.for_scope(current_scope())


async def full_ids(ctx: Context, arguments: dict[str, Any], names: Sequence[str]) -> dict[str, Any] | CallToolResult:
    """The arguments with every short id among `names` (a prefix of one memory's id, as results
    show ids: tools/lean.py) replaced by the full id, or the typed error of an ambiguous one. Full
    ids and ids that match nothing are passed on as they are (the tool then says what it says of
    an unknown id); the store is read only when some id is short."""
    given: dict[str, Any] = {name: arguments[name] for name in names if arguments.get(name) is not None}
    values: list[Any] = []
    for value in given.values():
        values += value if isinstance(value, list) else [value]
    short = [v for v in values if isinstance(v, str) and is_short_id(v)]
    if not short:
        return arguments
    app = _scoped_app(ctx)
    try:
        found = await anyio.to_thread.run_sync(in_worker(lambda a: a.memory.full_ids(short)), app)
    except SpatialMemoryError as exc:
        return failure(exc)
    except Exception:  # noqa: BLE001 - an unexpected failure is still a typed error
        return internal_failure("full_ids")

    def full(value: str | list[str]) -> str | list[str]:
        return [found.get(v, v) for v in value] if isinstance(value, list) else found.get(value, value)

    expanded = {name: full(value) for name, value in given.items()}
    return {**arguments, **expanded}


async def _call(app: App, ctx: Context, fn: Work, progress: str | None) -> CallToolResult:
    limit = app.resources.settings.max_result_bytes
    with request_scope() as cancelled:
        try:
            # A cancelled request (or a client that closed the pipe) returns at once instead of
            # waiting for its worker; the token makes the worker stop before any commit it has
            # not started yet, so nothing is written for a client that is gone.
            # The result is turned into what is sent (its lean text, its structured content) and
            # measured against the size limit in the worker too: CPU work the event loop need not
            # wait on (a result that cannot be serialized is still a typed error, below).
            result = await _run_with_progress(lambda a: _bounded(success(fn(a)), limit), app, ctx, progress)
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise
        except SpatialMemoryError as exc:
            log.info("%s: %s", exc.error_type, exc.message)
            return failure(exc)
        except Exception:  # noqa: BLE001 - the one place unexpected errors are caught
            return internal_failure(getattr(fn, "__qualname__", "tool"))
    assert isinstance(result, CallToolResult)  # success() made it, in the worker
    return result


def _bounded(out: CallToolResult, limit: int) -> CallToolResult:
    # The whole result (structured content) is what is sent and held: the lean text is smaller.
    size = _size(out.structured_content) if out.structured_content is not None else None
    if size is None:
        text = out.content[0]
        size = len((text.text if isinstance(text, TextContent) else "").encode("utf-8", "surrogatepass"))
    if size <= limit:
        return out
    return failure(
        ResultTooLargeError(
            f"the result is {size:,} bytes; the limit is {limit:,} (SPATIAL_MEMORY_MAX_RESULT_BYTES). "
            "Ask for fewer results (limit, max_memories) or narrow them (namespace, filters)."
        )
    )
