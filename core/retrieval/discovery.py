"""What a discovery gives (Discovery), the Retriever it searches with, the merge by best similarity, and the
checks on a query and k before anything is searched.

The architectures themselves, and the one retrieval they share, are declared in core.retrieval.archs.
"""
from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from core.retrieval.embedding import Encoder
from core.retrieval.index import VectorIndex
from core.retrieval.records import Hit, Stub
from core.data.registry import Registry
from core.data.text import normalise
from core.data.toolbench import ApiKey
from core.embedding_models import LEXICAL_RUNTIME
from core.settings import BOUNDS

MAX_QUERY_CHARS = 100_000
UNDECODABLE = "\ufffd"  # what a URL or a lenient decoder puts where a byte was not UTF-8


class QueryError(ValueError):
    """A query that cannot be searched; the message is shown to the user as is."""


class CleanQuery(str):
    """A query clean_query has checked and stripped: the stub writer and the planner, which also take raw text
    from a study's data, get it back as it is instead of checking it again."""


def clean_query(query: str | None) -> CleanQuery:
    """The query stripped, or QueryError saying why it cannot be searched (a CleanQuery is returned as it is).

    Undecodable text (a lone surrogate, which is how Python hands over command-line bytes that are not
    UTF-8, or U+FFFD, which a URL's invalid bytes become) is refused rather than repaired: a repaired
    query is not the one the user typed, and the tokenizer cannot take surrogates. A query with no
    letter or digit (only emoji, punctuation, control or zero-width characters) embeds to an arbitrary
    point, so it is refused too rather than answered with arbitrary hits.
    """
    if isinstance(query, CleanQuery):
        return query
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
    if not any(unicodedata.category(char)[0] in "LN" for char in normalise(text)):
        raise QueryError("The query has no searchable text: it holds no letter or digit (only emoji, punctuation, "
                         "control or invisible characters); type words.")
    return CleanQuery(text)


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
    """k itself when BOUNDS["k"] holds it, else QueryError: more hits than that is a mistake, not a study."""
    bounds = BOUNDS["k"]
    if not bounds.holds(k):
        raise QueryError(f"k must be from {bounds.low:g} to {bounds.high:g}, not {k}")
    return k


@dataclass(frozen=True)
class Discovery:
    arch: str
    k: int
    hits: tuple[Hit, ...]
    stubs: tuple[Stub, ...] = ()
    search_width: int = 0
    latency_s: float = 0.0
    top1: tuple[tuple[int, float], ...] = field(default=(), compare=False)  # each search's own best (row, cosine)
    score_name: str = "cosine"  # what the scores are: Retriever.score_name

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

    @property
    def lexical(self) -> bool:
        """BM25 (core.retrieval.lexical): its scores rank like cosines but are unbounded sums, not cosines."""
        return self.encoder.runtime == LEXICAL_RUNTIME

    @property
    def score_name(self) -> str:
        return "BM25 score" if self.lexical else "cosine"

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
        """Search texts (queries, stubs) embedded as core.data.text.normalise leaves them."""
        return self.encoder.encode_queries([normalise(t) for t in texts])


def merge_stub_hits(per_stub: Sequence[tuple[str, np.ndarray, np.ndarray]],
                    k: int) -> tuple[list[tuple[int, float, str]], int]:
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
