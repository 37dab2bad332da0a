"""The k sweep: both architectures at k=1..20 from the latest main study's stubs; retrieval only."""
from __future__ import annotations

from collections.abc import Sequence

from core.retrieval.batch import ptr_batch, rtp_batch, truncate
from core.retrieval.memo import memoised
from core.study.catalog import KSWEEP_KS, BenchContext
from core.study.rows import base_row, overlap_fields, stubs_json
from core.study.runner import insert_run, open_run
from core.study.sources import main_study_subsets, stored_stubs


def run_ksweep(context: BenchContext, *, ks: Sequence[int] = KSWEEP_KS) -> list[int]:
    """Recall/precision at each k, both architectures, from the latest main study's stubs; no LLM calls.

    RtP is deterministic: one run per k. PtR: one run per k and main run index. Hits are stored for
    run index 0 at the largest k only: a smaller k's hits are exactly its prefix (see
    core.study.evaluate), which is how the read API shows them; this keeps the database small.
    """
    store, resume, config = context.store, context.resume, context.config
    retriever = memoised(context.retriever)
    ks = sorted(set(ks))
    touched: list[int] = []
    for subset, qs, src, setup in main_study_subsets(context, "ksweep"):
        rtp_base = dict(zip((q.uid for q in qs), rtp_batch([q.query for q in qs], max(ks), retriever)))
        for k in ks:
            opened = open_run(store, setup.spec("ksweep", "rtp", subset, k, 0, source_run_id=src.rtp.id), qs,
                              resume, setup.git_commit, config)
            if opened:
                run_id, todo = opened
                insert_run(store, run_id, [base_row(run_id, q, truncate(rtp_base[q.uid], k), with_hits=k == ks[-1])
                                            for q in todo])
                touched.append(run_id)
        for r, source in src.ptr.items():
            stubs = stored_stubs(store, source.id, qs)
            with_stubs = [q for q in qs if q.uid in stubs]
            per_k = ptr_batch([stubs[q.uid][0] for q in with_stubs], ks, retriever)
            for k in ks:
                spec = setup.spec("ksweep", "ptr", subset, k, r, source_run_id=source.id)
                opened = open_run(store, spec, with_stubs, resume, setup.git_commit, config)
                if not opened:
                    continue
                run_id, todo = opened
                found = {q.uid: d for q, d in zip(with_stubs, per_k[k])}
                rows = []
                for q in todo:
                    rtp_keys = truncate(rtp_base[q.uid], k).keys
                    written, fallback = stubs[q.uid]
                    row = {**base_row(run_id, q, found[q.uid], with_hits=r == 0 and k == ks[-1], fallback=fallback),
                           **overlap_fields(found[q.uid], rtp_keys)}
                    if r == 0:
                        row.update(stubs=stubs_json(written, None, q, None, fallback), stub_fallback=fallback)
                    rows.append(row)
                insert_run(store, run_id, rows)
                touched.append(run_id)
    return touched
