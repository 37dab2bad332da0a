"""What the studies built on the main runs read back: the latest complete main study and its stubs."""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from core.data.toolbench import Query
from core.progress import progress_bar
from core.retrieval.archs import WrittenStubs, baseline, stub_carrier
from core.retrieval.discovery import Retriever, Stub
from core.study.catalog import BenchContext
from core.study.rows import by_subset
from core.study.setup import Setup
from core.store.store import RunRecord, Store


@dataclass(frozen=True)
class Sources:
    """The main runs a k sweep or scaling study builds on: the baseline's (RtP's) run 0 and the stub carrier's
    (PtR's) runs by run index, whose stubs they search."""

    rtp: RunRecord
    ptr: dict[int, RunRecord]


def main_sources(store: Store, retriever: Retriever, subset: str, llm_backend: str | None = None,
                 llm_model: str | None = None) -> Sources:
    """The latest complete main study on this registry and embedding model (optionally one backend, and one
    of its models: the local backend has several).

    Its setup is taken from the latest complete PtR main run; runs of other setups are never mixed in.
    """
    match: dict[str, Any] = {"registry_hash": retriever.registry.content_hash[:16],
                             "embedding_model": retriever.encoder.model_id}
    if llm_backend:
        match["llm_backend"] = llm_backend
    if llm_model:
        match["llm_model"] = llm_model
    carrier, base = stub_carrier().name, baseline().name
    ptr_any = store.latest_complete("main", carrier, subset, **match)
    if not ptr_any:
        raise ValueError(f"no complete main run for {subset} on registry {retriever.registry.name} with "
                         f"{retriever.encoder.model_id}" + (f" and backend {llm_backend}" if llm_backend else "")
                         + ": run `python -m core bench main` first")
    latest = max(ptr_any.values(), key=lambda r: r.id).spec
    match.update(llm_backend=latest.llm_backend, llm_model=latest.llm_model, k=latest.k,
                 discovery_prompt_version=latest.discovery_prompt_version,
                 planner_prompt_version=latest.planner_prompt_version)
    ptr = store.latest_complete("main", carrier, subset, **match)
    rtp = store.latest_complete("main", base, subset, **match)
    if 0 not in rtp or 0 not in ptr:
        raise ValueError(f"the latest main study for {subset} has no complete run 0: rerun `bench main --resume`")
    return Sources(rtp[0], ptr)


def stored_stubs(store: Store, run_id: int, queries: Sequence[Query]) -> dict[str, WrittenStubs]:
    """query uid -> the stubs a main run wrote (after a fallback: the raw query, rebuilt from `queries`); failed
    rows and queries not given are left out."""
    by_uid = {q.uid: q for q in queries}
    out: dict[str, WrittenStubs] = {}
    for row in store.results(run_id, ("query_uid", "stubs", "stub_fallback", "error")):
        query = by_uid.get(row["query_uid"])
        if query is None or not row["stubs"] or row["error"]:
            continue
        if row["stub_fallback"]:
            out[query.uid] = WrittenStubs((Stub(query.query),), True)
        else:
            out[query.uid] = WrittenStubs(tuple(Stub(s["name"], s.get("reasoning", "")) for s in row["stubs"]))
    return out


def main_study_subsets(context: BenchContext, study: str) -> Iterator[tuple[str, list[Query], Sources, Setup]]:
    """Per subset, for studies built on the main runs: its queries, those runs and their setup (progress per subset)."""
    subsets = by_subset(context.queries)
    bar = progress_bar(len(subsets), f"bench {study}", context.progress, unit="subset")
    backend, model = context.main_backend  # the model too: the local backend has several
    try:
        for subset, qs in subsets.items():
            src = main_sources(context.store, context.retriever, subset, backend, model)
            yield subset, qs, src, Setup.of_run(src.rtp, context.commit)
            bar.update(1)
    finally:
        bar.close()
