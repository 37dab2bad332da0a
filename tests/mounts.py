"""Real hostile folders for tests: a small tmpfs (a disk that fills) and a read-only bind mount (root ignores
permission bits, so chmod cannot make one). Each is unmounted in a `finally`; where this machine forbids mounts the
test is skipped, except under CI, where it fails."""
from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), capture_output=True, text=True, check=False)


def _cannot(what: str, result: subprocess.CompletedProcess) -> None:
    message = f"cannot {what} here: {result.stderr.strip() or result.returncode}"
    if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes"):
        pytest.fail(message)
    pytest.skip(message)


@contextmanager
def small_disk(folder: Path, size: str = "1m") -> Iterator[Path]:
    """`folder` as a tmpfs of `size` (mount's units), empty; unmounted afterwards."""
    folder.mkdir(parents=True, exist_ok=True)
    result = _run("mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder))
    if result.returncode:
        _cannot("mount a tmpfs", result)
    try:
        yield folder
    finally:
        _run("umount", "-l", str(folder))


@contextmanager
def read_only(folder: Path) -> Iterator[Path]:
    """`folder` (made if absent, its contents kept) read-only in place until the block ends."""
    folder.mkdir(parents=True, exist_ok=True)
    result = _run("mount", "--bind", str(folder), str(folder))
    if result.returncode:
        _cannot("bind-mount a folder", result)
    try:
        result = _run("mount", "-o", "remount,ro,bind", str(folder))
        if result.returncode:
            _cannot("remount a folder read-only", result)
        yield folder
    finally:
        _run("umount", "-l", str(folder))


def fill(folder: Path) -> None:
    """Fills the disk holding `folder` to its last byte."""
    try:
        with open(folder / "filler", "wb", buffering=0) as fh:
            while True:
                fh.write(b"\0" * 65536)
    except OSError:  # full: the last write, or the close's flush
        pass
