"""The one way the lab writes a file: a temporary file in the same folder, fsync, atomic rename.

Why one writer: a full disk or a read-only folder must never leave a half-written file under the real name, nor a
temporary file behind, and must be said in words ("no space left on the disk holding …", "… is read-only"), not as
"damaged" or a traceback. Every error path removes the temporary file; an unlink that fails in turn never replaces
the original error. Readers of a cache treat CannotWrite as "keep it in memory" (core.retrieval, the call cache).
"""
from __future__ import annotations

import errno
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

FULL = (errno.ENOSPC, errno.EDQUOT)
READ_ONLY = (errno.EROFS,)
DENIED = (errno.EACCES, errno.EPERM)


class CannotWrite(OSError):
    """A file could not be written: its folder is full, read-only or not ours. An OSError with the original errno,
    whose message is one plain sentence naming the folder."""

    def __init__(self, code: int | None, message: str, folder: Path | None = None) -> None:
        super().__init__(code, message)
        self.message = message
        self.folder = folder

    def __str__(self) -> str:
        return self.message


def os_error_words(exc: OSError, folder: Path) -> str:
    """What an OSError met while writing under `folder` means, in words a user can act on."""
    code = exc.errno
    if code in FULL:
        return f"no space left on the disk holding {folder}"
    if code in READ_ONLY:
        return f"{folder} is read-only"
    if code in DENIED:
        return f"{folder} cannot be written (permission denied)"
    return f"{folder} cannot be written ({exc.strerror or type(exc).__name__})"


def disk_errno(folder: Path) -> int | None:
    """EROFS or ENOSPC when the disk holding `folder` is mounted read-only or has no space left; None when it is
    neither, or cannot be asked. For errors that carry no errno of their own, such as SQLite's."""
    try:
        disk = os.statvfs(folder)
    except OSError:
        return None
    if disk.f_flag & os.ST_RDONLY:
        return errno.EROFS
    return errno.ENOSPC if disk.f_bavail == 0 else None


def cannot_write(exc: OSError, path: Path) -> CannotWrite:
    """A CannotWrite for `exc` met while writing `path` (passed through when it is one already)."""
    if isinstance(exc, CannotWrite):
        return exc
    return CannotWrite(exc.errno, f"cannot write {path.name}: {os_error_words(exc, path.parent)}", path.parent)


_TOLD: set[Path] = set()


def told_unwritable(folder: Path) -> None:
    """Record that the user has been told, in one line, that `folder` cannot be written (CACHE_DIR's check)."""
    _TOLD.add(folder.resolve())


def untold(exc: CannotWrite) -> bool:
    """Whether a cache falling back to memory for `exc` should say so: not when its folder lies in one the user was
    told of already, so a read-only CACHE_DIR is one line, not one per cache."""
    if exc.folder is None:
        return True
    folder = exc.folder.resolve()
    return not any(folder == told or told in folder.parents for told in _TOLD)


def temporary_name(path: Path) -> Path:
    """The temporary file beside `path`: hidden, and unique per process and thread."""
    return path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")


def _remove_quietly(path: Path) -> None:
    try:
        path.unlink(missing_ok=True)
    except OSError:  # a read-only folder cannot have held it; the original error is the one to say
        pass


@contextmanager
def writing(path: Path) -> Iterator[IO[bytes]]:
    """A binary file to write `path` through: on a clean exit it is flushed, fsynced and renamed over `path`; on
    any error the temporary file is removed and an OSError becomes a CannotWrite naming the folder."""
    tmp = temporary_name(path)
    try:
        with open(tmp, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        _remove_quietly(tmp)
        raise cannot_write(exc, path) from None
    except BaseException:
        _remove_quietly(tmp)
        raise


def write_atomic(path: Path, data: bytes | str | Callable[[IO[bytes]], None]) -> None:
    """`path` holds `data` (bytes, UTF-8 text, or what a callback writes to the open file) whole, or is unchanged."""
    with writing(path) as fh:
        if callable(data):
            data(fh)
        else:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)


def ensure_folder(folder: Path) -> None:
    """mkdir -p, with a CannotWrite in words when the folder cannot be made."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CannotWrite(exc.errno, f"cannot make {folder.name}: {os_error_words(exc, folder.parent)}",
                          folder.parent) from None
