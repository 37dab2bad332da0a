"""Distractor scale (beyond the paper): the scaling study continued past the real registry with SYNTHETIC
distractor vectors (core.retrieval.synthetic), RtP and PtR by exact search, stubs of main run 0.

Sizes above the real registry are reached by adding distractors to all of its real APIs; the real registry
itself is the first point (seed 0). Each seed draws its own distractors, nested across sizes. Every run's
config says "synthetic_distractors" and how they were drawn; the pages label these points synthetic.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.data.toolbench import Query
from core.progress import progress_bar
from core.retrieval.archs import WrittenStubs, planning
from core.retrieval.discovery import Retriever
from core.retrieval.index import VectorIndex
from core.retrieval.memo import memoised
from core.retrieval.synthetic import DistractorModel, DistractorRetriever
from core.study.catalog import MAIN_K, SCALING_SEEDS, SCALING_SIZES, BenchContext
from core.study.rows import by_subset
from core.study.runner import open_run
from core.study.scaling import store_retrieval_runs, subset_gold_rows
from core.study.setup import Setup
from core.study.sources import main_sources, stored_stubs
from core.store.store import RunSpec, Store

QUERY_CHUNK = 64  # queries per batched search: an exact search of 1M rows scores chunk x 1M at once
FIT_SEED = 0  # the seed of the distractor mixture's one fit; the study's seeds draw from that one mixture


@dataclass(frozen=True)
class Source:
    """What a subset's runs build on: the main study's setup, its RtP and PtR run 0, and that PtR run's stubs."""

    setup: Setup
    rtp_run: int
    ptr_run: int
    stubs: dict[str, WrittenStubs]


def distractor_sizes(sizes: Sequence[int | None], registry_size: int) -> list[int]:
    """The real registry, then every requested size above it (smaller sizes are the scaling study's)."""
    return [registry_size, *sorted({int(s) for s in sizes if s is not None and s > registry_size})]


def run_distractors(context: BenchContext, *, k: int = MAIN_K, sizes: Sequence[int | None] = SCALING_SIZES,
                    seeds: int = SCALING_SEEDS) -> list[int]:
    """RtP and PtR (stubs of main run 0) on the real registry plus synthetic distractors, exact flat search.

    The mixture is fitted once (seed FIT_SEED); seed s draws distractors with default_rng([s, block]).
    """
    store, resume = context.store, context.resume
    retriever = memoised(context.retriever)
    n = len(retriever.registry)
    totals = distractor_sizes(sizes, n)
    subsets = by_subset(context.queries)
    sources: dict[str, Source] = {}
    for subset, qs in subsets.items():
        src = main_sources(store, retriever, subset, *context.main_backend)
        sources[subset] = Source(Setup.of_run(src.rtp, context.commit), src.rtp.id, src.ptr[0].id,
                                 stored_stubs(store, src.ptr[0].id, qs))
    model: DistractorModel | None = None
    touched: list[int] = []
    bar = progress_bar(sum(1 if total == n else seeds for total in totals), "bench distractors", context.progress)
    try:
        for seed in range(seeds):
            cells = [total for total in totals if seed == 0 or total > n]
            specs = {(total, subset, a.name): sources[subset].setup.spec(
                         "distractors", a.name, subset, k, 0, sub_size=total, sub_seed=seed,
                         source_run_id=sources[subset].ptr_run if a.needs_stubs else sources[subset].rtp_run)
                     for total in cells for subset in subsets for a in planning()}
            pending = sorted({key[0] for key, spec in specs.items() if not (resume and _finished(store, spec))})
            if pending and pending[-1] > n and model is None:
                model = DistractorModel.fit(retriever.index.vectors, FIT_SEED)
            vectors, parents = (model.extended(pending[-1], seed) if pending and pending[-1] > n and model
                                else (retriever.index.vectors, None))
            for total in cells:
                if total in pending:
                    drawn = {"distractors": {**model.provenance(), "draw_seed": seed}} if total > n and model else {}
                    run_config = {**context.config, "index": {"kind": "flat"}, "synthetic_distractors": total - n,
                                  **drawn}
                    index = VectorIndex(vectors[:total])
                    view = (retriever.with_index(index) if total == n
                            else DistractorRetriever(retriever, index, parents))
                    touched += _write_cell(store, view, subsets, sources, specs, total, k, resume, run_config)
                bar.update(1)
            del vectors, parents
    finally:
        bar.close()
    return touched


def _finished(store: Store, spec: RunSpec) -> bool:
    found = store.find_run(spec)
    return found is not None and found.status in ("complete", "skipped")


def _write_cell(store: Store, view: Retriever, subsets: dict[str, list[Query]], sources: dict[str, Source],
                specs: dict[tuple[int, str, str], RunSpec], total: int, k: int, resume: bool,
                config: dict[str, Any]) -> list[int]:
    """Every unfinished run of one registry size: RtP and PtR searched in chunks of queries, rows inserted."""
    touched = []
    for subset, qs in subsets.items():
        setup, stubs = sources[subset].setup, sources[subset].stubs
        with_stubs = [q for q in qs if q.uid in stubs]
        opened = {(a.name, k): open_run(store, specs[(total, subset, a.name)], with_stubs, resume, setup.git_commit,
                                   {**config, "gold_apis": len(subset_gold_rows(view, qs))})
                  for a in planning()}
        if not any(opened.values()):
            continue
        touched += store_retrieval_runs(store, view, opened, with_stubs, stubs, QUERY_CHUNK)
    return touched
