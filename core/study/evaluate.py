"""`python -m core eval`: per-query scoring against a gold definition, and its aggregate per subset."""
from __future__ import annotations

from collections.abc import Sequence

from core.agents.factory import make_agents
from core.data.loaders import queries_for
from core.data.toolbench import GOLD_DEFINITIONS
from core.retrieval.batch import hybrid_batch, ptr_batch, rtp_batch, truncate
from core.retrieval.discovery import Retriever
from core.settings import Settings
from core.study.scoring import aggregate, score_query


def write_all_stubs(writer, texts: Sequence[str], concurrency: int = 1) -> list:
    """StubOutcomes for many queries, in order; LLM calls may run concurrently."""
    if concurrency <= 1:
        return [writer.write(t) for t in texts]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        return list(pool.map(writer.write, texts))


def evaluate_subset(settings: Settings, retriever: Retriever, arch: str, subset: str, gold: str, ks: Sequence[int],
                    use_cache: bool = True, concurrency: int = 4) -> list[dict]:
    """`python -m core eval`: one aggregate row per k for an architecture on a subset."""
    if gold not in GOLD_DEFINITIONS:
        raise ValueError(f"gold must be one of {GOLD_DEFINITIONS}")
    queries = queries_for(settings, subset)
    texts = [q.query for q in queries]
    extra: dict = {}
    if arch == "rtp":
        base = rtp_batch(texts, max(ks), retriever)
        per_k = {k: [truncate(d, k) for d in base] for k in ks}
    elif arch in ("ptr", "hybrid"):
        agents = make_agents(settings, retriever, use_cache)
        outcomes = write_all_stubs(agents.stub_writer, texts, concurrency)
        stub_lists = [o.stubs for o in outcomes]
        per_k = (ptr_batch(stub_lists, ks, retriever) if arch == "ptr"
                 else hybrid_batch(texts, stub_lists, ks, retriever))
        extra = {"backend": outcomes[0].label if outcomes else agents.stub_writer.backend,
                 "stub_fallbacks": sum(o.fallback for o in outcomes)}
    else:
        raise ValueError(f"arch must be rtp, ptr or hybrid, not {arch!r}")
    rows = []
    for k in ks:
        scores = [score_query(q, d.keys, gold, k) for q, d in zip(queries, per_k[k])]
        rows.append({"subset": subset, "arch": arch, "gold": gold, "k": k, **aggregate(scores),
                     "registry": retriever.registry.name, "registry_size": len(retriever.registry),
                     "embedding_model": retriever.encoder.model_id,
                     "mean_search_width": sum(d.search_width for d in per_k[k]) / max(len(queries), 1), **extra})
    return rows
