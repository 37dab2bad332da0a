"""One query through the declared architectures (core.archs), with their plans and, given gold, its scores: what
the CLI's `query` and the Inspector show."""
from __future__ import annotations

from collections.abc import Collection

from core.agents.factory import Agents, make_agents
from core.agents.llm import LLMUnavailable
from core.agents.llm.budget import within_budget
from core.agents.stubs import StubOutcome
from core.archs import arch, declared
from core.data.toolbench import ApiKey
from core.retrieval.discovery import Retriever, check_k, clean_query
from core.settings import Settings
from core.study.query_result import ArchResult, QueryOutcome


def inspect_query(text: str, k: int, retriever: Retriever, settings: Settings, archs: str = "all",
                  use_cache: bool = True, gold: Collection[ApiKey] | None = None,
                  agents: Agents | None = None, stubs: StubOutcome | None = None,
                  plans: bool | None = None) -> QueryOutcome:
    """Every declared architecture (archs="all") or the one named, with the plans of those that plan when `plans`
    (default: when archs="all"). The architectures that search stubs share one writing of them.

    Those run before RtP's plan, and archs="ptr" with plans=True gives PtR's column alone, so a page can show it
    as soon as its two calls are done (the call cache makes a later archs="all" reuse them).

    `stubs` lets a caller replay stored stubs instead of writing new ones. Failures of the LLM are recorded in
    the result (fallback stubs, parse errors, and llm_error when the backend cannot run at all: no key, no
    model); they never stop the architectures that need no stubs (RtP) from showing.
    """
    query = clean_query(text)
    check_k(k)
    chosen = declared() if archs == "all" else (arch(archs),)
    want_plans = archs == "all" if plans is None else plans
    llm_error = None
    if agents is None and (want_plans or any(a.needs_stubs for a in chosen)):
        try:
            agents = make_agents(settings, retriever, use_cache)
        except LLMUnavailable as exc:
            llm_error = str(exc)
    blocks: dict[str, ArchResult] = {}
    with within_budget(settings.query_budget_s):  # the whole query's LLM work, whatever the calls' budgets
        found = {a: a.retrieve(query, None, k, retriever) for a in chosen if not a.needs_stubs}
        with_stubs = [a for a in chosen if a.needs_stubs]
        if with_stubs and agents is not None:
            written = stubs or agents.stub_writer.write(query)
            for a in with_stubs:
                discovery = a.retrieve(query, written, k, retriever)
                plan = agents.planner.plan(query, discovery.hits) if want_plans and a.plans else None
                blocks[a.name] = ArchResult.of(a.name, discovery, plan, gold, written if a.carries_stubs else None)
        for a, discovery in found.items():
            plan = agents.planner.plan(query, discovery.hits) if want_plans and agents and a.plans else None
            blocks[a.name] = ArchResult.of(a.name, discovery, plan, gold)
    return QueryOutcome(k, tuple(blocks[a.name] for a in chosen if a.name in blocks), query, llm_error=llm_error)
