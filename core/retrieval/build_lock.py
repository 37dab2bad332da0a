"""One corpus-embedding build at a time across processes: a file lock in CACHE_DIR plus a progress file.

Why: an app and a CLI started together each embedded the same 47k documents, on the same two
cores. Now the first process to take the lock builds; every other one waits, reports the
builder's progress from its progress file, and then loads what it wrote. The lock is an OS file
lock (flock), so a killed builder releases it at once; the progress file it leaves behind is how
the next builder knows that a build was interrupted, and says so. A CACHE_DIR that cannot hold the lock file
(read-only, full) cannot keep what is built either, so a waiter would have nothing to load: each process then
builds alone, without the lock, and keeps its vectors in memory (core.retrieval.embedding says so).
"""
from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from filelock import FileLock, Timeout

from core.files import ensure_folder, write_atomic
from core.retrieval.checked_file import discard

ProgressFn = Callable[[int, int], None]
NotifyFn = Callable[[str], None]
DeferFn = Callable[[Callable[[], None]], None]  # takes work that only speeds up later starts, to run when it can
POLL_S = 1.0
WRITE_EVERY_S = 0.5


def run_now(task: Callable[[], None]) -> None:
    """The DeferFn of a caller with nothing to put first: the work is done at once."""
    task()


@dataclass(frozen=True)
class BuildState:
    """What a running build publishes: who builds, how far it is, since when."""

    pid: int
    host: str
    done: int
    total: int
    started: float
    updated: float

    @property
    def rate(self) -> float | None:
        """Documents per second so far, measured; None before the first progress report."""
        elapsed = self.updated - self.started
        return self.done / elapsed if self.done and elapsed > 0 else None


def lock_path(cache_dir: Path, key: str) -> Path:
    return cache_dir / f"emb-{key}.lock"


def state_path(cache_dir: Path, key: str) -> Path:
    return cache_dir / f"emb-{key}.build.json"


def read_state(cache_dir: Path, key: str) -> BuildState | None:
    try:
        raw = json.loads(state_path(cache_dir, key).read_text())
        return BuildState(int(raw["pid"]), str(raw["host"]), int(raw["done"]), int(raw["total"]),
                          float(raw["started"]), float(raw["updated"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def pid_alive(pid: int) -> bool:
    """Whether a process of this id runs (one we may not signal does)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class BuildSlot:
    """Held by the one process that builds: forwards progress and publishes it for the waiters (to `path`; None:
    there is no one to publish to)."""

    def __init__(self, path: Path | None, progress: ProgressFn | None) -> None:
        self._path = path
        self._forward = progress
        self._started = time.time()
        self._written = 0.0

    def progress(self, done: int, total: int) -> None:
        now = time.time()
        if self._path is not None and (now - self._written >= WRITE_EVERY_S or done >= total):
            state = BuildState(os.getpid(), socket.gethostname(), done, total, self._started, now)
            try:
                write_atomic(self._path, json.dumps(asdict(state)))
                self._written = now
            except OSError:
                pass  # waiters then see no progress, but the build itself is unaffected
        if self._forward is not None:
            self._forward(done, total)

    def publish_start(self, total: int) -> None:
        self._written = 0.0
        self.progress(0, total)


def _acquire(lock: FileLock, cache_dir: Path, key: str, progress: ProgressFn | None, say: NotifyFn,
             poll_s: float) -> bool:
    """Wait for the lock, relaying the holder's progress; False when CACHE_DIR cannot hold the lock file."""
    waited = False
    try:
        ensure_folder(cache_dir)
        while True:
            try:
                lock.acquire(timeout=poll_s)
                return True
            except Timeout:
                state = read_state(cache_dir, key)
                if not waited:
                    who = f"PID {state.pid}" if state else "another process"
                    say(f"A build of these embeddings is already running ({who}); waiting for it instead of "
                        "starting a second one.")
                    waited = True
                if state is not None and state.total and progress is not None:
                    progress(state.done, state.total)
    except OSError:  # read-only or full (a Timeout, an OSError too, is handled above)
        return False


@contextmanager
def exclusive_build(cache_dir: Path, key: str, *, progress: ProgressFn | None = None,
                    notify: NotifyFn | None = None, poll_s: float = POLL_S) -> Iterator[BuildSlot]:
    """Hold the build lock for `key`; while another process holds it, wait and relay its progress. Where CACHE_DIR
    cannot hold the lock, build alone (see the module's docstring).

    The caller looks in the cache again once inside: the build it waited for may have written it.
    """
    say = notify or (lambda message: None)
    lock = FileLock(lock_path(cache_dir, key), thread_local=False)
    if not _acquire(lock, cache_dir, key, progress, say, poll_s):
        yield BuildSlot(None, progress)
        return
    try:
        previous = read_state(cache_dir, key)
        if previous is not None and previous.pid != os.getpid():
            gone = "its process is gone" if not pid_alive(previous.pid) else "it no longer holds the lock"
            say(f"A build by PID {previous.pid} stopped at {previous.done:,} of {previous.total:,} documents "
                f"({gone}); taking it over.")
        yield BuildSlot(state_path(cache_dir, key), progress)
    finally:
        discard(state_path(cache_dir, key))
        lock.release()
