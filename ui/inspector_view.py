"""The Inspector's view as URL parameters, and pure helpers over inspect_query's JSON.

A view is a query (free text `q`, or a benchmark query `qid` like `G1_instruction:577`), `k` and
the LLM `backend`. Parsing never raises: a bad parameter becomes a message and a default, so a
hand-edited or truncated link still opens a page.
"""
from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

import pandas as pd

from core.settings import BOUNDS
from core.data.toolbench import ApiKey, Query, display_name
from core.study import metrics
from core.study.gold_trace import ARCH_NAMES, TRACE_DEPTH, GoldTrace, TopkDiff, verdict

K_MIN, K_MAX = 1, 20
ARCHS = ("rtp", "ptr", "hybrid")
ARCH_TITLES = {"rtp": "RtP · Retrieve-then-Plan", "ptr": "PtR · Plan-then-Retrieve",
               "hybrid": "Hybrid · PtR's stubs + the raw query (beyond the paper)"}


@dataclass(frozen=True)
class View:
    text: str = ""
    qid: tuple[str, int] | None = None
    k: int = 5
    backend: str | None = None

    def params(self) -> dict[str, str]:
        """The URL parameters that reproduce this view (q only when no benchmark query is chosen)."""
        out: dict[str, str] = {}
        if self.qid is not None:
            out["qid"] = f"{self.qid[0]}:{self.qid[1]}"
        elif self.text:
            out["q"] = self.text
        out["k"] = str(self.k)
        if self.backend:
            out["backend"] = self.backend
        return out


def parse_qid(text: str) -> tuple[str, int] | None:
    """`G1_instruction:577` -> ("G1_instruction", 577); None when malformed."""
    subset, sep, number = text.strip().rpartition(":")
    if not sep or not subset or not number.strip().isdigit():
        return None
    try:  # BOUNDS: a 5,000-digit id once raised Python's integer-string limit as an exception box
        return subset, int(BOUNDS["query_id"].parse("query id", number))
    except ValueError:
        return None


def parse_view(params: Mapping[str, str], default_k: int, backends: Collection[str]) -> tuple[View, list[str]]:
    """(view, messages) from URL parameters; each unusable parameter adds a message and is ignored."""
    messages: list[str] = []
    qid = None
    if params.get("qid"):
        qid = parse_qid(params["qid"])
        if qid is None:
            messages.append(f"The link's query id {params['qid'][:80]!r} is not of the form subset:number "
                            "(e.g. G1_instruction:577).")
    k = default_k
    if "k" in params:
        raw = params["k"].strip()
        if raw.isdigit() and K_MIN <= int(raw) <= K_MAX:
            k = int(raw)
        else:
            messages.append(f"The link's k {raw[:20]!r} is not a whole number from {K_MIN} to {K_MAX}; using k={k}.")
    backend = params.get("backend") or None
    if backend == "local" and backend not in backends:  # a link from before the model picker: the first model
        backend = next((b for b in backends if b.startswith("local:")), backend)
    if backend is not None and backend not in backends:
        messages.append(f"The link asks for the LLM backend {backend[:40]!r}, which is not configured here "
                        f"(available: {', '.join(backends)}).")
        backend = None
    return View(params.get("q", "") if qid is None else "", qid, k, backend), messages


def with_gold(result: dict, gold: Collection[ApiKey] | None) -> dict:
    """A copy of an inspect_query / query_detail result whose gold marks and recall/precision use `gold`.

    Stored results carry marks for one gold definition; recomputing them here lets the sidebar's
    choice apply to every view. With gold None, marks and metrics are removed.
    """
    out = dict(result)
    for arch in ARCHS:
        if not isinstance(result.get(arch), dict):
            continue
        block = dict(result[arch])
        hits = [dict(h) for h in block.get("hits") or []]
        keys = [(h["tool_name"], h["api_name"]) for h in hits]
        k = int(result.get("k") or len(hits) or 1)
        if gold is None:
            for hit in hits:
                hit.pop("gold", None)
            block.pop("recall", None)
            block.pop("precision", None)
        else:
            for hit, flag in zip(hits, metrics.gold_flags(keys, gold)):
                hit["gold"] = flag
            block["recall"] = metrics.recall_at_k(keys, gold, k)
            block["precision"] = metrics.precision_at_k(keys, gold, k)
        block["hits"] = hits
        out[arch] = block
    return out


def keys_of(block: dict | None) -> list[ApiKey]:
    return [(h["tool_name"], h["api_name"]) for h in (block or {}).get("hits") or []]


def metrics_frame(result: dict, gold: frozenset[ApiKey], k: int) -> pd.DataFrame:
    """A row per architecture shown, a column per metric at k (core.study.metrics.SCORE_NAMES)."""
    rows = [{"architecture": ARCH_NAMES[arch], **{f"{name}@{k}": value for name, value in zip(
                metrics.SCORE_NAMES.values(), metrics.scores_at_k(keys_of(result[arch]), gold, k).values())}}
            for arch in ARCHS if isinstance(result.get(arch), dict)]
    return pd.DataFrame(rows)


def both_golds_frame(query: Query, result: dict, k: int) -> pd.DataFrame:
    """Both gold definitions of a query side by side: a row per API in either, which sets hold it, and which
    architectures' top k found it."""
    found = {arch: set(keys_of(result.get(arch))) for arch in ARCHS if isinstance(result.get(arch), dict)}
    api_list, relevant = set(query.api_list), set(query.relevant_apis)
    keys = sorted(api_list | relevant, key=lambda key: (key not in relevant, key))
    return pd.DataFrame([{"API": display_name(*key), "api_list": key in api_list, "relevant": key in relevant,
                          **{f"{ARCH_NAMES[a]} top {k}": key in hits for a, hits in found.items()}} for key in keys])


def rank_text(rank: int | None, depth: int = TRACE_DEPTH) -> str:
    return f"beyond {depth}" if rank is None else str(rank)


def trace_frame(traces: list[GoldTrace], k: int, archs: tuple[str, ...] = ARCHS,
                depth: int = TRACE_DEPTH) -> pd.DataFrame:
    """A row per gold API: ranks in the top `depth` of each architecture shown, cosines, document kind and
    the verdict."""
    return pd.DataFrame([{
        "API": display_name(t.tool_name, t.api_name), "why": verdict(t, k, depth),
        **{f"{ARCH_NAMES[a]} rank": rank_text(t.rank(a), depth) if t.in_registry else "–" for a in archs},
        "cos(query)": t.cos_query, "cos(best stub)": t.cos_stub, "best stub": t.best_stub or "",
        "document": "not in registry" if not t.in_registry else "name only" if t.name_only else "described"}
        for t in traces])


def diff_lists(diff: TopkDiff) -> dict[str, list[str]]:
    """The top-k diff's three parts as display names, titled."""
    return {f"Shared ({len(diff.shared)})": [display_name(*k) for k in diff.shared],
            f"Only RtP ({len(diff.only_rtp)})": [display_name(*k) for k in diff.only_rtp],
            f"Only PtR ({len(diff.only_ptr)})": [display_name(*k) for k in diff.only_ptr]}


def ran_out_of_time(stage: str, reason: str | None) -> str | None:
    """"<stage> ran out of time: <why>" for a stage that hit its call's timeout or the query's budget; None for
    any other outcome, so the page can name the stage the budget stopped."""
    if not reason or not reason.startswith("llm_error[timeout]"):
        return None
    return f"{stage} ran out of time: {reason.partition(': ')[2] or reason}"


def stub_hits(block: dict) -> list[tuple[dict, list[dict]]]:
    """PtR's stubs, each with the final hits it contributed (the stub that scored each hit best)."""
    hits = block.get("hits") or []
    return [(stub, [h for h in hits if h.get("stub") == stub.get("name")]) for stub in block.get("stubs") or []]


def total_tokens(block: dict) -> int:
    """LLM tokens one architecture spent on this query: stub writing (PtR) plus planning."""
    usage = (block.get("usage") or {}).get("total_tokens") or 0
    plan = ((block.get("plan") or {}).get("usage") or {}).get("total_tokens") or 0
    return int(usage) + int(plan)


def latency_text(block: dict, stored: bool) -> str:
    """What one architecture's time means. Live: stub writing + retrieval + planning, measured now. Stored:
    only the LLM calls' wall times were kept (inside a batch run with parallel workers; retrieval ran batched
    and has no per-query time), so only those are shown, and said to be that."""
    plan = (block.get("plan") or {}).get("latency_s")
    stubs = block.get("stub_latency_s")
    if not stored:
        return f"{total_latency_s(block):.2f} s live"
    parts = [f"{name} {float(value):.2f} s" for name, value in (("stubs", stubs), ("plan", plan)) if value is not None]
    if not parts:
        return "no LLM time stored at this k"
    return "LLM wall time in the batch run: " + " + ".join(parts)


def total_latency_s(block: dict) -> float:
    """Seconds one architecture took: stub writing (PtR), retrieval and planning."""
    plan = (block.get("plan") or {}).get("latency_s") or 0.0
    return float(block.get("stub_latency_s") or 0.0) + float(block.get("latency_s") or 0.0) + float(plan)
