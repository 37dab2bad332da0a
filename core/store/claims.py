"""Which process writes a run: a writer claims each run it starts or reopens, until it finishes the run or ends.

Why: two identical `bench --resume` processes reopened the same unfinished runs, both computed the missing rows,
and the slower one died in an IntegrityError traceback on the unique (run_id, query_uid) constraint. Now a process
that finds a run claimed refuses in one line (RunBusy, a DatabaseUnavailable, so `python -m core` prints it and
exits 1) before it writes anything to that run. It refuses rather than waits: a second resume of the same runs is
almost always a mistake, and waiting without a word for a study that can take hours would hide it; once the other
process ends, `--resume` does whatever it left.

A claim dies with its process, so a killed bench never leaves a run claimed. On a SQLite file it is an OS file lock
(flock) on one small file per claimed run in a folder beside the database (`<db>-claims/run-<id>`, holding the
claimer's pid and host for the refusal to name); the file is removed on release, and the folder once it is empty.
On PostgreSQL it is a session advisory lock (CLAIM_LOCKS, run id) on a connection kept for the store's life, whose
application_name names the claimer; the server drops it when the session ends. In-memory SQLite is private to its
connection: there is nothing to claim against.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import socket
from pathlib import Path
from typing import Protocol

from sqlalchemy import func, select, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

from core.files import FULL, READ_ONLY, os_error_words
from core.store.dburl import DatabaseUnavailable, StoreNotWritable

CLAIM_LOCKS = 0x72_75_6E_73  # the first key of the PostgreSQL advisory locks that claim runs (the second: the run id)
APPLICATION = "tool-discovery-lab"
HOLDER_BYTES = 200


class RunBusy(DatabaseUnavailable):
    """Another live process is writing the run; the one-line message names the run and that process."""


def whoami() -> str:
    return f"pid {os.getpid()} on {socket.gethostname()}"


def busy(run_id: int, holder: str) -> RunBusy:
    return RunBusy(f"run {run_id} is being written by another process ({holder or 'pid unknown'}); "
                   "try again when it ends (with --resume)")


class Claims(Protocol):
    def take(self, run_id: int) -> None:
        """Claim the run for this store, or raise RunBusy; a run it holds already is held still."""

    def release(self, run_id: int) -> None:
        """Let the run go (nothing when it is not held)."""

    def close(self) -> None:
        """Let every held run go."""


class NoClaims:
    """In-memory SQLite: no other process can reach the database."""

    def take(self, run_id: int) -> None:
        pass

    def release(self, run_id: int) -> None:
        pass

    def close(self) -> None:
        pass


class FileClaims:
    """SQLite: a flock on `folder/run-<id>` per held run (see the module docstring)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._held: dict[int, int] = {}  # run id -> the descriptor holding its lock

    def take(self, run_id: int) -> None:
        if run_id in self._held:
            return
        try:
            fd = self._lock(run_id)
        except OSError as exc:  # a full or read-only disk stops a study as the database's own writes do
            kind = StoreNotWritable if exc.errno in FULL + READ_ONLY else DatabaseUnavailable
            raise kind(f"cannot claim run {run_id} in {self.folder}: {os_error_words(exc, self.folder.parent)}"
                       ) from None
        self._held[run_id] = fd

    def _lock(self, run_id: int) -> int:
        """A descriptor holding the lock of the run's file. A releaser removes the file (then the folder) while it
        still holds the lock, so a lock won on a file no longer there is on a file nobody else sees: try again."""
        path = self.folder / f"run-{run_id}"
        while True:
            self.folder.mkdir(exist_ok=True)
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            except FileNotFoundError:  # the folder was removed between the two calls
                continue
            try:
                if self._won(fd, path, run_id):
                    return fd
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)

    @staticmethod
    def _won(fd: int, path: Path, run_id: int) -> bool:
        """True once `fd` holds the lock of the file at `path`, which then names this process; RunBusy while another
        process holds it."""
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise busy(run_id, os.pread(fd, HOLDER_BYTES, 0).decode(errors="replace").strip()) from None
        try:
            if os.stat(path).st_ino != os.fstat(fd).st_ino:
                return False
        except FileNotFoundError:
            return False
        os.ftruncate(fd, 0)
        os.pwrite(fd, whoami().encode(), 0)
        return True

    def release(self, run_id: int) -> None:
        fd = self._held.pop(run_id, None)
        if fd is None:
            return
        with contextlib.suppress(OSError):  # a file left behind is harmless: the next claimer locks it
            (self.folder / f"run-{run_id}").unlink()
        os.close(fd)
        with contextlib.suppress(OSError):  # another claim is held in it
            self.folder.rmdir()

    def close(self) -> None:
        for run_id in list(self._held):
            self.release(run_id)


class AdvisoryClaims:
    """PostgreSQL: session advisory locks on one connection of the store's engine, opened at the first claim."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._conn: Connection | None = None
        self._held: set[int] = set()

    def take(self, run_id: int) -> None:
        if run_id in self._held:
            return
        if self._conn is None:
            self._conn = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            self._conn.execute(select(func.set_config("application_name", f"{APPLICATION} {whoami()}", False)))
        if not self._conn.execute(select(func.pg_try_advisory_lock(CLAIM_LOCKS, run_id))).scalar_one():
            raise busy(run_id, self._holder(run_id))
        self._held.add(run_id)

    def _holder(self, run_id: int) -> str:
        """The claimer's pid and host, from its session's application_name ("" when the server does not show it)."""
        name = self._conn.execute(text(
            "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 "
            "AND l.classid::bigint = :claims AND l.objid::bigint = :run_id"),
            {"claims": CLAIM_LOCKS, "run_id": run_id}).scalar()
        return name.removeprefix(APPLICATION).strip() if name and name.startswith(APPLICATION) else ""

    def release(self, run_id: int) -> None:
        if run_id not in self._held:
            return
        self._held.discard(run_id)
        try:
            self._conn.execute(select(func.pg_advisory_unlock(CLAIM_LOCKS, run_id)))
        except SQLAlchemyError:  # the session is gone, and every claim with it
            self.close()

    def close(self) -> None:
        if self._conn is not None:
            self._conn.invalidate()  # ends the session, which drops every claim it holds
            self._conn.close()
            self._conn = None
        self._held.clear()


def claims_for(engine: Engine, path: Path | None) -> Claims:
    """How a store on `engine` claims runs; `path` is its SQLite file (None for in-memory SQLite and PostgreSQL)."""
    if engine.dialect.name == "postgresql":
        return AdvisoryClaims(engine)
    if path is None:
        return NoClaims()
    return FileClaims(path.with_name(path.name + "-claims"))
