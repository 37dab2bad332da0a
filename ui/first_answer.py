"""Work that waits for the first answer: under `make run`, what only later starts need is done once a script run has
ended, not beside the one a shared link's reader is waiting for.

Why: on 2 cores, a fresh clone's decoded-vector cache write (72 MB and its sha256), its results' unpack and the
router's first fit, done as soon as the index was in, competed with the first script run and the browser's render of
it (docs/benchmarks.md). ui.warm_start holds the work (hold) and does it after app.py says a run has ended (answered);
under plain `streamlit run` nothing is held and defer does the work at once.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable

_answered = threading.Event()
_lock = threading.Lock()
_held: list[Callable[[], None]] | None = None  # a list while holding; None when not holding, or once released


def hold() -> None:
    """From now until release(), defer keeps its work (the warm start calls it at the server's start)."""
    global _held
    with _lock:
        _held = []


def defer(task: Callable[[], None]) -> None:
    """core's DeferFn (core.retrieval.build_lock) for the index job: kept while holding, otherwise done at once."""
    with _lock:
        if _held is not None:
            _held.append(task)
            return
    task()


def answered() -> None:
    """app.py, after each script run (also one that stopped or reruns): the answer has been sent."""
    _answered.set()


def wait(timeout_s: float) -> bool:
    """Until a script run has ended, or timeout_s (a server nobody opens does the work too)."""
    return _answered.wait(timeout_s)


def release() -> None:
    """Do the kept work, in the caller's thread, and keep no more; a task that fails costs a later start its time."""
    global _held
    with _lock:
        tasks, _held = _held or [], None
    for task in tasks:
        try:
            task()
        except Exception:
            logging.getLogger(__name__).debug("deferred work failed", exc_info=True)
