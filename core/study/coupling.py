"""Each query's Intent-Registry Coupling (core.evaluation.coupling) on its registry: one batched encode of the
queries, their gold rows' stored corpus vectors."""
from __future__ import annotations

from collections.abc import Sequence

from core.data.toolbench import Query
from core.evaluation.coupling import coupling
from core.retrieval.discovery import Retriever


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
