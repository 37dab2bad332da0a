"""The discovery architectures: Retrieve-then-Plan, Plan-then-Retrieve and a hybrid, as Discovery records.

RtP embeds the raw query; PtR embeds each abstract tool stub, unions the per-stub top-k,
scores each candidate by its best stub similarity and keeps the top-k overall.
"""
from __future__ import annotations

import time
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from core.retrieval.embedding import Encoder
from core.retrieval.index import VectorIndex
from core.retrieval.records import Hit, Stub
from core.data.registry import Registry
from core.data.toolbench import ApiKey

MAX_QUERY_CHARS = 100_000
MAX_K = 100  # APIs per search: the study needs 20; 47k hits were 21 MB of JSON and took minutes to score
UNDECODABLE = "\ufffd"  # what a URL or a lenient decoder puts where a byte was not UTF-8
QUERY_LABEL = "(query)"  # the hybrid's extra search: the raw query, as RtP embeds it


class QueryError(ValueError):
    """A query that cannot be searched; the message is shown to the user as is."""


def clean_query(query: str | None) -> str:
    """The query stripped, or QueryError saying why it cannot be searched.

    Undecodable text (a lone surrogate, which is how Python hands over command-line bytes that are not
    UTF-8, or U+FFFD, which a URL's invalid bytes become) is refused rather than repaired: a repaired
    query is not the one the user typed, and the tokenizer cannot take surrogates. A query with no
    letter or digit (only emoji, punctuation, control or zero-width characters) embeds to an arbitrary
    point, so it is refused too rather than answered with arbitrary hits.
    """
    text = (query or "").strip()
    if not text:
        raise QueryError("The query is empty: type what the agent should do.")
    if len(text) > MAX_QUERY_CHARS:
        raise QueryError(f"The query has {len(text):,} characters; the limit is {MAX_QUERY_CHARS:,}.")
    bad = undecodable_at(text)
    if bad is not None:
        what = ("the replacement mark left where a byte could not be decoded" if text[bad] == UNDECODABLE
                else "a byte that is not UTF-8, or a lone surrogate")
        raise QueryError(f"The query is not valid UTF-8 text: character {bad + 1} ({ascii(text[bad])}) is {what}; "
                         "retype it, or fix the encoding of the terminal or file it came from.")
    if not any(unicodedata.category(char)[0] in "LN" for char in text):
        raise QueryError("The query has no searchable text: it holds no letter or digit (only emoji, punctuation, "
                         "control or invisible characters); type words.")
    return text


def undecodable_at(text: str) -> int | None:
    """Index of the first lone surrogate or U+FFFD in text; None when it is clean UTF-8 text."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        first = exc.start
    else:
        first = None
    marker = text.find(UNDECODABLE)
    if marker >= 0 and (first is None or marker < first):
        return marker
    return first


def check_k(k: int) -> int:
    """k itself when 1 <= k <= MAX_K, else QueryError: more hits than that is a mistake, not a study."""
    if not 1 <= k <= MAX_K:
        raise QueryError(f"k must be from 1 to {MAX_K} (MAX_K), not {k}")
    return k


@dataclass(frozen=True)
class Discovery:
    arch: str
    k: int
    hits: tuple[Hit, ...]
    stubs: tuple[Stub, ...] = ()
    search_width: int = 0
    latency_s: float = 0.0
    extra: dict = field(default_factory=dict, compare=False)

    @property
    def top1_score(self) -> float | None:
        return self.hits[0].score if self.hits else None

    @property
    def keys(self) -> list[ApiKey]:
        return [h.key for h in self.hits]


class Retriever:
    """Registry + encoder + index: turns texts into ranked hits."""

    def __init__(self, registry: Registry, encoder: Encoder, index: VectorIndex,
                 corpus_vectors: np.ndarray | None = None) -> None:
        self.registry = registry
        self.encoder = encoder
        self.index = index
        # Registry-row vectors (the full corpus), also when the index covers only a sub-registry.
        self.corpus_vectors = index.vectors if corpus_vectors is None else corpus_vectors

    def with_index(self, index: VectorIndex) -> Retriever:
        """The same registry and encoder searching a sub-index (scaling study)."""
        return Retriever(self.registry, self.encoder, index, self.corpus_vectors)

    def vectors_of(self, keys: Sequence[ApiKey]) -> np.ndarray:
        rows = [self.registry.row(k) for k in keys]
        if any(r is None for r in rows):
            raise KeyError("an API is not in this registry")
        return self.corpus_vectors[rows]

    def hits_for(self, scores: np.ndarray, rows: np.ndarray, stub: str | None = None) -> list[Hit]:
        return list(self.merged_hits([(r, float(s), stub) for s, r in zip(scores, rows)]))

    def merged_hits(self, ranked: Sequence[tuple[int, float, str | None]]) -> tuple[Hit, ...]:
        """Hits ranked 1.. from (registry row, score, stub that found it) triples, as merge_stub_hits gives."""
        apis = self.registry.apis
        return tuple(Hit(apis[r].tool_name, apis[r].api_name, apis[r].category, score, i + 1, stub)
                     for i, (r, score, stub) in enumerate(ranked))

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self.encoder.encode(list(texts))


def rtp(query: str, k: int, retriever: Retriever, query_vector: np.ndarray | None = None) -> Discovery:
    """Retrieve-then-Plan: the raw query's top-k APIs by cosine similarity."""
    start = time.perf_counter()
    text = clean_query(query)
    vector = retriever.encode([text])[0] if query_vector is None else query_vector
    scores, rows = retriever.index.search(vector, k)
    hits = retriever.hits_for(scores, rows)
    return Discovery("rtp", k, tuple(hits), search_width=len(hits), latency_s=time.perf_counter() - start)


def merge_stub_hits(per_stub: Sequence[tuple[str, np.ndarray, np.ndarray]], k: int) -> tuple[list[tuple[int, float, str]], int]:
    """Union of per-stub results, deduplicated, each row scored by its best stub; top-k of that.

    per_stub holds (stub name, scores, rows). Returns ([(row, score, stub)], union size). Ties in
    score go to the lower row, and a row's stub is the first stub that reached its best score.
    """
    best: dict[int, tuple[float, str]] = {}
    for stub, scores, rows in per_stub:
        for score, row in zip(scores.tolist(), rows.tolist()):
            if row not in best or score > best[row][0]:
                best[row] = (score, stub)
    ranked = sorted(best.items(), key=lambda item: (-item[1][0], item[0]))[:k]
    return [(row, score, stub) for row, (score, stub) in ranked], len(best)


def merged_search(labels: Sequence[str], vectors: np.ndarray, k: int, retriever: Retriever) -> tuple[tuple[Hit, ...], int]:
    """Each vector's top-k, merged by best similarity (merge_stub_hits): (hits, union size)."""
    scores, rows = retriever.index.batch_search(vectors, k)
    merged, width = merge_stub_hits([(label, scores[i], rows[i]) for i, label in enumerate(labels)], k)
    return retriever.merged_hits(merged), width


def ptr_retrieve(stubs: Sequence[Stub], k: int, retriever: Retriever, stub_text: str = "name_reasoning",
                 stub_vectors: np.ndarray | None = None) -> Discovery:
    """Plan-then-Retrieve's retrieval half, given stubs (written once, reused across k and registries)."""
    if not stubs:
        raise ValueError("PtR needs at least one stub")
    start = time.perf_counter()
    vectors = retriever.encode([s.text(stub_text) for s in stubs]) if stub_vectors is None else stub_vectors
    hits, width = merged_search([s.name for s in stubs], vectors, k, retriever)
    return Discovery("ptr", k, hits, tuple(stubs), width, time.perf_counter() - start)


def hybrid_retrieve(query: str, stubs: Sequence[Stub], k: int, retriever: Retriever,
                    stub_text: str = "name_reasoning") -> Discovery:
    """Hybrid discovery (beyond the paper): PtR's stubs plus the raw query as one more search,
    merged by PtR's own rule (each API scored by its best similarity, top-k overall).

    It needs no call beyond PtR's, and it keeps RtP's whole-query match for requests that name one
    tool, which stub writing can erase (a brand name turned into a generic verb).
    """
    start = time.perf_counter()
    text = clean_query(query)
    vectors = retriever.encode([text, *(s.text(stub_text) for s in stubs)])
    hits, width = merged_search([QUERY_LABEL, *(s.name for s in stubs)], vectors, k, retriever)
    return Discovery("hybrid", k, hits, tuple(stubs), width, time.perf_counter() - start)
