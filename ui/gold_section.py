"""The Inspector's answer to "why was this API missed?": per-query metrics, both gold definitions, each gold
API's rank 100 deep with its cosines, and the diff of the two top-k lists."""
from __future__ import annotations

import streamlit as st

from core.data.toolbench import Query
from core.retrieval.discovery import Retriever
from core.retrieval.archs import baseline, stub_carrier
from core.study.gold_trace import TRACE_DEPTH, topk_diff
from core.study.query_result import QueryOutcome
from ui.inspector_view import both_golds_frame, diff_lists, metrics_frame, trace_frame
from ui.resources import gold_traces
from ui.safe import md

_NUMBER = st.column_config.NumberColumn(format="%.3f")


def metrics_table(result: QueryOutcome, gold: frozenset, k: int, gold_def: str) -> None:
    st.markdown(f"**Per-query metrics** at k = {k} (gold = {gold_def})")
    frame = metrics_frame(result, gold, k)
    st.dataframe(frame, hide_index=True, width="stretch",
                 column_config={c: _NUMBER for c in frame.columns if c != "architecture"})
    st.caption("recall: share of gold found; precision: gold found ÷ k; hit: any gold found; MRR: 1 / rank of the "
               "first gold API; nDCG: rank-discounted gain over an ideal top k (binary relevance, trec_eval's "
               "conventions, checked against it in the tests).")


def _in_top_k(value: object, k: int) -> str:
    return "background-color: rgba(46, 160, 67, 0.25)" if str(value).isdigit() and int(str(value)) <= k else ""


def trace_table(text: str, result: QueryOutcome, gold: frozenset, k: int, retriever: Retriever) -> None:
    traces = gold_traces(text, result.writing, gold, retriever)
    archs = tuple(a for a in (traces[0].archs if traces else ()) if result.get(a) is not None)  # shown and traced
    frame = trace_frame(traces, k, archs)
    missed = sum(1 for t in traces if not any((t.rank(a) or k + 1) <= k for a in archs))
    st.markdown(f"**Why each gold API was found or missed**: {missed} of {len(traces)} appear in no top {k}. "
                f"Ranks are searched {TRACE_DEPTH} deep in the {md(retriever.registry.name)} registry "
                f"({len(retriever.registry):,} APIs); green = inside the top {k}.")
    rank_columns = [c for c in frame.columns if c.endswith(" rank")]
    st.dataframe(frame.style.map(lambda v: _in_top_k(v, k), subset=rank_columns), hide_index=True, width="stretch",
                 column_config={"why": st.column_config.TextColumn("why", width="large"),
                                "cos(query)": _NUMBER, "cos(best stub)": _NUMBER})
    st.caption("cos(query): the API's cosine to the raw query (what RtP ranks by); cos(best stub): to the closest "
               "of PtR's stubs (what PtR ranks by). A name-only API is embedded from \"tool/api: \" alone, so a "
               "described query rarely lands near it.")


def diff_columns(result: QueryOutcome) -> None:
    rtp, ptr = result.get(baseline().name), result.get(stub_carrier().name)
    if rtp is None or ptr is None:
        return
    st.markdown("**The two top-k lists compared**")
    for column, (title, names) in zip(st.columns(3), diff_lists(topk_diff(rtp.keys, ptr.keys)).items()):
        column.markdown(f"*{title}*")
        column.text("\n".join(names) or "–")


def gold_section(text: str, result: QueryOutcome, query: Query | None, gold_def: str, k: int,
                 retriever: Retriever | None) -> None:
    """For a benchmark query: metrics, both gold sets, and the miss explanation (when the index is loaded);
    the top-k diff for any query."""
    with st.container(border=True):
        st.subheader("Gold APIs: found, missed, and why" if query is not None else "RtP and PtR compared")
        if query is not None:
            gold = query.gold(gold_def)
            metrics_table(result, gold, k, gold_def)
            st.markdown(f"**Both gold definitions** (api_list {len(query.api_list)}, relevant "
                        f"{len(query.relevant_apis)}); the sidebar picks the one every number uses")
            st.dataframe(both_golds_frame(query, result, k), hide_index=True, width="stretch")
            if retriever is None:
                st.caption("The ranks beyond the top k appear here once the index has loaded.")
            elif retriever.lexical:
                st.caption("The trace of each gold API's rank 100 deep, with its cosines, is the embedding's: pick "
                           "an embedding model above to see it (BM25 gives no cosine).")
            else:
                trace_table(text, result, gold, k, retriever)
        diff_columns(result)

