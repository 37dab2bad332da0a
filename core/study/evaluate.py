"""`python -m core eval`: per-query scoring against a gold definition, and its aggregate per subset."""
from __future__ import annotations

from collections.abc import Sequence

from core.agents.factory import make_agents
from core.retrieval.archs import arch as declared_arch, discover
from core.data.loaders import queries_for
from core.data.toolbench import gold_definition
from core.retrieval.discovery import Retriever
from core.settings import Settings
from core.evaluation.scoring import aggregate, score_query


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
    gold_definition(gold)  # ValueError naming the definitions
    queries = queries_for(settings, subset)
    texts = [q.query for q in queries]
    declared = declared_arch(arch)
    written: list | None = None
    extra: dict = {}
    if declared.needs_stubs:
        agents = make_agents(settings, retriever, use_cache)
        written = write_all_stubs(agents.stub_writer, texts, concurrency)
        extra = {"backend": written[0].label if written else agents.stub_writer.backend,
                 "stub_fallbacks": sum(o.fallback for o in written)}
    per_k = discover(declared, texts, written, ks, retriever)
    rows = []
    for k in ks:
        scores = [score_query(q, d.keys, gold, k) for q, d in zip(queries, per_k[k])]
        rows.append({"subset": subset, "arch": arch, "gold": gold, "k": k, **aggregate(scores),
                     "registry": retriever.registry.name, "registry_size": len(retriever.registry),
                     "embedding_model": retriever.encoder.model_id,
                     "mean_search_width": sum(d.search_width for d in per_k[k]) / max(len(queries), 1), **extra})
    return rows
