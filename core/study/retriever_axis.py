"""The retriever axis: RtP, PtR and hybrid searched by another retriever, with the stubs every stored discovery system
wrote for the main study. Stubs do not depend on the retriever (the paper's scaling study reuses them too), so this
makes no LLM call.

Each run records the retriever that searched in `embedding_model` (its hub id) and, in its config, the weights'
sha256 and the retriever the stubs' main study searched with; `source_run_id` is that main run.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from core.embedding_models import LEXICAL, declared_embedding_model
from core.retrieval.archs import declared
from core.retrieval.discovery import Retriever
from core.retrieval.memo import memoised
from core.study.catalog import KSWEEP_KS, BenchContext
from core.study.rows import by_subset
from core.study.runner import open_run
from core.study.scaling import source_run, store_retrieval_runs
from core.study.setup import Setup
from core.study.sources import main_sources, stored_stubs

AXIS_SUBSETS = ("G1_instruction", "G2_instruction", "G3_instruction")  # the and the paper's headline three


def stored_systems(context: BenchContext) -> list[tuple[str, str]]:
    """(backend, model) of every discovery system with a complete main study on the context's registry and
    retriever: the heuristic and each local model, whichever are stored."""
    source = context.retriever
    pairs = {(run.spec.llm_backend, run.spec.llm_model) for run in context.store.runs("main", "complete")
             if run.spec.registry_hash == source.registry.content_hash[:16]
             and run.spec.embedding_model == source.encoder.model_id}
    return sorted(pairs)


def run_axis(context: BenchContext, other: Retriever, *, ks: Sequence[int] = KSWEEP_KS) -> list[int]:
    """Every declared architecture searched by `other` at each k, per subset and stored system, from that system's
    main run 0 stubs (found with the context's retriever); the run ids written. The headline table reads k=5; the
    other ks are the axis's k sweep, beside the main study's own (kind ksweep)."""
    view = memoised(other)
    spec_of = declared_embedding_model(other.encoder.model_id)
    touched: list[int] = []
    for subset, queries in by_subset([q for q in context.queries if q.subset in AXIS_SUBSETS]).items():
        for backend, model in stored_systems(context):
            try:
                src = main_sources(context.store, context.retriever, subset, backend, model)
            except ValueError:  # this system has no complete main study of the subset
                continue
            stubs = stored_stubs(context.store, src.ptr[0].id, queries)
            with_stubs = [q for q in queries if q.uid in stubs]
            setup = replace(Setup.of_run(src.rtp, context.commit), embedding_model=other.encoder.model_id)
            config: dict[str, Any] = {**context.config, "stubs_from": context.retriever.encoder.model_id,
                                      "retriever_runtime": other.encoder.runtime,
                                      "retriever_sha256": spec_of.sha256 if spec_of else None}
            opened = {(a.name, k): open_run(
                context.store, setup.spec("retrievers", a.name, subset, k, 0, source_run_id=source_run(src, a)),
                with_stubs, context.resume, setup.git_commit, config) for a in declared() for k in sorted(set(ks))}
            if any(opened.values()):
                touched += store_retrieval_runs(context.store, view, opened, with_stubs, stubs)
    return touched


def run_retrievers(context: BenchContext, *, ks: Sequence[int] = KSWEEP_KS,
                   retrievers: list[str] | None = None) -> list[int]:
    """run_axis for each retriever named (default: BM25 and every declared embedding model but the context's), an
    embedding model's built from its installed model and index (`make embed` first; a missing index is embedded with
    a progress bar), BM25's from the registry's documents (about a second)."""
    from core.embedding_models import EMBEDDING_MODELS
    from core.retrieval.assemble import build_retriever

    own = context.retriever.encoder.model_id
    names = retrievers if retrievers is not None else [
        LEXICAL, *(n for n, s in EMBEDDING_MODELS.items() if s.model_id != own)]
    touched: list[int] = []
    for name in names:
        other, _ = build_retriever(context.settings.with_(embedding_model=name), registry=context.retriever.registry)
        touched += run_axis(context, other, ks=ks)
    return touched
