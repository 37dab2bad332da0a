"""Registry scaling: both architectures on stratified sub-registries x seeds, stubs of main run 0.

Every sub-registry holds every gold API of the subset (both definitions) plus category-proportional
distractors; retrieval only.
"""
from __future__ import annotations

from collections.abc import Sequence

from core.data.registry import stratified_rows
from core.data.toolbench import GOLD_DEFINITIONS, Query
from core.progress import progress_bar
from core.retrieval.archs import Arch, WrittenStubs, arch, baseline, discover, planning
from core.retrieval.discovery import Discovery, Retriever
from core.retrieval.memo import memoised
from core.study.catalog import MAIN_K, SCALING_SEEDS, SCALING_SIZES, BenchContext
from core.study.rows import by_subset, retrieval_rows
from core.study.runner import insert_run, open_run
from core.study.setup import Setup
from core.study.sources import Sources, main_sources, stored_stubs
from core.store.store import Store


def subset_gold_rows(retriever: Retriever, queries: Sequence[Query]) -> list[int]:
    """Registry rows of every gold API (both definitions) of these queries."""
    keys = {key for q in queries for gold in GOLD_DEFINITIONS for key in q.gold(gold)}
    return retriever.registry.rows_of(keys)


def scaling_sizes(sizes: Sequence[int | None], registry_size: int) -> list[int]:
    """Requested sizes as row counts; None and sizes at or above the registry collapse into the full registry."""
    return sorted({registry_size if s is None or s >= registry_size else int(s) for s in sizes})


def run_scaling(context: BenchContext, *, k: int = MAIN_K, sizes: Sequence[int | None] = SCALING_SIZES,
                seeds: int = SCALING_SEEDS) -> list[int]:
    """Both architectures on stratified sub-registries x seeds, with stubs of main run 0; retrieval only.

    The full registry needs no sampling, so it is run once (seed 0). A size too small to hold the
    subset's gold APIs is recorded once (seed 0) as a `skipped` run with the reason, never silently
    dropped.
    """
    store, resume = context.store, context.resume
    retriever = memoised(context.retriever)
    n = len(retriever.registry)
    touched: list[int] = []
    subsets = by_subset(context.queries)
    gold = {subset: subset_gold_rows(retriever, qs) for subset, qs in subsets.items()}
    cells = [(s, size, seed) for s in subsets for size in scaling_sizes(sizes, n)
             for seed in ([0] if size == n or size < len(gold[s]) else range(seeds))]
    bar = progress_bar(len(cells), "bench scaling", context.progress)
    sources: dict[str, tuple[Sources, dict[str, WrittenStubs]]] = {}
    for subset, size, seed in cells:
        qs, gold_rows = subsets[subset], gold[subset]
        if subset not in sources:
            src = main_sources(store, retriever, subset, *context.main_backend)
            sources[subset] = (src, stored_stubs(store, src.ptr[0].id, qs))
        src, stubs = sources[subset]
        setup = Setup.of_run(src.rtp, context.commit)
        with_stubs = [q for q in qs if q.uid in stubs]
        extra = {"sub_size": size, "sub_seed": seed}
        cell_config = {**context.config, "gold_apis": len(gold_rows)}
        specs = {a.name: setup.spec("scaling", a.name, subset, k, 0, source_run_id=source_run(src, a), **extra)
                 for a in planning()}
        if size < len(gold_rows):
            note = f"{len(gold_rows):,} gold APIs of {subset} do not fit in a {size:,}-API registry"
            for spec in specs.values():
                if not (resume and store.find_run(spec)):
                    touched.append(store.start_run(spec, 0, setup.git_commit, cell_config, status="skipped",
                                                   note=note))
            bar.update(1)
            continue
        opened = {(name, k): open_run(store, spec, with_stubs, resume, setup.git_commit, cell_config)
                  for name, spec in specs.items()}
        if any(opened.values()):
            view = retriever if size == n else retriever.with_index(
                retriever.index.subindex(stratified_rows(retriever.registry, size, gold_rows, seed)))
            touched += store_retrieval_runs(store, view, opened, with_stubs, stubs)
    return touched


def source_run(src: Sources, a: Arch) -> int:
    """The main run a scaling cell of `a` builds on: PtR's run 0 (its stubs) when `a` searches stubs, else RtP's."""
    return src.ptr[0].id if a.needs_stubs else src.rtp.id


def store_retrieval_runs(store: Store, view: Retriever, opened: dict[tuple[str, int], tuple[int, list[Query]] | None],
                         queries: Sequence[Query], stubs: dict[str, WrittenStubs],
                         chunk: int | None = None) -> list[int]:
    """Each opened run's architecture (by name) at its k on one registry view, from stored stubs, then its rows
    inserted: what the scaling, distractor and retriever-axis studies do per cell. Each architecture is searched once,
    at the deepest k asked (smaller ks are exact prefixes, core.retrieval.archs.discover). `chunk` bounds how many
    queries are searched at once (a million-vector view); None searches them in one batch. Returns the run ids
    written."""
    base = baseline()
    wanted = [key for key, got in opened.items() if got is not None]
    ks = sorted({k for _, k in wanted})
    archs = {arch(name) for name, _ in wanted}
    found: dict[tuple[str, int], dict[str, Discovery]] = {(a.name, k): {} for a in {base, *archs} for k in ks}
    for start in range(0, len(queries), chunk or max(1, len(queries))):
        part = queries[start:start + (chunk or len(queries))]
        for a in {base, *archs}:
            written = [stubs[q.uid] for q in part] if a.needs_stubs else None
            for k, discoveries in discover(a, [q.query for q in part], written, ks, view).items():
                found[(a.name, k)].update(zip((q.uid for q in part), discoveries))
    touched = []
    for name, k in wanted:
        run_id, todo = opened[(name, k)]
        insert_run(store, run_id, retrieval_rows(run_id, todo, arch(name), found[(name, k)], found[(base.name, k)]))
        touched.append(run_id)
    return touched
