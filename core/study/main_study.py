"""The main comparison: RtP and PtR at k=5 for R runs, planner in every run (or on a planner sample).

RtP's retrieval is deterministic, so it is computed once per subset and reused; the planner still
runs in every run. PtR writes new stubs every run. With the LLM call cache keyed on the prompt
alone, runs 1..R-1 would replay run 0's answers and the spread over runs would be a fake zero, so
core.agents.factory keys run r > 0's calls apart ("+run{r}"); run 0 shares its cache with the
Inspector. The offline heuristic is deterministic: its runs are identical and their spread is zero.
With `plan_sample` N > 0 both planners run on N queries per subset only (core.study.sample: stratified,
seeded, the same for both architectures and every run); the others' rows hold retrieval and stubs and
no plan, so every planner mean is over the sample, and the run's config says so.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from core.agents.factory import Agents, AgentsFactory, agents_factory
from core.agents.planner import Plan
from core.agents.stubs import StubOutcome
from core.data.toolbench import Query
from core.retrieval.archs import Arch, baseline, discover, planning
from core.retrieval.discovery import Discovery, Retriever
from core.retrieval.memo import memoised
from core.study.rows import (base_row, by_subset, llm_failure, llm_failure_kind, overlap_fields, plan_fields,
                             stub_fields)
from core.study.runner import Job, execute, open_run
from core.study.sample import SAMPLE_SEED, STRATA, planner_sample
from core.study.catalog import DEFAULT_RUNS, MAIN_K, BenchContext
from core.study.setup import Setup


def run_main(context: BenchContext, *, k: int = MAIN_K, runs: int = DEFAULT_RUNS, concurrency: int = 8,
             plan_sample: int = 0, agents_for: AgentsFactory | None = None) -> list[int]:
    """The main comparison: per subset, every architecture that plans at k for `runs` runs. Returns the run ids
    touched.

    `agents_for` (run index -> who writes stubs and plans) defaults to the configured backend's agents. An
    architecture that needs no stubs is retrieved once per subset (it is deterministic); one that needs them
    retrieves, batched, as its queries' stubs are written.
    """
    if runs < 1:
        raise ValueError("runs must be at least 1")
    if agents_for is None:
        agents_for = agents_factory(context.settings, context.retriever, use_cache=context.use_cache)
    store, queries, resume = context.store, context.queries, context.resume
    config = {**context.config, "concurrency": concurrency}
    planned: frozenset[str] | None = None
    if plan_sample:
        planned = planner_sample(queries, plan_sample)
        config = {**config, "planner_sample": {"per_subset": plan_sample, "seed": SAMPLE_SEED,
                                               "stratified_by": "api_list gold-set size",
                                               "strata": [list(s) for s in STRATA]}}
    retriever = memoised(context.retriever)
    agents = {r: agents_for(r) for r in range(runs)}
    setup = Setup.of(retriever, agents[0], context.commit)
    base = baseline()
    jobs: list[Job] = []
    for subset, qs in by_subset(queries).items():
        texts = [q.query for q in qs]
        fixed = {a.name: dict(zip((q.uid for q in qs), discover(a, texts, None, [k], retriever)[k]))
                 for a in {base, *(a for a in planning() if not a.needs_stubs)}}
        base_keys = {uid: d.keys for uid, d in fixed[base.name].items()}
        for r in range(runs):
            for a in planning():
                opened = open_run(store, setup.spec("main", a.name, subset, k, r), qs, resume, setup.git_commit,
                                  config)
                if opened is None:
                    continue
                run_id, todo = opened
                finish = _finish(a, agents[r], retriever, base_keys, planned)
                if a.needs_stubs:
                    writer = agents[r].stub_writer
                    jobs.append(Job(run_id, tuple(todo), k, finish, prepare=lambda q, w=writer: w.write(q.query),
                                    retrieve=_retrieve(a, retriever, k)))
                else:
                    found = fixed[a.name]
                    jobs.append(Job(run_id, tuple(todo), k,
                                    lambda run_id, q, _, f=finish, found=found:
                                    f(run_id, q, (None, found[q.uid], None))))
    execute(store, jobs, concurrency, context.progress, "bench main")
    return [job.run_id for job in jobs]


def _plan(agents: Agents, query: Query, discovery: Discovery,
          planned: frozenset[str] | None) -> tuple[dict[str, Any], Plan | None]:
    """The plan's fields and the plan, or no fields and None for a query outside the planner sample."""
    if planned is not None and query.uid not in planned:
        return {}, None
    plan = agents.planner.plan(query.query, discovery.hits)
    return plan_fields(plan, query), plan


def _retrieve(a: Arch, retriever: Retriever, k: int) -> Callable[[list[tuple[Query, Any]]], list[Any]]:
    """Batched retrieval for queries whose stubs are written: (outcome, discovery, seconds) each."""
    def retrieve(items: list[tuple[Query, Any]]) -> list[Any]:
        start = time.perf_counter()
        found = discover(a, [q.query for q, _ in items], [outcome for _, outcome in items], [k], retriever)[k]
        seconds = (time.perf_counter() - start) / len(items)
        return [(outcome, d, seconds) for (_, outcome), d in zip(items, found)]

    return retrieve


def _finish(a: Arch, agents: Agents, retriever: Retriever, base_keys: dict[str, Any],
            planned: frozenset[str] | None) -> Callable[[int, Query, Any], dict[str, Any]]:
    """A query's row: its scores and hits, its stubs where `a` carries them, its overlap with the baseline's top
    k (but the baseline's own), its plan, and the failure of either LLM call."""
    def finish(run_id: int, query: Query,
               payload: tuple[StubOutcome | None, Discovery, float | None]) -> dict[str, Any]:
        outcome, discovery, seconds = payload
        fields, plan = _plan(agents, query, discovery, planned)
        row = {**base_row(run_id, query, discovery, fallback=a.carries_stubs and outcome.fallback), **fields,
               "error": llm_failure(outcome, plan), "failure_kind": llm_failure_kind(outcome, plan)}
        if a.carries_stubs:
            row.update(stub_fields(outcome, discovery.top1, query, retriever))
        if not a.baseline:
            row.update(overlap_fields(discovery, base_keys[query.uid]))
        if seconds is not None:
            row["retrieval_latency_s"] = seconds
        return row

    return finish
