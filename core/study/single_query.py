"""One query through RtP, PtR and the hybrid, with both plans and, given gold, its scores: what the CLI's
`query` and the Inspector show."""
from __future__ import annotations

from collections.abc import Collection

from core.study import metrics
from core.retrieval.discovery import (Discovery, Retriever, check_k, clean_query, hybrid_retrieve, ptr_retrieve,
                                      rtp)
from core.agents.factory import Agents, make_agents
from core.agents.llm import LLMUnavailable
from core.agents.llm.budget import within_budget
from core.agents.planner import Plan
from core.settings import Settings
from core.agents.stubs import StubOutcome, usage_json
from core.data.toolbench import ApiKey


def discovery_json(discovery: Discovery, plan: Plan | None, gold: Collection[ApiKey] | None) -> dict:
    hits = [h.to_json() for h in discovery.hits]
    out: dict = {"hits": hits, "top1_score": discovery.top1_score, "search_width": discovery.search_width,
                 "latency_s": round(discovery.latency_s, 4)}
    if gold is not None:
        for hit, is_gold in zip(hits, metrics.gold_flags(discovery.keys, gold)):
            hit["gold"] = is_gold
        out["recall"] = metrics.recall_at_k(discovery.keys, gold, discovery.k)
        out["precision"] = metrics.precision_at_k(discovery.keys, gold, discovery.k)
    if plan is not None:
        out["plan"] = plan.to_json()
    return out


def ptr_json(found: Discovery, outcome: StubOutcome, plan: Plan | None, gold: Collection[ApiKey] | None) -> dict:
    """PtR's block: discovery_json plus the stubs that were searched and what writing them cost."""
    block = discovery_json(found, plan, gold)
    stub_json = outcome.to_json()
    block.update(stubs=stub_json["stubs"], stub_fallback=outcome.fallback, stub_error=outcome.error,
                 stub_capped=outcome.capped, backend_label=outcome.label, usage=usage_json(outcome.usage),
                 stub_latency_s=stub_json["latency_s"])
    return block


def inspect_query(text: str, k: int, retriever: Retriever, settings: Settings, archs: str = "all",
                  use_cache: bool = True, gold: Collection[ApiKey] | None = None,
                  agents: Agents | None = None, stubs: StubOutcome | None = None, plans: bool | None = None) -> dict:
    """RtP and/or PtR for one query, with plans when `plans` (default: when archs="all"); with archs="all"
    also the hybrid's retrieval (PtR's stubs plus the raw query), which needs no further call.

    PtR is computed before RtP's plan, and archs="ptr" with plans=True gives PtR's column alone, so a page
    can show it as soon as its two calls are done (the call cache makes a later archs="all" reuse them).

    `stubs` lets a caller replay stored stubs instead of writing new ones. Failures of the LLM
    are recorded in the result (fallback stubs, parse errors, and "llm_error" when the backend cannot
    run at all: no key, no model); they never stop RtP from showing.
    """
    query = clean_query(text)
    check_k(k)
    out: dict = {"query": query, "k": k}
    want_plans = archs == "all" if plans is None else plans
    if (want_plans or archs == "ptr") and agents is None:
        try:
            agents = make_agents(settings, retriever, use_cache)
        except LLMUnavailable as exc:
            out["llm_error"] = str(exc)
    with within_budget(settings.query_budget_s):  # the whole query's LLM work, whatever the calls' budgets
        rtp_found = rtp(query, k, retriever) if archs in ("rtp", "all") else None
        if archs in ("ptr", "all") and agents is not None:
            outcome = stubs or agents.stub_writer.write(query)
            found = ptr_retrieve(outcome.stubs, k, retriever)
            plan = agents.planner.plan(query, found.hits) if want_plans else None
            out["ptr"] = ptr_json(found, outcome, plan, gold)
            if archs == "all":  # hybrid discovery (beyond the paper): retrieval only, from the same stubs
                out["hybrid"] = discovery_json(hybrid_retrieve(query, () if outcome.fallback else outcome.stubs, k,
                                                               retriever), None, gold)
        if rtp_found is not None:
            plan = agents.planner.plan(query, rtp_found.hits) if want_plans and agents else None
            out["rtp"] = discovery_json(rtp_found, plan, gold)
    return {key: out[key] for key in ("query", "k", "llm_error", "rtp", "ptr", "hybrid") if key in out}
