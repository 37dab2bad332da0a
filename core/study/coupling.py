"""Each query's Intent-Registry Coupling (core.evaluation.coupling) on its registry, measured once and kept
(core.analysis.coupling_gains sets it against a system's stored PtR - RtP).

Couplings need the registry's retriever and one encode of its queries (30-45 s for every registry on 2 cores), so
they are kept in CACHE_DIR/tables under the model, the registry's content and the queries' text and gold: the
dashboard and the CLI compute them once per clone.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path

from core.data.toolbench import Query
from core.files import CannotWrite, ensure_folder, write_atomic
from core.evaluation.coupling import coupling
from core.retrieval.discovery import Retriever
from core.retrieval.embedding import cache_key, canonical_model_id
from core.settings import Settings

RetrieverFor = Callable[[Settings], Retriever]


def coupling_registries() -> list[str]:
    """Every registry but ToolBench's documented subset (its queries are the full registry's, so its couplings
    would count ToolBench twice)."""
    from core.registries import REGISTRY_LIST

    return [r.name for r in REGISTRY_LIST if r.study is None]


def query_couplings(retriever: Retriever, queries: Sequence[Query], gold: str = "api_list") -> dict[str, float]:
    """{query uid: coupling} for the queries with a gold API in the registry (the others have none to measure)."""
    vectors = retriever.encode([q.query for q in queries])
    out = {}
    for query, vector in zip(queries, vectors):
        rows = [row for key in sorted(query.gold(gold)) if (row := retriever.registry.row(key)) is not None]
        value = coupling(vector, retriever.corpus_vectors[rows])
        if value is not None:
            out[query.uid] = value
    return out


def couplings_path(settings: Settings) -> Path:
    """Where this registry's couplings are kept: named for the model, the registry's content and its queries."""
    from core.data.loaders import queries_for, registry_for

    queries = sorted((q.uid, q.query, sorted(q.gold("api_list"))) for q in queries_for(settings))
    digest = hashlib.sha256(json.dumps(queries, ensure_ascii=False).encode()).hexdigest()[:16]
    key = cache_key(canonical_model_id(settings.embedding_model), registry_for(settings))
    return settings.cache_dir / "tables" / f"coupling-{key}-{digest}.json"


def cached_couplings(settings: Settings) -> dict[str, float] | None:
    """The kept couplings of the configured registry; None when none are kept (or the file is unreadable)."""
    try:
        value = json.loads(couplings_path(settings).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(value, dict) or not all(isinstance(v, float) for v in value.values()):
        return None
    return value


def registry_couplings(settings: Settings, retriever_for: RetrieverFor) -> dict[str, float]:
    """The configured registry's couplings, kept or computed (and kept, when CACHE_DIR can be written)."""
    kept = cached_couplings(settings)
    if kept is not None:
        return kept
    from core.data.loaders import queries_for

    value = query_couplings(retriever_for(settings), list(queries_for(settings)))
    path = couplings_path(settings)
    try:
        ensure_folder(path.parent)
        write_atomic(path, json.dumps(value))
    except CannotWrite:  # a read-only or full cache only costs the next caller the encode
        pass
    return value


def couplings_kept(settings: Settings, names: Sequence[str]) -> bool:
    """Whether every one of these registries' couplings is kept (a page can then draw them at once)."""
    return all(cached_couplings(settings.with_(registry=name)) is not None for name in names)
