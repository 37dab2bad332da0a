"""The results store's tables as SQLAlchemy 2.0 models: one row per run, one per (run, query).

A run's row holds its full provenance; a query's row holds identifiers, scores, hits, stubs, plans, metrics for
both gold definitions, token usage, latency and how it failed. Query texts and API descriptions are not stored:
pages join them from the ToolBench data directory. The unique (run_id, query_uid) constraint is what makes a
resumed run unable to duplicate a row.

The migrations of core.store.migrations build these tables in a database; a model changes only together with
a new migration (tests/test_migrations.py checks that the two agree).
"""
from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (JSON, Boolean, DateTime, Float, ForeignKey, Integer, String, Text, TypeDecorator,
                        UniqueConstraint)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class UTCDateTime(TypeDecorator):
    """A timestamp stored as UTC and read back as naive UTC on every store: SQLite keeps the digits it is
    given and returns them naive, PostgreSQL returns them aware in its session's time zone. A naive value
    written is taken as UTC (what SQLite hands back, e.g. when runs are copied to PostgreSQL)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None or value.tzinfo is None:
            return value
        return value.astimezone(UTC).replace(tzinfo=None)


class Base(DeclarativeBase):
    pass


class SchemaInfo(Base):
    __tablename__ = "schema_info"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    version: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


class Run(Base):
    """One architecture on one subset at one configuration, with everything needed to reproduce it."""

    __tablename__ = "runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(16), index=True)
    arch: Mapped[str] = mapped_column(String(8))
    subset: Mapped[str] = mapped_column(String(32))
    k: Mapped[int] = mapped_column(Integer)
    run_index: Mapped[int] = mapped_column(Integer)
    registry_name: Mapped[str] = mapped_column(String(32))
    registry_size: Mapped[int] = mapped_column(Integer)
    registry_hash: Mapped[str] = mapped_column(String(64))
    sub_size: Mapped[int | None] = mapped_column(Integer)
    sub_seed: Mapped[int | None] = mapped_column(Integer)
    embedding_model: Mapped[str] = mapped_column(String(200))
    llm_backend: Mapped[str] = mapped_column(String(32))
    llm_model: Mapped[str] = mapped_column(String(200))
    backend_label: Mapped[str] = mapped_column(String(200))
    discovery_prompt_version: Mapped[str] = mapped_column(String(64))
    planner_prompt_version: Mapped[str] = mapped_column(String(64))
    source_run_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id"))
    git_commit: Mapped[str] = mapped_column(String(64))
    n_queries: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16), index=True)
    note: Mapped[str | None] = mapped_column(Text)
    config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class QueryResult(Base):
    """One query's outputs in one run. Metrics are stored for both gold definitions."""

    __tablename__ = "query_results"
    __table_args__ = (UniqueConstraint("run_id", "query_uid", name="uq_run_query"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"), index=True)
    query_uid: Mapped[str] = mapped_column(String(64))
    subset: Mapped[str] = mapped_column(String(32))
    query_id: Mapped[int] = mapped_column(Integer)
    k: Mapped[int] = mapped_column(Integer)
    recall_api_list: Mapped[float | None] = mapped_column(Float)
    precision_api_list: Mapped[float | None] = mapped_column(Float)
    hit_api_list: Mapped[float | None] = mapped_column(Float)
    recall_relevant: Mapped[float | None] = mapped_column(Float)
    precision_relevant: Mapped[float | None] = mapped_column(Float)
    hit_relevant: Mapped[float | None] = mapped_column(Float)
    top1_score: Mapped[float | None] = mapped_column(Float)
    search_width: Mapped[int | None] = mapped_column(Integer)
    # [{rank, tool_name, api_name, category, score, gold, gold_relevant, stub?}]
    hits: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON(none_as_null=True))
    # [{name, reasoning, top1: {tool_name, api_name, score, gold, gold_relevant}}]
    stubs: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON(none_as_null=True))
    stub_fallback: Mapped[bool | None] = mapped_column(Boolean)
    stub_error: Mapped[str | None] = mapped_column(Text)
    # PtR rows: size of the top-k intersection with RtP's top-k on the same (sub-)registry.
    rtp_overlap: Mapped[int | None] = mapped_column(Integer)
    same_as_rtp: Mapped[bool | None] = mapped_column(Boolean)
    # The plan: texts as JSON {selected_apis, steps, refusal, parse_error, cached}, measures as columns.
    plan: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    plan_refusal: Mapped[bool | None] = mapped_column(Boolean)
    plan_parse_error: Mapped[bool | None] = mapped_column(Boolean)
    plan_steps: Mapped[int | None] = mapped_column(Integer)
    plan_apis_named: Mapped[int | None] = mapped_column(Integer)
    plan_fidelity: Mapped[float | None] = mapped_column(Float)
    plan_selection_rate: Mapped[float | None] = mapped_column(Float)
    plan_matched: Mapped[list[list[str]] | None] = mapped_column(JSON(none_as_null=True))
    plan_pass_api_list: Mapped[bool | None] = mapped_column(Boolean)
    plan_pass_relevant: Mapped[bool | None] = mapped_column(Boolean)
    stub_prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    stub_output_tokens: Mapped[int] = mapped_column(Integer, default=0)
    stub_thoughts_tokens: Mapped[int] = mapped_column(Integer, default=0)
    plan_prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    plan_output_tokens: Mapped[int] = mapped_column(Integer, default=0)
    plan_thoughts_tokens: Mapped[int] = mapped_column(Integer, default=0)
    stub_latency_s: Mapped[float | None] = mapped_column(Float)
    retrieval_latency_s: Mapped[float | None] = mapped_column(Float)
    plan_latency_s: Mapped[float | None] = mapped_column(Float)
    error: Mapped[str | None] = mapped_column(Text)
    # A core.agents.llm.FailureKind value when an LLM failure failed the row (m002); read it through
    # core.store.failure_kind, which also reads the rows written before the column.
    failure_kind: Mapped[str | None] = mapped_column(String(32))


RESULT_COLUMNS = tuple(c.name for c in QueryResult.__table__.columns if c.name != "id")
