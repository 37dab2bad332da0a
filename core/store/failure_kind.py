"""A stored row's FailureKind, read one way for every row: its failure_kind column, else the texts that name it.

Rows written before migration m002 hold no kind of their own: for those the stub writer's and the planner's
failure texts are read with core.agents.llm.failure_of, the one parser of those texts. The store fills the
column from the same texts when a writer gives a row none (Store.add_results).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.agents.llm import FailureKind, failure_of
from core.store.schema import QueryResult

SOURCE_COLUMNS = ("failure_kind", "error", "stub_error", "plan")  # what failure_kind reads of a row


def named_failure(row: Mapping[str, Any]) -> FailureKind | None:
    """The kind an LLM-failed row's texts name, the stub writer's before the planner's (the order
    core.study.rows.llm_failure names them in); None for a row that did not fail, or failed otherwise."""
    if row.get("error") is None:
        return None
    plan = row.get("plan") or {}
    return failure_of(row.get("stub_error")) or failure_of(plan.get("parse_error"))


def failure_kind(row: QueryResult | Mapping[str, Any]) -> FailureKind | None:
    """The kind of LLM failure that failed a stored row (a model or a mapping holding SOURCE_COLUMNS): its column
    when set, else what its texts name (named_failure); None for a row no LLM failure failed."""
    values = row if isinstance(row, Mapping) else {name: getattr(row, name) for name in SOURCE_COLUMNS}
    stored = values.get("failure_kind")
    return FailureKind(stored) if stored is not None else named_failure(values)
