"""The write lock of a store on object storage: a lease row in a small LanceDB table beside `memories`.

Replicas of the server on one bucket share no file system, so the local file lock (StoreLock) cannot
serialize them. Every read-check-write of the store (a version bump and its history row, a duplicate
check before an insert, supersede, forget, compaction) assumes that no other write lands between its
read and its commit. A lease keeps that assumption true for every one of them at once, instead of
rewriting each as an optimistic retry loop.

Taking the lease is a compare-and-swap on its row: an update whose `where` names the state just read
(free, or expired, with the holder and expiry seen). Lance commits with conditional puts, so of two
replicas updating the row from the same version one commit fails; Lance re-runs the losing update on
the new version, where the `where` no longer matches and it updates no row. The winner holds the lease
until it releases it, renewing it every TTL/3 while held; a replica that dies holding it blocks the
others for at most LEASE_SECONDS.

Waiters poll, so a replica whose own requests queue for the lease would re-take it the moment it lets
it go and starve the others. A waiter therefore claims the next turn (the row's `waiter`, for
CLAIM_SECONDS, renewed while it waits); a free lease claimed by another is left to that waiter. The
claim decides only who tries: exclusion rests on the compare-and-swap alone.

Expiry is judged by wall clocks: replicas' clocks must agree to well within LEASE_SECONDS (NTP does).
"""

from __future__ import annotations

import logging
import random
import threading
import time
import uuid
from datetime import timedelta

import pyarrow as pa

from ...errors import StorageError
from ..filters import quote
from .locking import ReentrantLock

log = logging.getLogger(__name__)

LEASE_TABLE = "leases"
WRITE_LEASE = "memories"
INDEX_LEASE = "indexes"
# A holder renews its lease every third of this; a dead holder's lease is taken over after it.
LEASE_SECONDS = 15.0
# A waiter's claim on the next turn lasts this long unless renewed (a dead waiter's claim lapses).
CLAIM_SECONDS = 2.0
# Waiters look at the lease at least this often.
MAX_POLL_SECONDS = 0.1
# Every update of a lease row adds a fragment (and a version) that each later read of the row
# scans: a holder merges them after this many of its own takes, while it still holds the lease.
TIDY_AFTER_TAKES = 16


def lease_schema() -> pa.Schema:
    return pa.schema(
        [
            ("name", pa.string()),
            ("holder", pa.string()),
            ("expires_ms", pa.int64()),
            ("waiter", pa.string()),
            ("waiter_until_ms", pa.int64()),
        ]
    )


# How long a replica waits for the lease table another replica is creating to become readable.
CREATE_WAIT_SECONDS = 10.0


def open_lease_table(db):
    """The lease table, created with one free row per lease when the store has none."""
    if LEASE_TABLE in db.list_tables().tables:
        return _open_created(db)
    names = [WRITE_LEASE, INDEX_LEASE]
    free = {"holder": ["", ""], "expires_ms": [0, 0], "waiter": ["", ""], "waiter_until_ms": [0, 0]}
    rows = pa.table({"name": names, **free}, schema=lease_schema())
    try:
        return db.create_table(LEASE_TABLE, rows)
    except (ValueError, OSError):  # another replica created it meanwhile (its create committed first)
        return _open_created(db)
    except RuntimeError as exc:
        # Both creates reached the object store together: Lance lets the first commit win and
        # refuses the other ("Retryable commit conflict ... preempted by concurrent transaction").
        if "commit conflict" not in str(exc).lower():
            raise
        return _open_created(db)


def _open_created(db):
    """Open the lease table, which may be listed before its first version is readable: a replica
    that started at the same moment is still creating it ("Table 'leases' was not found")."""
    deadline = time.monotonic() + CREATE_WAIT_SECONDS
    while True:
        try:
            return db.open_table(LEASE_TABLE)
        except ValueError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.05)


def _now_ms() -> int:
    return int(time.time() * 1000)


class LeaseLock(ReentrantLock):
    """The lease named `name` in the lease table, held by this process while any of its threads is
    inside (re-entrant like StoreLock). Waiting is bounded by `timeout`, then a retryable StorageError."""

    def __init__(self, table, name: str, timeout: float, *, lease_seconds: float = LEASE_SECONDS) -> None:
        super().__init__(timeout)
        self._table = table
        self._name = name
        self._lease_ms = int(lease_seconds * 1000)
        self._token: str | None = None
        self._renewer: threading.Thread | None = None
        self._released = threading.Event()
        self._takes = 0

    def _row(self) -> dict:
        rows = self._table.search().where(f"name = {quote(self._name)}").to_arrow().to_pylist()
        if not rows:
            raise StorageError(f"the store's lease table has no '{self._name}' lease")
        return rows[0]

    def _updated(self, where: str, values: dict) -> bool:
        result = self._table.update(where=f"name = {quote(self._name)} AND {where}", values=values)
        return int(getattr(result, "rows_updated", 0) or 0) == 1

    def _swap(self, row: dict, token: str, until_ms: int) -> bool:
        """Take the lease if it is still in the state read (holder, expires_ms); True when taken.
        Taking it ends this waiter's claim on the turn."""
        values = {"holder": token, "expires_ms": until_ms}
        if row["waiter"] == token:
            values |= {"waiter": "", "waiter_until_ms": 0}
        return self._updated(f"holder = {quote(row['holder'])} AND expires_ms = {int(row['expires_ms'])}", values)

    def _claim(self, token: str, now: int) -> None:
        """Claim the next turn, unless another live waiter has."""
        where = f"(waiter = '' OR waiter = {quote(token)} OR waiter_until_ms < {now})"
        self._updated(where, {"waiter": token, "waiter_until_ms": now + int(CLAIM_SECONDS * 1000)})

    def _lock_shared(self, deadline: float) -> None:
        token = uuid.uuid4().hex
        delay = 0.02
        while True:
            try:
                row = self._row()
                now = _now_ms()
                free = not row["holder"] or row["expires_ms"] < now
                claimed = row["waiter"] not in ("", token) and row["waiter_until_ms"] >= now
                if free and not claimed and self._swap(row, token, now + self._lease_ms):
                    break
                mine = row["waiter"] == token and row["waiter_until_ms"] - now > CLAIM_SECONDS * 500
                # A try-once lock (the index builds' 50 ms) claims nothing: it skips its turn instead.
                if not claimed and not mine and deadline - time.monotonic() > CLAIM_SECONDS / 4:
                    self._claim(token, now)
            except StorageError:
                raise
            except Exception as exc:  # noqa: BLE001 - a lost commit race or a transient object-store error
                log.debug("taking the %s lease: %s", self._name, exc)
            if time.monotonic() >= deadline:
                raise self._busy()
            time.sleep(min(delay, max(deadline - time.monotonic(), 0.0)) * random.uniform(0.5, 1.0))
            delay = min(delay * 2, MAX_POLL_SECONDS)
        self._token = token
        self._released = released = threading.Event()
        self._renewer = threading.Thread(
            target=self._renew, args=(token, released), name=f"lease-{self._name}", daemon=True
        )
        self._renewer.start()

    def _renew(self, token: str, released: threading.Event) -> None:
        interval = self._lease_ms / 3000
        while not released.wait(interval):
            try:
                if not self._swap_own(token, _now_ms() + self._lease_ms):
                    log.error("the %s lease was taken over while held (a stall longer than its term)", self._name)
                    return
            except Exception as exc:  # noqa: BLE001 - the next renewal may succeed within the term
                log.warning("renewing the %s lease failed: %s", self._name, exc)

    def _swap_own(self, token: str, until_ms: int) -> bool:
        """Renew the lease held with `token` until until_ms, or release it (0)."""
        return self._updated(f"holder = {quote(token)}", {"holder": token if until_ms else "", "expires_ms": until_ms})

    def _unlock_shared(self) -> None:
        token, self._token = self._token, None
        self._released.set()
        if self._renewer is not None:
            self._renewer.join()
            self._renewer = None
        if token is None:
            return
        self._takes += 1
        if self._takes % TIDY_AFTER_TAKES == 0:
            self._tidy()
        for attempt in range(5):
            try:
                self._swap_own(token, 0)
                return
            except Exception as exc:  # noqa: BLE001 - the lease then expires by itself
                log.debug("releasing the %s lease: %s", self._name, exc)
                time.sleep(0.05 * (attempt + 1))
        log.warning("could not release the %s lease; the other replicas wait until it expires", self._name)

    def _tidy(self) -> None:
        """Merge the lease table's fragments and drop its versions older than a lease term (a waiter
        may be reading the one current a moment ago)."""
        try:
            self._table.optimize(cleanup_older_than=timedelta(seconds=LEASE_SECONDS))
        except Exception as exc:  # noqa: BLE001 - a race with a waiter's claim: next time
            log.debug("tidying the lease table: %s", exc)

    def probe(self) -> str:
        """ "free" or "held" (by a replica, this one included), without waiting."""
        row = self._row()
        return "held" if row["holder"] and row["expires_ms"] >= _now_ms() else "free"
