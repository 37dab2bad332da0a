"""Hybrid discovery (beyond the paper): a main run's stored stubs plus the raw query; retrieval only."""
from __future__ import annotations

from core.retrieval.archs import Arch, baseline, declared, discover
from core.retrieval.memo import memoised
from core.study.catalog import BenchContext
from core.study.rows import base_row, overlap_fields
from core.study.runner import insert_run, open_run
from core.study.sources import main_study_subsets, stored_stubs


def hybrid_archs() -> tuple[Arch, ...]:
    """The architectures this study runs: those that search the stubs but do not plan (the hybrid)."""
    return tuple(a for a in declared() if a.needs_stubs and not a.plans)


def run_hybrid(context: BenchContext) -> list[int]:
    """Each of hybrid_archs at the main study's k, one run per PtR main run, from that run's stored stubs (a
    fallback stub is the raw query, which the hybrid searches anyway). No LLM calls; retrieval only."""
    store = context.store
    retriever = memoised(context.retriever)
    touched: list[int] = []
    for subset, qs, src, setup in main_study_subsets(context, "hybrid"):
        k = src.rtp.spec.k
        base = discover(baseline(), [q.query for q in qs], None, [k], retriever)[k]
        base_keys = {q.uid: d.keys for q, d in zip(qs, base)}
        for r, source in src.ptr.items():
            stubs = stored_stubs(store, source.id, qs)
            with_stubs = [q for q in qs if q.uid in stubs]
            for a in hybrid_archs():
                opened = open_run(store, setup.spec("hybrid", a.name, subset, k, r, source_run_id=source.id),
                                  with_stubs, context.resume, setup.git_commit, context.config)
                if not opened:
                    continue
                run_id, todo = opened
                found = discover(a, [q.query for q in todo], [stubs[q.uid] for q in todo], [k], retriever)[k]
                insert_run(store, run_id, [{**base_row(run_id, q, d, with_hits=r == 0),
                                             **overlap_fields(d, base_keys[q.uid])} for q, d in zip(todo, found)])
                touched.append(run_id)
    return touched
