"""Row builders (pure): one query's scores, hits, stubs and plan as the store's columns.

Rows hold identifiers, scores, stubs, plans and metrics, never a query text: a fallback stub (the
raw query) is stored as FALLBACK_STUB and rebuilt from the query when reused (core.study.sources).
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from core.data.toolbench import GOLD_DEFINITIONS, GOLD_LIST, ApiKey, Query
from core.retrieval.discovery import Discovery, Hit, Retriever, Stub
from core.evaluation import metrics
from core.evaluation.scoring import score_query

if TYPE_CHECKING:
    from core.agents.planner import Plan
    from core.retrieval.archs import Arch
    from core.agents.stubs import StubOutcome

FALLBACK_STUB = "(the raw query: the stub writer failed)"


def by_subset(queries: Iterable[Query]) -> dict[str, list[Query]]:
    out: dict[str, list[Query]] = defaultdict(list)
    for q in queries:
        out[q.subset].append(q)
    return dict(out)


def score_fields(query: Query, keys: Sequence[ApiKey], k: int) -> dict[str, Any]:
    """recall/precision/hit@k for both gold definitions."""
    out: dict[str, Any] = {}
    for gold in GOLD_DEFINITIONS:
        out.update(score_query(query, keys, gold, k).columns())
    return out


def hits_json(hits: Sequence[Hit], query: Query, fallback: bool = False) -> list[dict[str, Any]]:
    """Hits with a gold flag per definition (Gold.hit_flag); a fallback stub (the raw query) is named FALLBACK_STUB."""
    keys = [h.key for h in hits]
    flags = {g.hit_flag: metrics.gold_flags(keys, g.of(query)) for g in GOLD_LIST}
    out = [{**h.to_json(), **{name: marks[i] for name, marks in flags.items()}} for i, h in enumerate(hits)]
    if fallback:
        for hit in out:
            hit["stub"] = FALLBACK_STUB
    return out


def base_row(run_id: int, query: Query, discovery: Discovery, with_hits: bool = True,
             fallback: bool = False) -> dict[str, Any]:
    return {"run_id": run_id, "query_uid": query.uid, "subset": query.subset, "query_id": query.query_id,
            "k": discovery.k, **score_fields(query, discovery.keys, discovery.k), "top1_score": discovery.top1_score,
            "search_width": discovery.search_width,
            "hits": hits_json(discovery.hits, query, fallback) if with_hits else None}


def overlap_fields(discovery: Discovery, rtp_keys: Collection[ApiKey]) -> dict[str, Any]:
    """How PtR's top-k relates to RtP's top-k on the same registry: shared count and set identity."""
    mine = set(discovery.keys)
    theirs = set(rtp_keys)
    return {"rtp_overlap": len(mine & theirs), "same_as_rtp": mine == theirs}


def retrieval_rows(run_id: int, todo: Iterable[Query], arch: Arch, found: dict[str, Discovery],
                   base: dict[str, Discovery]) -> list[dict[str, Any]]:
    """Rows of a retrieval-only run (scaling, distractors; no hits stored): scores, and but for the baseline its
    overlap with the baseline's top-k on the same registry. `found` and `base` map query uid -> Discovery."""
    return [{**base_row(run_id, q, found[q.uid], with_hits=False),
             **({} if arch.baseline else overlap_fields(found[q.uid], base[q.uid].keys))} for q in todo]


def plan_pass(plan: Plan, gold: Collection[ApiKey]) -> bool:
    """The pass-rate proxy: no refusal, no parse error, at least one selected API is gold."""
    return plan.refusal is None and plan.parse_error is None and any(m in gold for m in plan.matched)


def plan_fields(plan: Plan, query: Query) -> dict[str, Any]:
    """The plan's texts as JSON (selected names, steps, refusal and parse-error reasons) and its measures
    as columns (matched, fidelity, selection rate, counts), so aggregation needs no JSON parsing."""
    body = plan.to_json()
    return {"plan": {key: body[key] for key in ("selected_apis", "steps", "refusal", "parse_error", "cached")},
            "plan_refusal": plan.refusal is not None, "plan_parse_error": plan.parse_error is not None,
            "plan_steps": len(plan.steps), "plan_apis_named": plan.apis_named, "plan_fidelity": plan.fidelity,
            "plan_selection_rate": plan.selection_rate, "plan_matched": body["matched"],
            **{g.column("plan_pass"): plan_pass(plan, g.of(query)) for g in GOLD_LIST},
            "plan_prompt_tokens": plan.usage.prompt_tokens, "plan_output_tokens": plan.usage.output_tokens,
            "plan_thoughts_tokens": plan.usage.thoughts_tokens, "plan_latency_s": plan.latency_s}


def stubs_json(stubs: Sequence[Stub], top1: Sequence[tuple[int, float]] | None, query: Query,
               retriever: Retriever | None, fallback: bool = False) -> list[dict[str, Any]]:
    """Stubs as stored. A fallback stub is the raw query, which the store never holds: it is written as
    FALLBACK_STUB and rebuilt from the query when reused (stored_stubs)."""
    out = []
    for i, stub in enumerate(stubs):
        item: dict[str, Any] = ({"name": FALLBACK_STUB, "reasoning": ""} if fallback
                                else {"name": stub.name, "reasoning": stub.reasoning})
        if top1 is not None and retriever is not None:
            row, score = top1[i]
            api = retriever.registry.apis[row]
            item["top1"] = {"tool_name": api.tool_name, "api_name": api.api_name, "score": round(score, 6),
                            **{g.hit_flag: api.key in g.of(query) for g in GOLD_LIST}}
        out.append(item)
    return out


def stub_fields(outcome: StubOutcome, top1: Sequence[tuple[int, float]], query: Query,
                retriever: Retriever) -> dict[str, Any]:
    return {"stubs": stubs_json(outcome.stubs, top1, query, retriever, outcome.fallback),
            "stub_fallback": bool(outcome.fallback),
            "stub_error": outcome.error, "stub_prompt_tokens": outcome.usage.prompt_tokens,
            "stub_output_tokens": outcome.usage.output_tokens,
            "stub_thoughts_tokens": outcome.usage.thoughts_tokens, "stub_latency_s": outcome.latency_s}


def llm_failure(stub: StubOutcome | None = None, plan: Plan | None = None) -> str | None:
    """The row's failure text when a step's outcome carries a failure kind, else None; the texts only say why.

    A failure (core.agents.llm.FailureKind: an outage, a timeout, a spent budget, a client fault, a reply the
    API's filter blocked, an oversized reply) means the model could not be asked or its reply not read. Such a
    row measures the outage, not the architecture, so it is stored as failed: left out of every mean, counted,
    redone by --resume. A malformed or off-schema reply is the model's own answer and stays a (labelled) fallback.
    """
    failed = ([f"stub writer: {stub.error}"] if stub is not None and stub.failure is not None else []) + (
        [f"planner: {plan.parse_error}"] if plan is not None and plan.failure is not None else [])
    return ("LLM failure, " + "; ".join(failed))[:1000] if failed else None


def llm_failure_kind(stub: StubOutcome | None = None, plan: Plan | None = None) -> str | None:
    """The stored failure_kind of the row llm_failure fails: the stub writer's kind before the planner's."""
    kind = (stub.failure if stub is not None else None) or (plan.failure if plan is not None else None)
    return None if kind is None else kind.value


def error_row(run_id: int, query: Query, k: int, error: BaseException) -> dict[str, Any]:
    return {"run_id": run_id, "query_uid": query.uid, "subset": query.subset, "query_id": query.query_id, "k": k,
            "error": f"{type(error).__name__}: {error}"[:1000]}

