"""Derived files that another library reads back by path (the query encoder's ONNX graph, the ANN indexes): each is
written with the sha256 of its bytes beside it (`<file>.sha256`), and checked against it before every use, so a
damaged file is rebuilt, with one line saying so, instead of silently moving a recall figure (a zeroed region of
the graph once loaded without a word and changed recall@5 on G1_instruction from 0.348 to 0.342).

The digest is written after the file is in place: a file without one (a crash in between, or a file from an older
version) counts as unverified and is rebuilt too. Hashing runs at about 1 GB/s here: 0.1 s for the 90 MB graph.
Both are written through core.files; a folder that cannot take them (read-only, full) raises CannotWrite, and the
caller keeps what it built in memory.
"""
from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import IO

from core.files import CannotWrite, ensure_folder, write_atomic

log = logging.getLogger(__name__)
SUFFIX = ".sha256"


def digest_path(path: Path) -> Path:
    return path.with_name(path.name + SUFFIX)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def record_digest(path: Path, sha256: str | None = None) -> None:
    """Write the digest of `path` (already in place) beside it, atomically; `sha256` when the caller has it."""
    write_atomic(digest_path(path), (sha256 or file_sha256(path)) + "\n")


def write_checked(path: Path, data: bytes | Callable[[IO[bytes]], None], sha256: str | None = None) -> None:
    """`path` written whole, then its digest; CannotWrite when either cannot be, and then neither is left (a file
    without its digest would only be dropped on its next load)."""
    ensure_folder(path.parent)
    write_atomic(path, data)
    try:
        record_digest(path, sha256)
    except CannotWrite:
        discard(path)
        raise


def discard(path: Path) -> None:
    """Remove `path` if it is there; a folder that refuses (read-only) keeps it, and says nothing: the caller's
    own error, or the next check, is what matters."""
    with suppress(OSError):
        path.unlink(missing_ok=True)


def intact(path: Path, what: str) -> bool:
    """True when `path` exists and matches the digest recorded when it was written. A file that does not (or has
    no digest) is removed with its digest, after one warning naming `what`, and False tells the caller to rebuild."""
    if not path.exists():
        return False
    recorded = _recorded(path)
    return (bool(recorded) and recorded == file_sha256(path)) or _drop(path, what, recorded)


def checked_bytes(path: Path, what: str) -> bytes | None:
    """`path`'s bytes when they match the recorded digest, read once for both the check and the caller (the 90 MB
    ONNX graph was read twice); else None, the file dropped as `intact` does."""
    try:
        data = path.read_bytes()
    except OSError:  # missing, or a folder that cannot hold it: nothing to trust
        return None
    recorded = _recorded(path)
    if recorded and recorded == hashlib.sha256(data).hexdigest():
        return data
    _drop(path, what, recorded)
    return None


def _recorded(path: Path) -> str:
    try:
        return digest_path(path).read_text().strip()
    except OSError:
        return ""


def _drop(path: Path, what: str, recorded: str) -> bool:
    """Remove a file that failed its check, with its digest, after one warning; False, for `intact`. In a read-only
    folder both stay: never trusted, since the digest still disagrees."""
    log.warning("%s %s %s; rebuilding it", what, path.name,
                "has no recorded digest" if not recorded else "does not match the digest recorded when it was written")
    for stale in (path, digest_path(path)):
        discard(stale)
    return False
