"""The results store as a page's first request needs it, without pandas: its connection, the studies it holds,
and values kept on disk under its complete runs.

A shared Inspector link (`?q=`) reads two things from the store before any table: the systems with a complete
main study (the sidebar's Study picker) and the router's fitted threshold. Through ResultsReader they cost the
pandas import and the runs frame, 2-4 s of a fresh server's first answer on 2 cores; here they are a few SQL
queries and one small kept file. ResultsReader builds on this class for its connection and schema check.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from core.analysis.disk_memo import DiskMemo
from core.store.dburl import DatabaseUnavailable, open_error, shown
from core.store.engine import make_engine
from core.store.packing import readable
from core.store.schema import Run, SchemaInfo
from core.store.schema_check import check_schema

# Which study a page shows when none is chosen, and what a tab does when the chosen one has none of its runs.
DEFAULT_STUDY_RULE = ("the complete main study that covers the most of the paper's three instruction subsets (its "
                      "headline table); of those, an LLM's before the LLM-free heuristic's (the question is whether an "
                      "LLM should plan first), then the largest discovery model (the strongest planner measured), "
                      "then the most subsets, then the latest. A study under way does not replace a whole one; a tab "
                      "whose study has no runs of the tab's kind shows the latest study that has them, and says so")

# The two states of a store that are not trouble: nothing written yet.
NO_DATABASE = "no results database yet: run `python -m core bench all`"
EMPTY_DATABASE = "the results database is empty: run `python -m core bench all`"


def system_names(pairs: Iterable[tuple[str, str]]) -> list[str]:
    """The systems of these (backend, model) pairs, in name order: a backend's name, or "backend:model" for each
    model of a backend that has several (the local models)."""
    return sorted(set(system_name_map(pairs).values()))


def system_name_map(pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """{(backend, model): its system name} under system_names' rule."""
    pairs = set(pairs)
    models: dict[str, int] = {}
    for backend, _ in pairs:
        models[backend] = models.get(backend, 0) + 1
    return {(backend, model): backend if models[backend] == 1 else f"{backend}:{model}" for backend, model in pairs}


class StoreSummary:
    """One results database, read-only: its engine once the schema is this code's, and what needs no table."""

    def __init__(self, url: str, cache_dir: Path | None = None) -> None:
        """`cache_dir`: where values are kept between processes (core.analysis.disk_memo); None keeps none."""
        self.url = url
        self._disk = DiskMemo(cache_dir / "tables" if cache_dir is not None else None)
        self._engine: Engine | None = None
        self._lock = threading.Lock()
        self._schema_ok = False

    def _connect(self) -> Engine | None:
        """The engine, or None when the database file does not exist (never created by reading)."""
        if not readable(self.url):
            return None
        if self._engine is None:
            self._engine = make_engine(self.url, writer=False)
        return self._engine

    def _check(self) -> tuple[Engine | None, str | None]:
        """The engine once the schema is this code's, or None and a one-line error (never the URL's password)."""
        try:
            engine = self._connect()
        except DatabaseUnavailable as exc:
            return None, str(exc)
        if engine is None:
            return None, NO_DATABASE
        if self._schema_ok:
            return engine, None
        try:
            if not check_schema(engine, create=False):
                return None, EMPTY_DATABASE
        except DatabaseUnavailable as exc:  # SchemaMismatch too
            return None, str(exc)
        except SQLAlchemyError as exc:
            return None, str(open_error(self.url, exc))
        self._schema_ok = True
        return engine, None

    def trouble(self) -> str | None:
        """Why a store that exists cannot be read (damaged, packed results cut short, another schema, unreachable),
        in one line; None when it can be read, or when there is none yet or it is empty (the pages then say how to
        fill it): so a damaged store is never shown as a missing one."""
        engine, error = self._check()
        return None if engine is not None or error in (NO_DATABASE, EMPTY_DATABASE) else error

    def systems(self, registry: str | None = None) -> list[str]:
        """Systems with a complete main study (system_names), on `registry` only when given; named over the whole
        store, so that a system keeps its name (and a shared link its study) on every registry. None when the
        store cannot be read."""
        engine, _ = self._check()
        if engine is None:
            return []
        with engine.connect() as conn:
            rows = conn.execute(select(Run.llm_backend, Run.llm_model, Run.registry_name).distinct()
                                .where(Run.status == "complete", Run.kind == "main")).all()
        names = system_name_map((backend, model) for backend, model, _ in rows)
        return sorted({names[(backend, model)] for backend, model, name in rows if registry in (None, name)})

    def kept(self, key: tuple, compute: Callable[[], Any]) -> Any:
        """`compute()` over the complete runs, kept on disk under this store's identity and each complete run's id and
        finish time: found again by a later server until a run completes (again: a resumed run finishes anew) or
        is removed, whatever a bench under way writes meanwhile. None, and nothing computed, when the store cannot
        be read."""
        engine, _ = self._check()
        if engine is None:
            return None
        with engine.connect() as conn:
            created = conn.execute(select(SchemaInfo.created_at).where(SchemaInfo.id == 1)).scalar_one_or_none()
            complete = conn.execute(select(Run.id, Run.finished_at).where(Run.status == "complete")
                                    .order_by(Run.id)).all()
        signature = (shown(self.url), str(created), tuple((run_id, str(finished)) for run_id, finished in complete))
        return self._disk.get(("summary", *key), signature, compute)
