"""App-side read API over the results store: what the dashboard pages call, and nothing else.

Reads only the database (never the registry, the data directory or a model), creates nothing, and
caches every table per set of complete runs (`read_cached`), so a page renders from the committed
database in milliseconds; callers get copies.
Every table comes from the latest complete runs of one *setup*: registry hash, embedding model,
LLM backend and model, prompt versions. The default setup is that of the most recently started
complete main run (optionally of one `backend`), or with no main study, that of the study's own latest
complete run; runs of other setups are never mixed in. Within
it, for each configuration (kind, arch, subset, k, run index, sub-registry size and seed) the
latest complete run counts.

`ResultsReader(url)`:
- `available() -> bool`: the database exists, its schema is this code's, and >= 1 run is complete.
- `status() -> dict`: available, error, schema_version, n_runs, n_complete, kinds {kind: complete
  runs}, backends [labels], created, first_started, last_finished, git_commit (latest complete
  run's), git_commits.
- `runs() -> DataFrame`: one row per run: id, kind, arch, subset, k, run_index, registry_name,
  registry_size, registry_hash, sub_size, sub_seed, embedding_model, llm_backend, llm_model,
  backend_label, discovery_prompt_version, planner_prompt_version, source_run_id, git_commit,
  n_queries, status, note, config (dict), started_at, finished_at, n_results.
- `main_table(gold="api_list", backend=None)`: subset, metric (recall / precision /
  pass_rate_proxy), rtp_mean, rtp_std, ptr_mean, ptr_std, p_value, test, better (rtp/ptr/tie, by
  the means), n_queries, runs. p_value is NaN (test says why) when runs have no variance.
- `per_query(subset=None, gold="api_list", k=5)`: subset, query_id, rtp_recall, ptr_recall,
  rtp_precision, ptr_precision, recall_diff (ptr - rtp), outcome (rtp_wins / ptr_wins / tie /
  both_miss), rtp_top1, n_stubs, stub_names (", "-joined), stub_fallback, diverging. Recall and
  precision are means over runs; rtp_top1 and the stub columns are run 0's. k other than the main
  k comes from the k sweep.
- `query_detail(subset, query_id, k=5) -> QueryOutcome | None`: run 0's stored outputs as the type
  `core.study.single_query.inspect_query` returns (core.study.query_result), with subset, query_id and
  provenance; each block marked under the default gold (api_list) and keeping the store's marks under the
  others, its plan's pass and no retrieval time (the studies retrieve in batches). None when neither RtP nor
  PtR is stored. `plan` is None for k-sweep rows (the planner runs in the main study only). When the stub
  writer failed, PtR searched with the raw query; that stub (and the hits' `stub`) is stored as
  core.study.rows.FALLBACK_STUB, since the store never holds query texts: show the query from the data
  directory instead.
- `ksweep(gold)`: subset, arch, k, recall_mean, recall_std, precision_mean, precision_std, runs,
  n_queries. `scaling(gold)`: subset, size, arch, recall_mean, recall_std,
  divergence_not_identical, divergence_disjoint, precision_mean, precision_std, runs (seeds),
  n_queries, gold_share (the subset's gold APIs, both definitions, as a share of the
  sub-registry: every sub-registry holds all of them, so small sizes are mostly gold). `scaling_notes()`: subset, size, note (sizes skipped, with the reason).
  `distractors(gold)`: scaling's columns for the distractor-scale study, plus synthetic_distractors (0 at the
  real registry) and registry ("real" or "real + synthetic distractors"): sizes above the real registry are
  SYNTHETIC (core.retrieval.synthetic) and every view labels them so.
- `stub_stats()`: subset, queries, share_with_stubs, stubs_per_query, unique_name_rate,
  top1_match_rate, top1_match_rate_relevant, cosine_correct, cosine_incorrect, runs.
  `stub_cosines()`: subset, query_id, stub, cosine, correct (top-1 is api_list gold),
  correct_relevant.
- `brand_name_losses(subset=None)`: per_query rows (on the `relevant` gold, ToolBench's ~2-3
  APIs per query, where "RtP finds all of it" is attainable at k=5) with PtR recall 0 and RtP
  recall 1. `decomposition_wins(subset=None, gold="api_list")`: PtR recall > RtP recall and >= 2
  stubs.
- `trajectory(gold)`: subset, arch, fidelity, selection_rate, steps, apis_named, refusal_rate,
  parse_error_rate, complete_miss_rate, wrong_tool_rate, refusal_on_miss, planner_jaccard, runs.
- `replies()`: run 0's stub and plan texts (subset, query_id, arch, stub_fallback, stub_names, stub_reasonings,
  plan), for the copy rate (core.analysis.copying).
- `planned_counts()`: per subset, how many of run 0's PtR rows were planned.
- `cost()`: subset, n_queries, n_planned, rtp_tokens, ptr_tokens, ptr_discovery_tokens,
  ptr_discovery_output_tokens, ptr_planner_tokens, ptr_overhead, {rtp,ptr}_{prompt,output,
  thoughts}_tokens (means per query). `routing_savings() -> dict`.
- `divergence()`: subset, not_identical, not_identical_std, disjoint, disjoint_std, runs.
  `win_counts(gold)`: subset, rtp_wins, ptr_wins, tie, both_miss, n_queries, n_diverging,
  rtp_recall_diverging, ptr_recall_diverging. `search_width()`: subset, arch, k, mean, median, max.
- `study_table(kind, gold)`: any study's runs per subset, arch and k: recall and precision mean and std over
  runs, runs, n_queries (the report's and the Results page's view of a study without a table of its own).
- `paired_tests(gold, k)`: per subset, the paired per-query tests of RtP vs PtR (analysis.tables.paired_tests).
- `hybrid_table(gold)`: the hybrid (beyond the paper) beside RtP and PtR at the main k, per subset and overall.
- `study_with(kind, backend=None) -> str | None`: the system a page shows for `kind` (DEFAULT_STUDY_RULE); "" when
  no study has runs of that kind.
- `hybrid_per_query(gold)`: subset, query_id, hybrid_recall, hybrid_precision.
- `backends() -> list[str]`: systems with a complete main study (a backend, or "backend:model" where a backend has
  studies of several models; every `backend=` argument takes either). `leaderboard(gold)`: system, arch, subset,
  recall and precision with bootstrap 95% intervals, n and provenance for every backend's latest study (the paper's rows: core.analysis.report.leaderboard).
- `router_table(gold, k)`, `router_curve(gold, k)`, `router_fit(gold, k) -> dict`, `router_signal(gold, k) ->
  dict`: the adaptive router on RtP's top-1 cosine (beyond the paper; cross-validated, see analysis.router).
- `setup(backend=None) -> dict | None`: provenance of the selected main study (registry_name,
  registry_size, registry_hash, embedding_model, llm_backend, llm_model, backend_label, prompt
  versions, git_commit, k, runs, subsets, planner_sample: None, or the sample the plans are of); None when no
  main study is complete.
Every table method also takes `backend=None` to pick another backend's setup. Empty frames keep
their columns when nothing is stored.
"""
from __future__ import annotations

import copy
import functools
import inspect
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd
from sqlalchemy import Float, Text, cast, func, select, type_coerce
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from core.analysis.exact_mean import LIMBS, exact_mean, exact_sums
from core.analysis.provenance import provenance
from core.analysis.store_summary import StoreSummary, system_names
from core.analysis import tables as analysis, router
from core.archs import PAPER_ARCHS
from core.store.dburl import shown
from core.study.query_result import ArchResult, QueryOutcome
from core.evaluation.run_means import RUN_MEANS, RunMean, trajectory_means
from core.store.store import SCHEMA_VERSION, QueryResult, Run, SchemaInfo, store_fingerprint

SETUP_FIELDS = ("registry_hash", "embedding_model", "llm_backend", "llm_model", "discovery_prompt_version",
                "planner_prompt_version")
CONFIG_FIELDS = ("kind", "arch", "subset", "k", "run_index", "sub_size", "sub_seed")
RUN_COLUMNS = ("id", "kind", "arch", "subset", "k", "run_index", "registry_name", "registry_size", "registry_hash",
               "sub_size", "sub_seed", "embedding_model", "llm_backend", "llm_model", "backend_label",
               "discovery_prompt_version", "planner_prompt_version", "source_run_id", "git_commit", "n_queries",
               "status", "note", "config", "started_at", "finished_at")
BOOL_COLUMNS = {"same_as_rtp", "plan_pass_api_list", "plan_pass_relevant", "stub_fallback", "plan_refusal",
                "plan_parse_error"}
JSON_COLUMNS = {"hits", "stubs", "plan", "plan_matched"}
TEXT_COLUMNS = {"subset", "query_uid", "error", "stub_error"}
GOLD_SCORES = ("recall_api_list", "precision_api_list", "recall_relevant", "precision_relevant")
PER_QUERY_SOURCE = ("subset", "query_id", *GOLD_SCORES, "same_as_rtp")
STUB_SOURCE = ("subset", "query_id", "stub_fallback", "stubs")
JACCARD_SOURCE = ("subset", "query_id", "plan_matched")
REPLY_SOURCE = ("subset", "query_id", "stub_fallback", "stubs", "plan")
COST_SOURCE = ("subset", "query_id", "plan_refusal", "stub_prompt_tokens", "stub_output_tokens", "stub_thoughts_tokens",
               "plan_prompt_tokens", "plan_output_tokens", "plan_thoughts_tokens")
PER_QUERY_COLUMNS = ["subset", "query_id", "rtp_recall", "ptr_recall", "rtp_precision", "ptr_precision", "recall_diff",
                     "outcome", "rtp_top1", "n_stubs", "stub_names", "stub_fallback", "diverging"]


def _parse_json(values: list[Any]) -> list[Any]:
    """Stored JSON texts in one bulk parse (SQLite hands back text; 4x faster than one parse each);
    values a driver already decoded (PostgreSQL's json) are kept."""
    if all(v is None or isinstance(v, str) for v in values):
        return json.loads("[" + ",".join("null" if v is None else v for v in values) + "]")
    return [json.loads(v) if isinstance(v, str) else v for v in values]


def _stub_columns(stubs: Sequence[list | None]) -> dict[str, list]:
    out: dict[str, list] = {"n_stubs": [], "stub_names": [], "stub_reasonings": [], "stub_top1": []}
    for items in stubs:
        out["n_stubs"].append(len(items) if items is not None else np.nan)
        out["stub_names"].append([s["name"] for s in items] if items is not None else None)
        out["stub_reasonings"].append([s.get("reasoning", "") for s in items] if items is not None else None)
        out["stub_top1"].append([(s["top1"]["score"], s["top1"]["gold"], s["top1"]["gold_relevant"])
                                 for s in items if "top1" in s] if items is not None else None)
    return out


def _run_means(values: Sequence[Any], means: Sequence[RunMean]) -> list[float]:
    """One run's means from its row of `_load_per_run`: LIMBS sums and a count for each fractional mean, one
    AVG for every other."""
    out: list[float] = []
    i = 0
    for mean in means:
        if mean.fractional:
            out.append(exact_mean(values[i:i + LIMBS], values[i + LIMBS]))
            i += LIMBS + 1
        else:
            out.append(values[i])
            i += 1
    return out


Method = TypeVar("Method", bound=Callable[..., Any])


def read_cached(method: Method) -> Method:
    """A ResultsReader table computed once per set of complete runs (the cache is cleared when they
    change), whatever mix of positional and keyword arguments asks for it; callers get a copy they may
    modify. The pages call these methods directly: a renamed method fails where it is called."""
    signature = inspect.signature(method)

    @functools.wraps(method)
    def wrapper(self: ResultsReader, *args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        key = (method.__name__, *tuple(bound.arguments.values())[1:])
        self._runs_frame()  # clears the cache when the complete runs changed
        value = self._cached(key, lambda: self._disk.get(key, self._data_signature(),
                                                         lambda: method(self, *args, **kwargs)))
        return value.copy() if isinstance(value, pd.DataFrame) else copy.deepcopy(value)

    return wrapper  # type: ignore[return-value]


class ResultsReader(StoreSummary):
    """Read-only view of one results database for the pages, the report and the CLI."""

    def __init__(self, url: str, cache_dir: Path | None = None) -> None:
        """`cache_dir`: where tables are kept between processes (core.analysis.disk_memo); None keeps none."""
        super().__init__(url, cache_dir)
        self._signature: tuple | None = None
        self._cache: dict[tuple, Any] = {}
        self._fingerprint: tuple | None = None
        self._complete: tuple[int, ...] | None = None
        self._runs = pd.DataFrame(columns=[*RUN_COLUMNS, "n_results", "failed_rows"])

    # ------------------------------------------------------------ connection and runs

    def _runs_frame(self) -> pd.DataFrame:
        """Every run, re-read when the runs or results tables changed; tables computed from complete
        runs stay cached until the set of complete runs changes (a bench writing elsewhere does not)."""
        engine, error = self._check()
        if engine is None:
            return pd.DataFrame(columns=[*RUN_COLUMNS, "n_results", "failed_rows"])
        with engine.connect() as conn:
            fingerprint = store_fingerprint(conn)
            with self._lock:
                if fingerprint == self._fingerprint:
                    return self._runs
            rows = conn.execute(select(*(getattr(Run, c) for c in RUN_COLUMNS)).order_by(Run.id)).mappings().all()
            counts = {run_id: (n, failed) for run_id, n, failed in conn.execute(
                select(QueryResult.run_id, func.count(), func.count(QueryResult.error)).group_by(QueryResult.run_id))}
        frame = pd.DataFrame([dict(r) for r in rows], columns=list(RUN_COLUMNS))
        frame["n_results"] = [int(counts.get(i, (0, 0))[0]) for i in frame["id"]]
        frame["failed_rows"] = [int(counts.get(i, (0, 0))[1]) for i in frame["id"]]  # in no mean; --resume redoes them
        complete = tuple(frame.loc[frame["status"] == "complete", "id"].tolist())
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
        created = _created_at(self._check()[0])
        done = runs[runs["status"] == "complete"]
        signature = (shown(self.url), _iso(created), tuple(zip(done["id"].astype(int), done["finished_at"].map(_iso),
                                                              done["n_results"].astype(int),
                                                              done["failed_rows"].astype(int))))
        with self._lock:
            self._signature = signature
        return signature

    def available(self) -> bool:
        runs = self._runs_frame()
        return bool((runs["status"] == "complete").any())

    def complete_run_ids(self) -> tuple[int, ...]:
        """The complete runs' ids, re-read when the store changed: what every table is computed from, so a
        cache keyed on them (the app's charts on PostgreSQL, which has no file to stat) is fresh."""
        runs = self._runs_frame()
        return tuple(int(i) for i in runs.loc[runs["status"] == "complete", "id"])

    def status(self) -> dict[str, Any]:
        engine, error = self._check()
        runs = self._runs_frame()
        complete = runs[runs["status"] == "complete"]
        created = _created_at(engine)
        latest = complete.sort_values("id").iloc[-1] if len(complete) else None
        return {"available": len(complete) > 0, "error": error, "schema_version": SCHEMA_VERSION if engine else None,
                "n_runs": len(runs), "n_complete": len(complete), "failed_rows": int(complete["failed_rows"].sum()),
                "kinds": {str(k): int(v) for k, v in complete["kind"].value_counts().items()},
                "backends": sorted(complete["backend_label"].unique().tolist()),
                "created": _iso(created), "first_started": _iso(complete["started_at"].min()) if len(complete) else None,
                "last_finished": _iso(complete["finished_at"].max()) if len(complete) else None,
                "git_commit": latest["git_commit"] if latest is not None else None,
                "git_commits": sorted(complete["git_commit"].unique().tolist())}

    def runs(self) -> pd.DataFrame:
        return self._runs_frame().copy()

    def _selected(self, kind: str, backend: str | None = None) -> pd.DataFrame:
        """The latest complete runs of `kind` in the chosen setup, one per configuration."""
        runs = self._runs_frame()
        return self._cached(("selected", kind, backend), lambda: self._select(runs, kind, backend))

    def _cached(self, key: tuple, compute) -> Any:
        """The value under key, computed once (the cache is cleared when the complete runs change)."""
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        value = compute()
        with self._lock:
            self._cache[key] = value
        return value

    @staticmethod
    def _select(runs: pd.DataFrame, kind: str, backend: str | None) -> pd.DataFrame:
        complete = runs[runs["status"] == "complete"]
        if backend is None:
            backend = widest_study(complete[complete["kind"] == "main"])
        mains = of_system(complete[complete["kind"] == "main"], backend)
        if mains.empty:  # a study that does not build on the main one: its own latest setup
            mains = of_system(complete[complete["kind"] == kind], backend)
        if mains.empty:
            return complete.iloc[0:0]
        anchor = mains.sort_values("id").iloc[-1]
        mask = np.logical_and.reduce([complete[f] == anchor[f] for f in SETUP_FIELDS])
        chosen = complete[mask & (complete["kind"] == kind)]
        if kind == "main":
            chosen = chosen[chosen["k"] == anchor["k"]]
        chosen = chosen.sort_values("id").groupby(list(CONFIG_FIELDS), dropna=False, sort=False).tail(1)
        return chosen.sort_values("id")

    def _main_k(self, backend: str | None) -> int | None:
        main = self._selected("main", backend)
        return int(main["k"].iloc[0]) if len(main) else None

    def _rows(self, runs: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
        """Per-query rows (failed rows left out) of these runs, only `columns`, joined with the run keys
        kind, arch, run_index, sub_size, sub_seed; `stubs` JSON is flattened (see _stub_columns)."""
        ids = tuple(runs["id"].tolist())
        return self._cached(("rows", ids, tuple(columns)), lambda: self._load_rows(runs, ids, columns))

    def _load_rows(self, runs: pd.DataFrame, ids: tuple, columns: Sequence[str]) -> pd.DataFrame:
        engine = self._connect()
        data: list = []
        if engine is not None and ids:
            selected = [type_coerce(getattr(QueryResult, c), Text) if c in JSON_COLUMNS else getattr(QueryResult, c)
                        for c in columns]
            # In the order they were stored, on every store: the tables' sums then add them up alike.
            query = (select(QueryResult.run_id, *selected)
                     .where(QueryResult.run_id.in_(ids), QueryResult.error.is_(None)).order_by(QueryResult.id))
            with engine.connect() as conn:
                data = conn.execute(query).all()
        names = ["run_id", *columns]
        # Column-wise construction: pandas inspects every row object otherwise (10x slower on Row).
        values = [list(col) for col in zip(*data)] if data else [[] for _ in names]
        for i, name in enumerate(names):
            if name in JSON_COLUMNS:
                values[i] = _parse_json(values[i])
        frame = pd.DataFrame({name: pd.Series(col, dtype=object) for name, col in zip(names, values)})
        for name in columns:
            if name not in BOOL_COLUMNS and name not in JSON_COLUMNS and name not in TEXT_COLUMNS:
                frame[name] = pd.to_numeric(frame[name], errors="coerce")
        meta = runs[["id", "kind", "arch", "run_index", "sub_size", "sub_seed"]].rename(columns={"id": "run_id"})
        frame = frame.merge(meta, on="run_id", how="left")
        if "stubs" in columns:
            frame = frame.drop(columns=["stubs"]).assign(**_stub_columns(frame["stubs"].tolist()))
        return frame

    def _per_run(self, runs: pd.DataFrame, gold: str | None = None) -> pd.DataFrame:
        """Run means computed in SQL (core.evaluation.run_means declares each, in Python too): subset, arch, k,
        run_index, sub_size, sub_seed, the RUN_MEANS columns (and with `gold`, the trajectory_means columns), n,
        n_planned (rows with a plan: fewer with a planner sample)."""
        ids = tuple(runs["id"].tolist())
        return self._cached(("per_run", ids, gold), lambda: self._load_per_run(runs, ids, gold))

    def _load_per_run(self, runs: pd.DataFrame, ids: tuple, gold: str | None) -> pd.DataFrame:
        means = [*RUN_MEANS.values(), *(trajectory_means(gold).values() if gold else ())]
        engine = self._connect()
        data: list = []
        if engine is not None and ids:
            parts: list = []
            for mean in means:
                expr = mean.sql(QueryResult)
                parts += [*exact_sums(expr), func.count(expr)] if mean.fractional else [func.avg(cast(expr, Float))]
            query = (select(QueryResult.run_id, func.count(), func.count(QueryResult.plan_refusal), *parts)
                     .where(QueryResult.run_id.in_(ids), QueryResult.error.is_(None)).group_by(QueryResult.run_id))
            with engine.connect() as conn:
                data = conn.execute(query).all()
        names = [mean.name for mean in means]
        frame = pd.DataFrame([(run_id, *_run_means(values, means), n, planned) for run_id, n, planned, *values in data],
                             columns=["run_id", *names, "n", "n_planned"])
        for name in names:
            frame[name] = frame[name].astype(float)
        meta = runs[["id", "subset", "arch", "k", "run_index", "sub_size", "sub_seed"]].rename(columns={"id": "run_id"})
        return meta.merge(frame, on="run_id", how="inner")

    def _main(self, backend: str | None, columns: Sequence[str]) -> pd.DataFrame:
        return self._rows(self._selected("main", backend), columns)

    # ------------------------------------------------------------ tables

    @read_cached
    def study_table(self, kind: str, gold: str = "api_list", backend: str | None = None) -> pd.DataFrame:
        """Any study's runs as subset, arch, k, recall and precision mean±std over runs, runs, n_queries: what
        the report and the Results page show for a study that has no table of its own."""
        return analysis.sweep_table(self._per_run(self._selected(kind, backend)), gold, ("subset", "arch", "k"))

    @read_cached
    def main_table(self, gold: str = "api_list", backend: str | None = None) -> pd.DataFrame:
        return analysis.main_table(self._per_run(self._selected("main", backend)), gold)

    def _runs_at_k(self, k: int, backend: str | None) -> pd.DataFrame:
        if k == self._main_k(backend):
            return self._selected("main", backend)
        sweep = self._selected("ksweep", backend)
        return sweep[sweep["k"] == k]

    @read_cached
    def per_query(self, subset: str | None = None, gold: str = "api_list", k: int = 5,
                  backend: str | None = None) -> pd.DataFrame:
        return self._per_query(subset, gold, k, backend)

    def _per_query(self, subset: str | None, gold: str, k: int, backend: str | None) -> pd.DataFrame:
        runs = self._runs_at_k(k, backend)
        if subset is not None:
            runs = runs[runs["subset"] == subset]
        pq = analysis.per_query(self._rows(runs, PER_QUERY_SOURCE), gold)
        if pq.empty:
            return pd.DataFrame(columns=PER_QUERY_COLUMNS)
        run0 = runs[runs["run_index"] == 0]
        rtp0 = self._rows(run0[run0["arch"] == "rtp"], ("subset", "query_id", "top1_score"))
        ptr0 = self._rows(run0[run0["arch"] == "ptr"], ("subset", "query_id", "stub_fallback", "stubs"))
        rtp0, ptr0 = rtp0.set_index(["subset", "query_id"]), ptr0.set_index(["subset", "query_id"])
        idx = list(zip(pq["subset"], pq["query_id"]))
        pq["rtp_top1"] = rtp0["top1_score"].reindex(idx).to_numpy(dtype=float)
        pq["n_stubs"] = ptr0["n_stubs"].reindex(idx).to_numpy(dtype=float)
        names = ptr0["stub_names"].reindex(idx).tolist()
        pq["stub_names"] = [", ".join(n) if isinstance(n, list) else "" for n in names]
        pq["stub_fallback"] = ptr0["stub_fallback"].reindex(idx).tolist()
        return pq[PER_QUERY_COLUMNS].reset_index(drop=True)

    @read_cached
    def paired_tests(self, gold: str = "api_list", k: int = 5, backend: str | None = None) -> pd.DataFrame:
        """Paired per-query tests of RtP vs PtR per subset (see analysis.paired_tests)."""
        return analysis.paired_tests(self.per_query(None, gold, k, backend))

    @read_cached
    def query_detail(self, subset: str, query_id: int, k: int = 5, backend: str | None = None) -> QueryOutcome | None:
        if k == self._main_k(backend):  # the main runs, and the hybrid's when it ran on them
            runs = pd.concat([self._selected("main", backend), self._selected("hybrid", backend)])
            runs = runs[(runs["subset"] == subset) & (runs["run_index"] == 0)]
            widest = runs
        else:  # the k sweep stores hits at its largest k only; a smaller k's hits are their prefix
            sweep = self._selected("ksweep", backend)
            sweep = sweep[(sweep["subset"] == subset) & (sweep["run_index"] == 0)]
            runs = sweep[sweep["k"] == k]
            widest = sweep[sweep["k"] == sweep["k"].max()] if len(sweep) else sweep
        engine = self._connect()
        if engine is None or runs.empty:
            return None
        ids = sorted(set(runs["id"].tolist()) | set(widest["id"].tolist()))
        with Session(engine) as session:
            found = session.scalars(select(QueryResult).where(QueryResult.run_id.in_(ids),
                                                              QueryResult.query_uid == f"{subset}:{int(query_id)}")
                                    ).all()
        by_run = {r.run_id: r for r in found}
        hits_by_arch = {arch: by_run[i].hits for arch, i in zip(widest["arch"], widest["id"])
                        if i in by_run and by_run[i].hits is not None}
        blocks = []
        for _, run in runs.iterrows():
            row = by_run.get(run["id"])
            if row is None or row.error is not None:
                continue
            hits = row.hits if row.hits is not None else (hits_by_arch.get(run["arch"]) or [])[:k]
            blocks.append(ArchResult.stored(row, run, hits))
        if not any(b.arch in PAPER_ARCHS for b in blocks):
            return None
        first = runs.iloc[0]
        out = QueryOutcome(k, subset=subset, query_id=int(query_id), provenance={**{c: _plain(first[c]) for c in (
            "kind", "registry_name", "registry_size", "registry_hash", "embedding_model", "llm_backend", "llm_model",
            "backend_label", "discovery_prompt_version", "planner_prompt_version", "git_commit")},
            "run_ids": {a: int(i) for a, i in zip(runs["arch"], runs["id"])},
            "started_at": _iso(runs["started_at"].min()), "finished_at": _iso(runs["finished_at"].max())})
        for block in blocks:
            out = out.with_block(block)
        return out

    @read_cached
    def hybrid_table(self, gold: str = "api_list", backend: str | None = None) -> pd.DataFrame:
        """Hybrid discovery (beyond the paper) beside RtP and PtR at the main k, per subset and overall."""
        def compute() -> pd.DataFrame:
            runs, k = self._selected("hybrid", backend), self._main_k(backend)
            if runs.empty or k is None:
                return pd.DataFrame(columns=analysis.HYBRID_COLUMNS)
            return analysis.hybrid_table(self.per_query(None, gold, k, backend),
                                         self._rows(runs, ("subset", "query_id", *GOLD_SCORES)), gold)
        return compute()

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
    def hybrid_per_query(self, gold: str = "api_list", backend: str | None = None) -> pd.DataFrame:
        """subset, query_id, hybrid_recall, hybrid_precision: each query's mean over the hybrid's runs."""
        rows = self._rows(self._selected("hybrid", backend), ("subset", "query_id", *GOLD_SCORES))
        return analysis.hybrid_per_query(rows, gold)

    @read_cached
    def backends(self) -> list[str]:
        """Systems with a complete main study, in name order, each with its own latest setup: a backend's name,
        or "backend:model" for each model of a backend that has studies of several (the local models)."""
        return self.systems()

    @read_cached
    def leaderboard(self, gold: str = "api_list") -> pd.DataFrame:
        """analysis.LEADERBOARD_COLUMNS for every backend's latest study: system (its backend label), arch
        (rtp, ptr, hybrid), subset, recall and precision at the main k with bootstrap 95% intervals over
        queries, n queries, provenance. The paper's rows are added by core.analysis.report.leaderboard
        (this reader reads the database only)."""
        def compute() -> pd.DataFrame:
            parts = []
            for backend in self.backends():
                setup = self.setup(backend) or {}
                k = int(setup.get("k") or 5)
                parts.append(analysis.leaderboard_rows(setup.get("backend_label", backend),
                                                       provenance(setup, gold),
                                                       self.per_query(None, gold, k, backend),
                                                       self.hybrid_per_query(gold, backend)))
            return (pd.concat(parts, ignore_index=True) if parts
                    else pd.DataFrame(columns=analysis.LEADERBOARD_COLUMNS))
        return compute()

    @read_cached
    def ksweep(self, gold: str = "api_list", backend: str | None = None) -> pd.DataFrame:
        return analysis.ksweep_table(self._per_run(self._selected("ksweep", backend)), gold)

    @read_cached
    def scaling(self, gold: str = "api_list", backend: str | None = None) -> pd.DataFrame:
        return self._scaling(gold, backend)

    def _scaling(self, gold: str, backend: str | None) -> pd.DataFrame:
        runs = self._selected("scaling", backend)
        table = analysis.scaling_table(self._per_run(runs), gold)
        gold_apis = {(s, int(z)): (c or {}).get("gold_apis") for s, z, c in zip(runs["subset"], runs["sub_size"],
                                                                                 runs["config"])}
        table["gold_share"] = [(gold_apis.get((s, z)) or math.nan) / z for s, z in zip(table["subset"], table["size"])]
        return table

    @read_cached
    def distractors(self, gold: str = "api_list", backend: str | None = None) -> pd.DataFrame:
        runs = self._selected("distractors", backend)
        table = analysis.scaling_table(self._per_run(runs), gold)
        added = {int(z): (c or {}).get("synthetic_distractors") for z, c in zip(runs["sub_size"], runs["config"])}
        table["synthetic_distractors"] = [int(added.get(int(z)) or 0) for z in table["size"]]
        table["registry"] = np.where(table["synthetic_distractors"] > 0, "real + synthetic distractors", "real")
        return table

    @read_cached
    def scaling_notes(self, backend: str | None = None) -> pd.DataFrame:
        runs = self._runs_frame()
        anchor = self._selected("main", backend)
        skipped = runs[(runs["kind"] == "scaling") & (runs["status"] == "skipped")]
        if len(anchor):
            first = anchor.iloc[0]
            skipped = skipped[np.logical_and.reduce([skipped[f] == first[f] for f in SETUP_FIELDS])]
        out = skipped.rename(columns={"sub_size": "size"})[["subset", "size", "note"]].astype({"size": int})
        return out.drop_duplicates().reset_index(drop=True)

    @read_cached
    def stub_stats(self, backend: str | None = None) -> pd.DataFrame:
        return analysis.stub_stats(self._main(backend, STUB_SOURCE))

    @read_cached
    def stub_cosines(self, backend: str | None = None) -> pd.DataFrame:
        return analysis.stub_cosines(self._main(backend, STUB_SOURCE))

    @read_cached
    def brand_name_losses(self, subset: str | None = None, backend: str | None = None) -> pd.DataFrame:
        k = self._main_k(backend) or 5
        return analysis.brand_name_losses(self.per_query(subset, "relevant", k, backend)).reset_index(drop=True)

    @read_cached
    def decomposition_wins(self, subset: str | None = None, gold: str = "api_list",
                           backend: str | None = None) -> pd.DataFrame:
        k = self._main_k(backend) or 5
        pq = self.per_query(subset, gold, k, backend)
        return analysis.decomposition_wins(pq, pq["n_stubs"]).reset_index(drop=True)

    @read_cached
    def trajectory(self, gold: str = "api_list", backend: str | None = None) -> pd.DataFrame:
        runs = self._selected("main", backend)
        return analysis.trajectory(self._per_run(runs, gold), analysis.planner_jaccard(self._rows(runs, JACCARD_SOURCE)))

    @read_cached
    def replies(self, backend: str | None = None) -> pd.DataFrame:
        """Run 0's LLM replies in the main study: subset, query_id, arch, stub_fallback, stub_names and
        stub_reasonings (PtR's; None on RtP rows), plan (None where the planner did not run): what
        core.analysis.copying reads."""
        rows = self._main(backend, REPLY_SOURCE)
        columns = ["subset", "query_id", "arch", "stub_fallback", "stub_names", "stub_reasonings", "plan"]
        return rows.loc[rows["run_index"] == 0, columns].reset_index(drop=True)

    @read_cached
    def planned_counts(self, backend: str | None = None) -> dict[str, int]:
        """Per subset: how many of run 0's PtR rows the planner ran on (fewer than n with a planner sample)."""
        per_run = self._per_run(self._selected("main", backend))
        part = per_run[(per_run["arch"] == "ptr") & (per_run["run_index"] == 0)]
        return {str(subset): int(n) for subset, n in zip(part["subset"], part["n_planned"])}

    @read_cached
    def cost(self, backend: str | None = None) -> pd.DataFrame:
        return analysis.cost(self._main(backend, COST_SOURCE))

    @read_cached
    def routing_savings(self, backend: str | None = None) -> dict:
        return analysis.routing_savings(self.cost(backend))

    @read_cached
    def divergence(self, backend: str | None = None) -> pd.DataFrame:
        return analysis.divergence(self._per_run(self._selected("main", backend)))

    @read_cached
    def win_counts(self, gold: str = "api_list", backend: str | None = None) -> pd.DataFrame:
        k = self._main_k(backend) or 5
        return analysis.win_counts(self.per_query(None, gold, k, backend))

    # ------------------------------------------------------------ the adaptive router (beyond the paper)

    @read_cached
    def _router_cv(self, gold: str, k: int, backend: str | None) -> pd.DataFrame:
        return router.cross_validate(self.per_query(None, gold, k, backend))

    @read_cached
    def router_table(self, gold: str = "api_list", k: int = 5, backend: str | None = None) -> pd.DataFrame:
        """RtP, PtR, the cross-validated top-1-cosine router and the oracle, per subset and overall."""
        return router.router_table(self._router_cv(gold, k, backend))

    @read_cached
    def router_curve(self, gold: str = "api_list", k: int = 5, backend: str | None = None) -> pd.DataFrame:
        """Routed recall (all queries) against the threshold; in-sample, for the chart."""
        def compute() -> pd.DataFrame:
            pq = self.per_query(None, gold, k, backend).dropna(subset=["rtp_top1"])
            return router.threshold_curve(pq) if len(pq) else pd.DataFrame(columns=["threshold", "recall",
                                                                                   "share_to_ptr"])
        return compute()

    @read_cached
    def router_fit(self, gold: str = "api_list", k: int = 5, backend: str | None = None) -> dict:
        """The threshold fitted on every stored query (what the Inspector applies) and the per-fold
        thresholds behind the cross-validated figures. No scipy: the Inspector reads this on first load."""
        def compute() -> dict:
            pq = self.per_query(None, gold, k, backend).dropna(subset=["rtp_top1", "rtp_recall", "ptr_recall"])
            if pq.empty:
                return {}
            fit = router.fit_threshold(pq)
            cv = self._router_cv(gold, k, backend)
            return {"threshold": fit.threshold, "in_sample_recall": fit.recall, "share_to_ptr": fit.share_to_ptr,
                    "n": len(pq), "folds": router.FOLDS,
                    "fold_thresholds": sorted(set(cv["threshold"].round(6).tolist()))}
        return compute()

    @read_cached
    def router_signal(self, gold: str = "api_list", k: int = 5, backend: str | None = None) -> dict:
        """How much RtP's top-1 cosine says about which side wins (router.top1_signal)."""
        return router.top1_signal(self.per_query(None, gold, k, backend))

    @read_cached
    def search_width(self, backend: str | None = None) -> pd.DataFrame:
        return analysis.search_width(self._main(backend, ("subset", "query_id", "k", "search_width")))

    @read_cached
    def setup(self, backend: str | None = None) -> dict[str, Any] | None:
        """Provenance of the selected main study (what every table of this reader describes)."""
        main = self._selected("main", backend)
        if main.empty:
            return None
        first = main.iloc[-1]
        return {**{c: _plain(first[c]) for c in ("registry_name", "registry_size", "registry_hash", "embedding_model",
                                                 "llm_backend", "llm_model", "backend_label",
                                                 "discovery_prompt_version", "planner_prompt_version", "git_commit",
                                                 "k")},
                "runs": int(main["run_index"].nunique()), "subsets": sorted(main["subset"].unique().tolist()),
                "planner_sample": _planner_sample(main)}


def _planner_sample(main: pd.DataFrame) -> dict[str, Any] | None:
    """The planner sample the main runs were planned on ({per_subset, seed, stratified_by, strata}), or None when
    every query was planned."""
    samples = [c.get("planner_sample") for c in main["config"] if isinstance(c, dict) and c.get("planner_sample")]
    return samples[-1] if samples else None


def system_keys(runs: pd.DataFrame) -> list[str]:
    """The systems of these runs (see ResultsReader.backends)."""
    return system_names(runs[["llm_backend", "llm_model"]].itertuples(index=False, name=None))


def _created_at(engine: Engine | None) -> Any:
    """When the database's schema was created (None without one): part of what identifies a database."""
    if engine is None:
        return None
    with engine.connect() as conn:
        return conn.execute(select(SchemaInfo.created_at).where(SchemaInfo.id == 1)).scalar_one_or_none()


def widest_study(mains: pd.DataFrame) -> str | None:
    """DEFAULT_STUDY_RULE's system among these complete main runs: the most subsets, then the latest run; None when
    there are none (every system then, as before)."""
    if mains.empty:
        return None
    runs = {system: of_system(mains, system) for system in system_keys(mains)}
    return max(runs, key=lambda system: (runs[system]["subset"].nunique(), runs[system]["id"].max()))


def of_system(runs: pd.DataFrame, system: str | None) -> pd.DataFrame:
    """Runs of one system: None is every run, "backend" every model of that backend (its latest study wins),
    "backend:model" that model only."""
    if system is None:
        return runs
    backend, _, model = system.partition(":")
    mask = runs["llm_backend"] == backend
    return runs[mask & (runs["llm_model"] == model)] if model else runs[mask]


def _plain(value: Any) -> Any:
    """numpy scalars -> Python, so the dicts serialise as JSON."""
    if isinstance(value, np.generic):
        return value.item()
    return value


def _iso(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NaT:
        return None
    return pd.Timestamp(value).isoformat()
