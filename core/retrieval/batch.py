"""Batch retrieval over many queries: one encode call and one batched search per architecture.

Retrieval runs once at the largest k; smaller k truncate it. For PtR that is exact: a row in the
max-score top-k is always inside some stub's top-k, so per-stub depth beyond k changes nothing but
the reported search width, which is recomputed per k.
"""
from __future__ import annotations

from collections.abc import Sequence

from core.retrieval.discovery import QUERY_LABEL, Discovery, Retriever, Stub, merge_stub_hits


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
    """core.retrieval.discovery.hybrid_retrieve for many queries: each query's stubs plus the query itself.
    extra["stub_top1"] lists the query's own best first, then each stub's."""
    searches = [[(QUERY_LABEL, text), *((s.name, s.text(stub_text)) for s in stubs)]
                for text, stubs in zip(texts, stub_lists)]
    return _merged_batch("hybrid", searches, stub_lists, ks, retriever)


def truncate(discovery: Discovery, k: int) -> Discovery:
    return Discovery(discovery.arch, k, discovery.hits[:k], discovery.stubs, min(discovery.search_width, k),
                     discovery.latency_s)

