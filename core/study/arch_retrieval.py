"""Each declared architecture's retrieval (core.archs) behind one signature, for one query and for a batch:
the single query, `eval` and the Inspector call these through the declarations, never by name."""
from __future__ import annotations

from collections.abc import Sequence

from core.agents.stubs import StubOutcome
from core.retrieval.batch import hybrid_batch, ptr_batch, rtp_batch, truncate
from core.retrieval.discovery import Discovery, Retriever, Stub, hybrid_retrieve, ptr_retrieve, rtp
from core.study.query_result import StubWriting


def beside_query(written: StubOutcome | StubWriting) -> tuple[Stub, ...]:
    """The stubs the hybrid searches besides the raw query: none after a fallback, whose one stub is the raw
    query itself. Written now (StubOutcome) or stored (StubWriting): the Inspector's gold trace follows it too."""
    return () if written.fallback else written.stubs


def rtp_one(query: str, written: StubOutcome | None, k: int, retriever: Retriever) -> Discovery:
    return rtp(query, k, retriever)


def ptr_one(query: str, written: StubOutcome, k: int, retriever: Retriever) -> Discovery:
    return ptr_retrieve(written.stubs, k, retriever)


def hybrid_one(query: str, written: StubOutcome, k: int, retriever: Retriever) -> Discovery:
    return hybrid_retrieve(query, beside_query(written), k, retriever)


def rtp_many(texts: Sequence[str], written: Sequence[StubOutcome] | None, ks: Sequence[int],
             retriever: Retriever) -> dict[int, list[Discovery]]:
    """Retrieved once at the largest k; smaller k are its prefixes."""
    base = rtp_batch(texts, max(ks), retriever)
    return {k: [truncate(d, k) for d in base] for k in ks}


def ptr_many(texts: Sequence[str], written: Sequence[StubOutcome], ks: Sequence[int],
             retriever: Retriever) -> dict[int, list[Discovery]]:
    return ptr_batch([w.stubs for w in written], ks, retriever)


def hybrid_many(texts: Sequence[str], written: Sequence[StubOutcome], ks: Sequence[int],
                retriever: Retriever) -> dict[int, list[Discovery]]:
    return hybrid_batch(texts, [beside_query(w) for w in written], ks, retriever)
