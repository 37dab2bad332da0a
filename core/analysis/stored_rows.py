"""What the reader's tables are computed from, read in bulk: the runs, their per-query rows and their run means
computed in SQL.

core.evaluation.run_means declares each run mean, in Python too.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import Float, Text, cast, func, select, type_coerce
from sqlalchemy.engine import Connection, Engine

from core.analysis.exact_mean import LIMBS, exact_mean, exact_sums
from core.analysis.table_schemas import RUNS_TABLE
from core.evaluation.run_means import RUN_MEANS, RunMean, trajectory_means
from core.store.schema import QueryResult, Run, SchemaInfo

COUNTED = ("n_results", "failed_rows")  # the runs table's columns counted from query_results, not stored on a run
RUN_COLUMNS = tuple(name for name in RUNS_TABLE.names if name not in COUNTED)
BOOL_COLUMNS = {"same_as_rtp", "plan_pass_api_list", "plan_pass_relevant", "stub_fallback", "plan_refusal",
                "plan_parse_error"}
JSON_COLUMNS = {"hits", "stubs", "plan", "plan_matched"}
TEXT_COLUMNS = {"subset", "query_uid", "error", "stub_error"}


def load_runs(conn: Connection) -> pd.DataFrame:
    """Every run (RUNS_TABLE) with its stored and failed rows counted."""
    rows = conn.execute(select(*(getattr(Run, c) for c in RUN_COLUMNS)).order_by(Run.id)).mappings().all()
    counts = {run_id: (n, failed) for run_id, n, failed in conn.execute(
        select(QueryResult.run_id, func.count(), func.count(QueryResult.error)).group_by(QueryResult.run_id))}
    frame = pd.DataFrame([dict(r) for r in rows], columns=list(RUN_COLUMNS))
    frame["n_results"] = [int(counts.get(i, (0, 0))[0]) for i in frame["id"]]
    frame["failed_rows"] = [int(counts.get(i, (0, 0))[1]) for i in frame["id"]]  # in no mean; --resume redoes them
    return frame


def created_at(engine: Engine | None) -> Any:
    """When the database's schema was created (None without one): part of what identifies a database."""
    if engine is None:
        return None
    with engine.connect() as conn:
        return conn.execute(select(SchemaInfo.created_at).where(SchemaInfo.id == 1)).scalar_one_or_none()


def load_rows(engine: Engine | None, runs: pd.DataFrame, ids: tuple, columns: Sequence[str]) -> pd.DataFrame:
    """Per-query rows (failed rows left out) of these runs, only `columns`, joined with the run keys kind, arch,
    run_index, sub_size, sub_seed; `stubs` JSON is flattened (see _stub_columns)."""
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


def load_per_run(engine: Engine | None, runs: pd.DataFrame, ids: tuple, gold: str | None) -> pd.DataFrame:
    """Run means computed in SQL: subset, arch, k, run_index, sub_size, sub_seed, the RUN_MEANS columns (and with
    `gold`, the trajectory_means columns), n, n_planned (rows with a plan: fewer with a planner sample)."""
    means = [*RUN_MEANS.values(), *(trajectory_means(gold).values() if gold else ())]
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
    """One run's means from its row of `load_per_run`: LIMBS sums and a count for each fractional mean, one
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
