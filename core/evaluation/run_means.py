"""Every per-run mean the studies report, declared once: each measure's per-query value in Python and in SQL.

A run's mean of a measure is the mean of its defined per-query values: an undefined value (None in Python,
NULL in SQL: recall with an empty gold set, a share on a row that was not compared) is skipped. The reader
computes the means in SQL over the stored rows (core.analysis.reader); `core eval` (core.evaluation.scoring) and
the tests compute them in Python over rows keyed by the store's column names. Both read the declarations
below; tests/test_report.py (a test study) and tests/test_stores_agree.py (every branch, on SQLite and PostgreSQL)
compute every one both ways and assert the same bits.

The Python mean is the correctly rounded mean of the values. The SQL gives the same: values in [0, 1] with
fractional bits (`fractional`) are summed exactly (core.analysis.exact_mean, which leaves out only bits below
2^-60), and AVG adds 0/1 shares and whole numbers exactly on every store.

The SQL expressions take the store's per-query model (core.store.schema.QueryResult) as an argument, so this
module depends on the store's column names only, not on the store.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from sqlalchemy import and_, case, null
from sqlalchemy.sql.elements import ColumnElement

from core.data.toolbench import GOLD_LIST, gold_definition

Row = Mapping[str, Any]  # one stored query result: column name -> value (None or NaN where missing)


@dataclass(frozen=True)
class RunMean:
    """One measure: `value` of one row in Python, `sql(QueryResult)` the same value over query_results."""

    name: str
    value: Callable[[Row], float | None]
    sql: Callable[[Any], ColumnElement]
    fractional: bool = False  # values in [0, 1] with fractional bits: summed exactly in SQL, where AVG is not

    def mean(self, rows: Iterable[Row]) -> float:
        return mean_of(self.value(row) for row in rows)


def mean_of(values: Iterable[float | None]) -> float:
    """The correctly rounded mean of the values that are not None, whatever their order; NaN without one."""
    defined = [Fraction(v) for v in values if v is not None]
    return float(sum(defined) / len(defined)) if defined else math.nan


def _defined(value: Any) -> bool:
    """Not missing: rows read through pandas hold NaN where the store holds NULL."""
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _number(name: str, fractional: bool = False) -> RunMean:
    """The mean of a stored number (a recall, a plan's step count)."""
    return RunMean(name, lambda row: float(row[name]) if _defined(row[name]) else None,
                   lambda table: getattr(table, name), fractional)


def _share(name: str, column: str, holds: Callable[[Any], bool],
           condition: Callable[[ColumnElement], ColumnElement]) -> RunMean:
    """The share of the rows whose `column` meets a condition (`holds` in Python, `condition` in SQL): 1.0 or
    0.0 per row, undefined where the column is NULL (PostgreSQL cannot AVG booleans)."""
    def sql(table: Any) -> ColumnElement:
        stored = getattr(table, column)
        return case((stored.is_(None), null()), (condition(stored), 1.0), else_=0.0)

    return RunMean(name, lambda row: float(holds(row[column])) if _defined(row[column]) else None, sql)


def _is_true(name: str, column: str) -> RunMean:
    return _share(name, column, bool, lambda stored: stored.is_(True))


RUN_MEANS: dict[str, RunMean] = {m.name: m for m in (
    *(_number(gold.column(score), fractional=True) for gold in GOLD_LIST for score in ("recall", "precision")),
    *(_number(gold.column("hit")) for gold in GOLD_LIST),
    *(_is_true(gold.column("plan_pass"), gold.column("plan_pass")) for gold in GOLD_LIST),
    _share("not_identical", "same_as_rtp", lambda same: not same, lambda stored: stored.is_(False)),
    _share("disjoint", "rtp_overlap", lambda overlap: overlap == 0, lambda stored: stored == 0),
    _number("plan_fidelity", fractional=True),
    _number("plan_selection_rate", fractional=True),
    _number("plan_steps"),
    _number("plan_apis_named"),
    _is_true("refusal", "plan_refusal"),
    _is_true("parse_error", "plan_parse_error"),
)}


def trajectory_means(gold: str) -> dict[str, RunMean]:
    """The planner measures that depend on a miss (a planned row whose recall under `gold` is 0): the share of
    planned rows that missed, and on misses only, the share where the planner still named an API or refused."""
    recall = gold_definition(gold).column("recall")

    def missed(row: Row) -> bool:
        return _defined(row["plan_steps"]) and _defined(row[recall]) and row[recall] == 0

    def miss_sql(table: Any) -> ColumnElement:
        return and_(table.plan_steps.is_not(None), getattr(table, recall) == 0)

    def on_miss(name: str, holds: Callable[[Row], bool],
                condition: Callable[[Any], ColumnElement]) -> RunMean:
        return RunMean(name, lambda row: float(holds(row)) if missed(row) else None,
                       lambda table: case((miss_sql(table), case((condition(table), 1.0), else_=0.0)), else_=null()))

    miss = RunMean("miss", lambda row: float(missed(row)) if _defined(row["plan_steps"]) else None,
                   lambda table: case((~table.plan_steps.is_not(None), null()), (miss_sql(table), 1.0), else_=0.0))
    return {m.name: m for m in (
        miss,
        on_miss("wrong_tool", lambda row: _defined(row["plan_apis_named"]) and row["plan_apis_named"] > 0,
                lambda table: table.plan_apis_named > 0),
        on_miss("refusal_on_miss", lambda row: _defined(row["plan_refusal"]) and bool(row["plan_refusal"]),
                lambda table: table.plan_refusal.is_(True)),
    )}
