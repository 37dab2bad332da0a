"""Hybrid discovery (beyond the paper): a main run's stored stubs plus the raw query; retrieval only."""
from __future__ import annotations

from core.retrieval.batch import hybrid_batch, rtp_batch
from core.retrieval.memo import memoised
from core.study.catalog import BenchContext
from core.study.rows import base_row, overlap_fields
from core.study.runner import insert_run, open_run
from core.study.sources import main_study_subsets, stored_stubs


def run_hybrid(context: BenchContext) -> list[int]:
    """Hybrid discovery (beyond the paper) at the main study's k, one run per PtR main run: that run's
    stored stubs plus the raw query, merged by best similarity. No LLM calls; retrieval only."""
    store = context.store
    retriever = memoised(context.retriever)
    touched: list[int] = []
    for subset, qs, src, setup in main_study_subsets(context, "hybrid"):
        k = src.rtp.spec.k
        rtp_keys = {q.uid: d.keys for q, d in zip(qs, rtp_batch([q.query for q in qs], k, retriever))}
        for r, source in src.ptr.items():
            stubs = stored_stubs(store, source.id, qs)
            with_stubs = [q for q in qs if q.uid in stubs]
            opened = open_run(store, setup.spec("hybrid", "hybrid", subset, k, r, source_run_id=source.id),
                              with_stubs, context.resume, setup.git_commit, context.config)
            if not opened:
                continue
            run_id, todo = opened
            # A fallback stub is the raw query itself, which the hybrid searches anyway.
            written = [() if stubs[q.uid][1] else stubs[q.uid][0] for q in todo]
            found = hybrid_batch([q.query for q in todo], written, [k], retriever)[k]
            insert_run(store, run_id, [{**base_row(run_id, q, d, with_hits=r == 0),
                                         **overlap_fields(d, rtp_keys[q.uid])} for q, d in zip(todo, found)])
            touched.append(run_id)
    return touched
