"""The Inspector's view as URL parameters, and pure helpers over a query's result (core.study.query_result).

A view is a query (free text `q`, or a benchmark query `qid` like `G1_instruction:577`), `k`, the
LLM `backend` and the `retriever` (absent: the studies' own). Parsing never raises: a bad parameter becomes a
message and a default, so a hand-edited or truncated link still opens a page.
"""
from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.settings import BOUNDS
from core.agents.llm import FailureKind, failure_of
from core.retrieval.archs import arch
from core.data.toolbench import ApiKey, Query, display_name
from core.evaluation import metrics
from core.study.gold_trace import TRACE_DEPTH, GoldTrace, TopkDiff, verdict
from core.study.query_result import ArchResult, QueryOutcome

if TYPE_CHECKING:  # pandas is imported by the tables of a benchmark query: a shared ?q= link never needs it
    import pandas as pd


@dataclass(frozen=True)
class View:
    text: str = ""
    qid: tuple[str, int] | None = None
    k: int = 5
    backend: str | None = None
    retriever: str | None = None  # None: the studies' own (EMBEDDING_MODEL)

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
        if self.retriever:
            out["retriever"] = self.retriever
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


def parse_view(params: Mapping[str, str], default_k: int, backends: Collection[str],
               retrievers: Sequence[str] = ()) -> tuple[View, list[str]]:
    """(view, messages) from URL parameters; each unusable parameter adds a message and is ignored. `retrievers`:
    the pickable ones, the studies' own first (core.embedding_models.retriever_names)."""
    messages: list[str] = []
    qid = None
    if params.get("qid"):
        qid = parse_qid(params["qid"])
        if qid is None:
            messages.append(f"The link's query id {params['qid'][:80]!r} is not of the form subset:number "
                            "(e.g. G1_instruction:577).")
    k = default_k
    if "k" in params:  # the slider's part of k's range (BOUNDS["k"].shown): a k it cannot show is refused
        shown = BOUNDS["k"].shown
        try:
            k = int(shown.parse("k", params["k"]))
        except ValueError:
            messages.append(f"The link's k {params['k'].strip()[:20]!r} is not a whole number from {shown.low:g} "
                            f"to {shown.high:g}; using k={k}.")
    backend = params.get("backend") or None
    if backend == "local" and backend not in backends:  # a link from before the model picker: the first model
        backend = next((b for b in backends if b.startswith("local:")), backend)
    if backend is not None and backend not in backends:
        messages.append(f"The link asks for the LLM backend {backend[:40]!r}, which is not configured here "
                        f"(available: {', '.join(backends)}).")
        backend = None
    retriever = params.get("retriever") or None
    if retriever is not None and retriever not in retrievers:
        messages.append(f"The link asks for the retriever {retriever[:60]!r}, which is not declared here (declared: "
                        f"{', '.join(retrievers)}); using {retrievers[0] if retrievers else 'the default'}.")
        retriever = None
    if retrievers and retriever == retrievers[0]:
        retriever = None
    return View(params.get("q", "") if qid is None else "", qid, k, backend, retriever), messages


def metrics_frame(result: QueryOutcome, gold: frozenset[ApiKey], k: int) -> pd.DataFrame:
    """A row per architecture shown, a column per metric at k (core.evaluation.metrics.SCORE_NAMES)."""
    import pandas as pd

    rows = [{"architecture": arch(block.arch).label, **{f"{name}@{k}": value for name, value in zip(
                metrics.SCORE_NAMES.values(), metrics.scores_at_k(block.keys, gold, k).values())}}
            for block in result.blocks]
    return pd.DataFrame(rows)


def both_golds_frame(query: Query, result: QueryOutcome, k: int) -> pd.DataFrame:
    """Both gold definitions of a query side by side: a row per API in either, which sets hold it, and which
    architectures' top k found it."""
    import pandas as pd

    found = {block.arch: set(block.keys) for block in result.blocks}
    api_list, relevant = set(query.api_list), set(query.relevant_apis)
    keys = sorted(api_list | relevant, key=lambda key: (key not in relevant, key))
    return pd.DataFrame([{"API": display_name(*key), "api_list": key in api_list, "relevant": key in relevant,
                          **{f"{arch(a).label} top {k}": key in hits for a, hits in found.items()}} for key in keys])


def rank_text(rank: int | None, depth: int = TRACE_DEPTH) -> str:
    return f"beyond {depth}" if rank is None else str(rank)


def trace_frame(traces: list[GoldTrace], k: int, archs: tuple[str, ...], depth: int = TRACE_DEPTH) -> pd.DataFrame:
    """A row per gold API: ranks in the top `depth` of each architecture shown, cosines, document kind and
    the verdict."""
    import pandas as pd

    return pd.DataFrame([{
        "API": display_name(t.tool_name, t.api_name), "why": verdict(t, k, depth),
        **{f"{arch(a).label} rank": rank_text(t.rank(a), depth) if t.in_registry else "–" for a in archs},
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
    any other outcome, so the page can name the stage the budget stopped. The kind is read from the block's text
    (failure_of), which a live block and a stored one (core.store.failure_kind's fallback) both hold."""
    if not reason or failure_of(reason) is not FailureKind.TIMEOUT:
        return None
    return f"{stage} ran out of time: {reason.partition(': ')[2] or reason}"


def latency_text(block: ArchResult) -> str:
    """What one architecture's time means. Measured now (its retrieval time is known): stub writing + retrieval
    + planning. Stored: only the LLM calls' wall times were kept (inside a batch run with parallel workers;
    retrieval ran batched and has no per-query time), so only those are shown, and said to be that."""
    if block.latency_s is not None:
        return f"{block.total_latency_s:.2f} s live"
    stubs = block.writing.latency_s if block.writing is not None else None
    parts = [f"{name} {float(value):.2f} s" for name, value in (("stubs", stubs), ("plan", block.plan_latency_s))
             if value is not None]
    if not parts:
        return "no LLM time stored at this k"
    return "LLM wall time in the batch run: " + " + ".join(parts)
