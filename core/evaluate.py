"""Batch retrieval over benchmark queries and per-query scoring against a gold definition.

Retrieval runs once at the largest k; smaller k truncate it. For PtR that is exact: a row in the
max-score top-k is always inside some stub's top-k, so per-stub depth beyond k changes nothing but
the reported search width, which is recomputed per k.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core import metrics
from core.discovery import QUERY_LABEL, Discovery, Retriever, Stub, merge_stub_hits
from core.stats import summarise
from core.toolbench import Query

GOLD_DEFINITIONS = ("api_list", "relevant")


@dataclass(frozen=True)
class QueryScore:
    uid: str
    k: int
    recall: float | None
    precision: float
    hit: float


def rtp_batch(texts: Sequence[str], k: int, retriever: Retriever) -> list[Discovery]:
    """RtP for many queries with one encode call and one batched search."""
    vectors = retriever.encode(texts)
    scores, rows = retriever.index.batch_search(vectors, k)
    return [Discovery("rtp", k, tuple(retriever.hits_for(scores[i], rows[i])), search_width=rows.shape[1])
            for i in range(len(texts))]


def _merged_batch(arch: str, searches: Sequence[Sequence[tuple[str, str]]], stub_lists: Sequence[Sequence[Stub]],
                  ks: Sequence[int], retriever: Retriever) -> dict[int, list[Discovery]]:
    """Per query, several (label, text) searches merged by best similarity; one encode, one search."""
    flat = [item for group in searches for item in group]
    vectors = retriever.encode([text for _, text in flat])
    scores, rows = retriever.index.batch_search(vectors, max(ks))
    out: dict[int, list[Discovery]] = {k: [] for k in ks}
    start = 0
    for group, stubs in zip(searches, stub_lists):
        block = range(start, start + len(group))
        start += len(group)
        # Each search's own best (registry row, cosine), before the lists are merged.
        top1 = [(int(rows[i, 0]), float(scores[i, 0])) for i in block]
        for k in ks:
            merged, width = merge_stub_hits([(flat[i][0], scores[i, :k], rows[i, :k]) for i in block], k)
            out[k].append(Discovery(arch, k, retriever.merged_hits(merged), tuple(stubs), width,
                                    extra={"stub_top1": top1}))
    return out


def ptr_batch(stub_lists: Sequence[Sequence[Stub]], ks: Sequence[int], retriever: Retriever,
              stub_text: str = "name_reasoning") -> dict[int, list[Discovery]]:
    """PtR retrieval for many queries' stubs at every k in ks, with one encode and one search."""
    searches = [[(s.name, s.text(stub_text)) for s in stubs] for stubs in stub_lists]
    return _merged_batch("ptr", searches, stub_lists, ks, retriever)


def hybrid_batch(texts: Sequence[str], stub_lists: Sequence[Sequence[Stub]], ks: Sequence[int],
                 retriever: Retriever, stub_text: str = "name_reasoning") -> dict[int, list[Discovery]]:
    """core.discovery.hybrid_retrieve for many queries: each query's stubs plus the query itself.
    extra["stub_top1"] lists the query's own best first, then each stub's."""
    searches = [[(QUERY_LABEL, text), *((s.name, s.text(stub_text)) for s in stubs)]
                for text, stubs in zip(texts, stub_lists)]
    return _merged_batch("hybrid", searches, stub_lists, ks, retriever)


def truncate(discovery: Discovery, k: int) -> Discovery:
    return Discovery(discovery.arch, k, discovery.hits[:k], discovery.stubs, min(discovery.search_width, k),
                     discovery.latency_s)


def score_query(query: Query, ranked: Sequence[tuple[str, str]], gold: str, k: int) -> QueryScore:
    gold_set = query.gold(gold)
    return QueryScore(query.uid, k, metrics.recall_at_k(ranked, gold_set, k),
                      metrics.precision_at_k(ranked, gold_set, k), metrics.hit_at_k(ranked, gold_set, k))


def aggregate(scores: Sequence[QueryScore]) -> dict:
    recall, precision, hit = (summarise(getattr(s, f) for s in scores) for f in ("recall", "precision", "hit"))
    return {"n": len(scores), "recall": recall.mean, "recall_std": recall.std, "precision": precision.mean,
            "precision_std": precision.std, "hit_rate": hit.mean}



def write_all_stubs(writer, texts: Sequence[str], concurrency: int = 1) -> list:
    """StubOutcomes for many queries, in order; LLM calls may run concurrently."""
    if concurrency <= 1:
        return [writer.write(t) for t in texts]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        return list(pool.map(writer.write, texts))


def evaluate_subset(settings, retriever: Retriever, arch: str, subset: str, gold: str, ks: Sequence[int],
                    use_cache: bool = True, concurrency: int = 4) -> list[dict]:
    """`python -m core eval`: one aggregate row per k for an architecture on a subset."""
    from core.inspect import make_agents
    from core.lab import queries_for

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
