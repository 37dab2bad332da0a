"""The background index build, one per (model, registry, data) and server.

The index is built in a background thread so that no page blocks on it: embedding the full
registry takes minutes the first time, while the results pages need no index at all.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import streamlit as st

from core.retrieval.discovery import Retriever
from core.retrieval.assemble import IndexInfo, build_retriever
from core.settings import Settings
from ui import first_answer


@dataclass
class IndexJob:
    """One background build of encoder + embeddings + FAISS index, with progress for the UI."""

    registry: str
    settings: Settings
    done: int = 0
    total: int = 0
    retriever: Retriever | None = None
    info: IndexInfo | None = None
    error: str | None = None
    notice: str | None = None  # e.g. "waiting for the build in PID n" or "taking over a killed build"
    started: float = field(default_factory=time.perf_counter)
    first_progress: float | None = None
    first_done: int = 0
    _finished: threading.Event = field(default_factory=threading.Event, repr=False)

    def run(self) -> None:
        try:
            self.retriever, self.info = build_retriever(self.settings, progress=self.progress, notify=self.note,
                                                        defer=first_answer.defer)
        except Exception as exc:  # any failure is shown on the page instead of a dead thread
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self._finished.set()

    def progress(self, done: int, total: int) -> None:
        if self.first_progress is None:
            self.first_progress = time.perf_counter()
            self.first_done = done
        self.done, self.total = done, total

    def note(self, message: str) -> None:
        self.notice = message

    @property
    def rate(self) -> float | None:
        """Documents per second embedded so far, measured over this job's progress reports."""
        if self.first_progress is None:
            return None
        elapsed = time.perf_counter() - self.first_progress
        return (self.done - self.first_done) / elapsed if elapsed > 1 and self.done > self.first_done else None

    @property
    def ready(self) -> bool:
        return self.retriever is not None

    @property
    def finished(self) -> bool:
        return self._finished.is_set()

    def wait(self, timeout_s: float) -> bool:
        return self._finished.wait(timeout_s)

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 0.0

    @property
    def elapsed_s(self) -> float:
        return time.perf_counter() - self.started

    @property
    def status(self) -> str:
        """One line for status displays."""
        if self.info is not None:
            how = {"artifact": "loaded from the shipped index",
                   "cache": "loaded from cache"}.get(self.info.source, "built")
            return f"{self.info.size:,} APIs · {how} in {self.info.seconds:.1f} s"
        if self.error:
            return f"failed: {self.error}"
        waiting = " (built by another process)" if self.notice and "already running" in self.notice else ""
        if self.total:
            return f"embedding {self.done:,} / {self.total:,} APIs ({self.fraction:.0%}){waiting}"
        return "loading the registry, the query encoder and the vectors"


@st.cache_resource(show_spinner=False, max_entries=4, validate=lambda job: job.error is None)
def _index_job(model: str, registry: str, data_dir: str, cache_dir: str, _settings: Settings) -> IndexJob:
    """One job per (model, registry, data, cache); a failed job is dropped so the next visit retries."""
    job = IndexJob(registry, _settings)
    threading.Thread(target=job.run, name=f"index-{registry}", daemon=True).start()
    return job


def index_job(settings: Settings) -> IndexJob:
    """Start (once) or find the index build for these settings. Raises DataNotFoundError without data."""
    data_dir = settings.registry_dir()
    return _index_job(settings.embedding_model, settings.registry, str(data_dir), str(settings.cache_dir), settings)
