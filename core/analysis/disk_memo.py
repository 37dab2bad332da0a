"""The reader's tables kept on disk between server starts, so a fresh server's first page visit reads them instead of
computing them again (the Overview's leaderboard and model-size tables took 2-4 s of every new server's first visit).

A table is found again only under the same key: the method and its arguments, the stored data it was computed
from (the database's identity and creation time, and every complete run's id, finish time, row and failure
counts: a resumed run that finished again changes it) and the code that computed it (a digest of every core/
source, plus the Python, numpy and pandas versions that pickled it). Each file carries the digest it was written
with (core.retrieval.checked_file): a damaged one is dropped with one line and computed again. A folder that cannot
be written only costs the speed-up.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import logging
import pickle
import sys
import threading
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

from core.files import CannotWrite
from core.retrieval.checked_file import checked_bytes, discard, write_checked
from core.settings import PROJECT_ROOT

log = logging.getLogger(__name__)
KEEP = 512  # tables kept; the oldest go first
_computing: dict[Path, threading.Lock] = {}  # one lock per kept file: a value two threads ask for is computed once
_computing_guard = threading.Lock()


def _lock_for(path: Path) -> threading.Lock:
    with _computing_guard:
        return _computing.setdefault(path, threading.Lock())


@lru_cache(maxsize=1)
def code_digest() -> str:
    """Every core/ source file and the library versions that shape a pickled table (read from their metadata: a
    value that needs no pandas is kept without importing it)."""
    versions = "|".join(importlib.metadata.version(name) for name in ("numpy", "pandas"))
    digest = hashlib.sha256(f"{sys.version}|{versions}".encode())
    for path in sorted((PROJECT_ROOT / "core").rglob("*.py")):
        digest.update(str(path.relative_to(PROJECT_ROOT)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


class DiskMemo:
    """Values computed once per key and data signature, kept as checked pickles in `folder` (None: nothing kept)."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder

    def get(self, key: tuple, signature: tuple, compute: Callable[[], Any]) -> Any:
        if self.folder is None:
            return compute()
        name = hashlib.sha256(repr((code_digest(), signature, key)).encode()).hexdigest()[:40]
        path = self.folder / f"{name}.pkl"
        with _lock_for(path):  # e.g. the warm start's router fit and a page's: the second reads what the first kept
            data = checked_bytes(path, "a cached results table")
            if data is not None:
                try:
                    return pickle.loads(data)
                except Exception as exc:  # an unreadable table is computed again
                    log.warning("cached results table %s could not be read (%s); computing it again", path.name, exc)
            value = compute()
            self._keep(path, value)
            return value

    def _keep(self, path: Path, value: Any) -> None:
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            write_checked(path, data, hashlib.sha256(data).hexdigest())
        except CannotWrite as exc:  # a read-only or full cache folder: the table is simply not kept
            log.debug("results table not kept: %s", exc)
            return
        self._prune(path.parent)

    @staticmethod
    def _prune(folder: Path) -> None:
        try:
            tables = sorted(folder.glob("*.pkl"), key=lambda p: p.stat().st_mtime)
        except OSError:  # one removed meanwhile by another process's prune: the next write prunes
            return
        for old in tables[:-KEEP] if len(tables) > KEEP else []:
            for stale in (old, old.with_name(old.name + ".sha256")):
                discard(stale)
