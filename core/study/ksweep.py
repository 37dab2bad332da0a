"""The k sweep: every architecture declared for it at k=1..20 from the latest main study's stubs; retrieval only."""
from __future__ import annotations

from collections.abc import Sequence

from core.retrieval.archs import baseline, declared, discover
from core.retrieval.memo import memoised
from core.study.catalog import KSWEEP_KS, BenchContext
from core.study.rows import base_row, overlap_fields, stubs_json
from core.study.runner import insert_run, open_run
from core.study.sources import main_study_subsets, stored_stubs


def run_ksweep(context: BenchContext, *, ks: Sequence[int] = KSWEEP_KS) -> list[int]:
    """Recall/precision at each k of every architecture declared `in_ksweep`, from the latest main study's
    stubs; no LLM calls.

    An architecture that needs no stubs is deterministic: one run per k, built on RtP's main run 0. One that
    searches stubs: one run per k and main run index, from that PtR run's stubs. Hits are stored for run index 0
    at the largest k only: a smaller k's hits are exactly its prefix (see core.study.evaluate), which is how the
    read API shows them; this keeps the database small.
    """
    store, resume, config = context.store, context.resume, context.config
    retriever = memoised(context.retriever)
    ks = sorted(set(ks))
    base = baseline()
    touched: list[int] = []
    for subset, qs, src, setup in main_study_subsets(context, "ksweep"):
        base_found = discover(base, [q.query for q in qs], None, ks, retriever)
        base_keys = {k: {q.uid: d.keys for q, d in zip(qs, base_found[k])} for k in ks}
        for a in (a for a in declared() if a.in_ksweep):
            sources = {r: (run, stored_stubs(store, run.id, qs)) for r, run in src.ptr.items()} if a.needs_stubs \
                else {0: (src.rtp, None)}
            for r, (source, stubs) in sources.items():
                todo_all = qs if stubs is None else [q for q in qs if q.uid in stubs]
                written = None if stubs is None else [stubs[q.uid] for q in todo_all]
                per_k = base_found if a is base else discover(a, [q.query for q in todo_all], written, ks, retriever)
                for k in ks:
                    spec = setup.spec("ksweep", a.name, subset, k, r, source_run_id=source.id)
                    opened = open_run(store, spec, todo_all, resume, setup.git_commit, config)
                    if not opened:
                        continue
                    run_id, todo = opened
                    found = {q.uid: d for q, d in zip(todo_all, per_k[k])}
                    rows = []
                    for q in todo:
                        fallback = stubs is not None and stubs[q.uid].fallback
                        row = base_row(run_id, q, found[q.uid], with_hits=r == 0 and k == ks[-1],
                                       fallback=a.carries_stubs and fallback)
                        if not a.baseline:
                            row.update(overlap_fields(found[q.uid], base_keys[k][q.uid]))
                        if a.carries_stubs and r == 0:
                            row.update(stubs=stubs_json(stubs[q.uid].stubs, None, q, None, fallback),
                                       stub_fallback=fallback)
                        rows.append(row)
                    insert_run(store, run_id, rows)
                    touched.append(run_id)
    return touched
