"""The base of ResultsReader: the store's runs and the rows of those a table is computed from, cached per set of
complete runs.

`read_cached` keeps every table until the complete runs change, so a page renders in milliseconds. Reads only the
database (never the registry, the data directory or a model) and creates nothing.
"""
from __future__ import annotations

import copy
import functools
import inspect
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from core.analysis import stored_rows
from core.analysis.run_selection import of_system, planner_sample, select_runs, system_keys
from core.analysis.store_summary import StoreSummary
from core.analysis.table_schemas import RUNS_TABLE
from core.registries import DEFAULT_REGISTRY
from core.store.dburl import shown
from core.store.schema_check import SCHEMA_VERSION
from core.store.store import store_fingerprint

Method = TypeVar("Method", bound=Callable[..., Any])


def read_cached(method: Method) -> Method:
    """A table computed once per set of complete runs (the cache is cleared when they change), whatever mix of
    positional and keyword arguments asks for it; callers get a copy they may modify. The pages call these
    methods directly: a renamed method fails where it is called."""
    signature = inspect.signature(method)

    @functools.wraps(method)
    def wrapper(self: RunReader, *args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        key = (method.__name__, *tuple(bound.arguments.values())[1:])
        self._runs_frame()  # clears the cache when the complete runs changed
        value = self._cached(key, lambda: self._disk.get(key, self._data_signature(),
                                                         lambda: method(self, *args, **kwargs)))
        return value.copy() if isinstance(value, pd.DataFrame) else copy.deepcopy(value)

    return wrapper  # type: ignore[return-value]


def _default_registry(runs: pd.DataFrame) -> str:
    if runs.empty or (runs["registry_name"] == DEFAULT_REGISTRY).any():
        return DEFAULT_REGISTRY
    return str(runs.sort_values("id")["registry_name"].iloc[-1])


class RunReader(StoreSummary):
    """One results database's runs, read-only, and the selected runs' rows, cached."""

    def __init__(self, url: str, cache_dir: Path | None = None, registry: str | None = None) -> None:
        """`cache_dir`: where tables are kept between processes (core.analysis.disk_memo); None keeps none.
        `registry`: the registry whose runs every table is computed from (core.registries): a store may hold the
        study on several, and runs of two registries are never mixed in one table. None: the default registry
        when the store has runs of it, else the registry of its latest run (a store of one registry reads whole)."""
        super().__init__(url, cache_dir)
        self.registry = registry
        self._signature: tuple | None = None
        self._cache: dict[tuple, Any] = {}
        self._fingerprint: tuple | None = None
        self._complete: tuple[int, ...] | None = None
        self._runs = pd.DataFrame(columns=RUNS_TABLE.names)

    def _runs_frame(self) -> pd.DataFrame:
        """Every run, re-read when the runs or results tables changed; tables computed from complete
        runs stay cached until the set of complete runs changes (a bench writing elsewhere does not)."""
        engine, _ = self._check()
        if engine is None:
            return pd.DataFrame(columns=RUNS_TABLE.names)
        with engine.connect() as conn:
            fingerprint = store_fingerprint(conn)
            with self._lock:
                if fingerprint == self._fingerprint:
                    return self._runs
            every = stored_rows.load_runs(conn)
        frame = every[every["registry_name"] == (self.registry or _default_registry(every))]
        complete = tuple(every.loc[every["status"] == "complete", "id"].tolist())  # any registry's: a cache key
        with self._lock:
            if complete != self._complete:
                self._cache.clear()
                self._complete = complete
                self._signature = None
            self._runs, self._fingerprint = frame, fingerprint
        return frame

    def _data_signature(self) -> tuple:
        """What the tables are computed from: this database (shown without its password, and when its schema was
        created) and each complete run as it finished; the key of the tables kept on disk."""
        with self._lock:
            if self._signature is not None:
                return self._signature
            runs = self._runs
        created = stored_rows.created_at(self._check()[0])
        done = runs[runs["status"] == "complete"]
        signature = (shown(self.url), self.registry, iso_time(created), tuple(zip(done["id"].astype(int),
                                                                   done["finished_at"].map(iso_time),
                                                                   done["n_results"].astype(int),
                                                                   done["failed_rows"].astype(int))))
        with self._lock:
            self._signature = signature
        return signature

    def _cached(self, key: tuple, compute: Callable[[], Any]) -> Any:
        """The value under key, computed once (the cache is cleared when the complete runs change)."""
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        value = compute()
        with self._lock:
            self._cache[key] = value
        return value

    def _selected(self, kind: str, backend: str | None = None) -> pd.DataFrame:
        """The latest complete runs of `kind` in the chosen setup, one per configuration (select_runs)."""
        runs = self._runs_frame()
        return self._cached(("selected", kind, backend), lambda: select_runs(runs, kind, backend))

    def _main_k(self, backend: str | None) -> int | None:
        main = self._selected("main", backend)
        return int(main["k"].iloc[0]) if len(main) else None

    def _rows(self, runs: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
        """Per-query rows of these runs (stored_rows.load_rows)."""
        ids = tuple(runs["id"].tolist())
        return self._cached(("rows", ids, tuple(columns)),
                            lambda: stored_rows.load_rows(self._connect(), runs, ids, columns))

    def _per_run(self, runs: pd.DataFrame, gold: str | None = None) -> pd.DataFrame:
        """Run means of these runs computed in SQL (stored_rows.load_per_run)."""
        ids = tuple(runs["id"].tolist())
        return self._cached(("per_run", ids, gold), lambda: stored_rows.load_per_run(self._connect(), runs, ids, gold))

    def _main(self, backend: str | None, columns: Sequence[str]) -> pd.DataFrame:
        return self._rows(self._selected("main", backend), columns)

    def available(self) -> bool:
        """The database exists, its schema is this code's, and at least one run is complete."""
        runs = self._runs_frame()
        return bool((runs["status"] == "complete").any())

    def complete_run_ids(self) -> tuple[int, ...]:
        """The complete runs' ids in the whole store (every registry's: the Overview compares registries), re-read
        when the store changed, so a cache keyed on them (the app's charts on PostgreSQL, which has no file to
        stat) is fresh."""
        self._runs_frame()
        with self._lock:
            return tuple(int(i) for i in self._complete or ())

    def status(self) -> dict[str, Any]:
        """What the store holds: available, error, schema_version, n_runs, n_complete, failed_rows, kinds {kind:
        complete runs}, backends [labels], created, first_started, last_finished, git_commit (the latest complete
        run's), git_commits."""
        engine, error = self._check()
        runs = self._runs_frame()
        complete = runs[runs["status"] == "complete"]
        created = stored_rows.created_at(engine)
        latest = complete.sort_values("id").iloc[-1] if len(complete) else None
        return {"available": len(complete) > 0, "error": error, "schema_version": SCHEMA_VERSION if engine else None,
                "n_runs": len(runs), "n_complete": len(complete), "failed_rows": int(complete["failed_rows"].sum()),
                "kinds": {str(k): int(v) for k, v in complete["kind"].value_counts().items()},
                "backends": sorted(complete["backend_label"].unique().tolist()),
                "created": iso_time(created),
                "first_started": iso_time(complete["started_at"].min()) if len(complete) else None,
                "last_finished": iso_time(complete["finished_at"].max()) if len(complete) else None,
                "git_commit": latest["git_commit"] if latest is not None else None,
                "git_commits": sorted(complete["git_commit"].unique().tolist())}

    def runs(self) -> pd.DataFrame:
        """Every stored run (table_schemas.RUNS_TABLE)."""
        return self._runs_frame().copy()

    @read_cached
    def backends(self) -> list[str]:
        """Systems with a complete main study, in name order, each with its own latest setup: a backend's name,
        or "backend:model" for each model of a backend that has studies of several (the local models)."""
        return self.systems()

    @read_cached
    def study_with(self, kind: str, backend: str | None = None) -> str | None:
        """The system whose runs of `kind` a page shows for the chosen study (DEFAULT_STUDY_RULE): the chosen one
        (None: the latest main study) when it has some, else the latest system that has complete runs of `kind`;
        "" when none has."""
        if not self._selected(kind, backend).empty:
            return backend
        runs = self._runs_frame()
        complete = runs[(runs["status"] == "complete") & (runs["kind"] == kind)]
        latest_first = sorted(system_keys(complete), key=lambda system: -of_system(complete, system)["id"].max())
        return next((system for system in latest_first if not self._selected(kind, system).empty), "")

    @read_cached
    def setup(self, backend: str | None = None) -> dict[str, Any] | None:
        """Provenance of the selected main study, what every table describes: registry_name, registry_size,
        registry_hash, embedding_model, llm_backend, llm_model, backend_label, the prompt versions, git_commit, k,
        runs, subsets and planner_sample (None, or the sample the plans are of); None with no complete main study."""
        main = self._selected("main", backend)
        if main.empty:
            return None
        first = main.iloc[-1]
        return {**{c: plain(first[c]) for c in ("registry_name", "registry_size", "registry_hash", "embedding_model",
                                                "llm_backend", "llm_model", "backend_label",
                                                "discovery_prompt_version", "planner_prompt_version", "git_commit",
                                                "k")},
                "runs": int(main["run_index"].nunique()), "subsets": sorted(main["subset"].unique().tolist()),
                "planner_sample": planner_sample(main)}


def plain(value: Any) -> Any:
    """numpy scalars -> Python, so the dicts serialise as JSON."""
    if isinstance(value, np.generic):
        return value.item()
    return value


def iso_time(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NaT:
        return None
    return pd.Timestamp(value).isoformat()
