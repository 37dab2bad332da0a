"""BM25, the lexical retriever: a tokeniser, its query side (BM25Encoder) and its index (BM25Index), which take the
places of the embedding's encoder and VectorIndex in a Retriever, so that RtP, PtR and the hybrid run on it unchanged.

Why it is built this way (production tool search ships BM25 beside regex; the lab asks whether PtR's gain over
RtP grows when an invented function name must share words with the docs):
- Variant: Lucene's (Lucene 8+, Elasticsearch; bm25s method="lucene"), score = sum over query terms of
  idf * tf / (tf + k1 * (1 - b + b * dl / avgdl)), idf = ln(1 + (N - df + 0.5) / (df + 0.5)), never negative;
  without the classic (k1 + 1) numerator, a constant factor that moves no ranking. dl is exact (Lucene rounds it).
- k1 = 1.2, b = 0.75: Lucene's defaults (bm25s's own k1 is 1.5; RtP recall@5 moves < 1 point between them).
- bm25s computes the weights from our token ids; the search is ours: a scipy sparse product and an exact top-k
  whose ties go to the lower row, as VectorIndex's do (bm25s's top-k does not order ties). No cache: the 47,038
  APIs build in about a second.
- Query side: term counts, not indicators: a term repeated in a query counts each time, as in bm25s and in
  Lucene (one clause per occurrence).
- Tokens: NFKC, then runs of letters and digits cut at snake_case, camelCase and letter-digit boundaries and
  lower-cased, so a stub's `getExchangeRate` meets a doc's `GetCurrencyRate` on "get" and "rate". Only an ASCII
  capital starts a camelCase word (API names are ASCII); "Zürich" stays whole, CJK runs are not segmented.
- Stop words: Lucene's 33 English ones (bm25s's STOPWORDS_EN): queries are sentences, documents are not.
- Stemming: plurals only (Harman's S-stemmer, with Porter's "sses" -> "ss"), ours, so that "hotels" meets
  "hotel". No Snowball: PyStemmer is a C extension, and its conflations are not what a stub's name needs.
  (On G1_instruction, the stop words and the plural folding each add 2-3 points to RtP's recall@5.)
Scores are BM25 sums (0 and up, unbounded), not cosines: they rank and merge alike, but no cosine threshold applies.
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from core.data.registry import Registry
from core.embedding_models import LEXICAL_RUNTIME
from core.retrieval.discovery import Retriever

K1, B = 1.2, 0.75
TOKENS = "ident.stop33.plural"  # names what `tokens` does, in model_id: change it when `tokens` changes
STOP_WORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not", "of",
    "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was", "will", "with"))
SEARCH_BLOCK = 64  # queries scored at once: bounds the dense block of scores (64 x 47,038 floats)

_LOWER = r"[^\W\d_A-Z]"  # a letter that does not start a camelCase word: a-z and every non-ASCII letter
_WORD = re.compile(
    rf"[A-Z]{{2,}}s(?!{_LOWER})"   # a plural acronym: APIs, URLs
    rf"|[A-Z]+(?=[A-Z]{_LOWER})"  # an acronym before a word: HTTP in HTTPServer
    rf"|[A-Z]?{_LOWER}+"          # a word, capitalised or not
    r"|[A-Z]+|\d+")


def fold_plural(word: str) -> str:
    """Harman's S-stemmer (ies -> y, s -> "", not after u or s) with Porter's sses -> ss; words of 1-2 letters kept."""
    if len(word) < 3 or word[-1] != "s":
        return word
    if word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if word.endswith("sses"):
        return word[:-2]
    return word if word.endswith(("us", "ss")) else word[:-1]


def tokens(text: str) -> list[str]:
    """The terms BM25 matches on, in order: split identifiers, lower-cased, stop words out, plurals folded."""
    words = (w.lower() for w in _WORD.findall(unicodedata.normalize("NFKC", text)))
    return [fold_plural(w) for w in words if w not in STOP_WORDS]


@dataclass(frozen=True, eq=False)
class BM25Encoder:
    """The query side: a text becomes its terms' counts over the index's vocabulary (unknown terms dropped).

    No encode_corpus: the document side is BM25Index's weights, not counts."""

    vocabulary: Mapping[str, int]
    k1: float = K1
    b: float = B
    runtime = LEXICAL_RUNTIME

    @property
    def model_id(self) -> str:
        return f"bm25s-lucene-k1={self.k1:g}-b={self.b:g}-{TOKENS}"

    @property
    def dim(self) -> int:
        return len(self.vocabulary)

    def encode(self, texts: Sequence[str], *, batch_size: int = 64,
               progress: Callable[[int, int], None] | None = None) -> sp.csr_matrix:
        """(len(texts), dim) float64 counts, one row per text, exactly as given."""
        indptr, indices = [0], []
        for text in texts:
            indices += [i for t in tokens(text) if (i := self.vocabulary.get(t)) is not None]
            indptr.append(len(indices))
        counts = sp.csr_matrix((np.ones(len(indices)), indices, indptr), shape=(len(texts), self.dim))
        counts.sum_duplicates()
        if progress is not None:
            progress(len(texts), len(texts))
        return counts

    def encode_queries(self, texts: Sequence[str], *, batch_size: int = 64) -> sp.csr_matrix:
        """What Retriever.encode calls: BM25 has no query prefix, so `encode` itself."""
        return self.encode(texts, batch_size=batch_size)


@dataclass(frozen=True, eq=False)
class BM25Index:
    """BM25 weights over some registry rows, searched exactly: the interface of VectorIndex."""

    postings: sp.csr_matrix            # (vocabulary, documents): row t holds term t's weight in each document
    rows: np.ndarray                   # the registry row of each document (int64)
    token_ids: tuple[list[int], ...]   # each document's terms, which a subindex weighs again
    k1: float = K1
    b: float = B

    @classmethod
    def build(cls, token_ids: Sequence[list[int]], vocabulary_size: int, rows: np.ndarray | None = None,
              k1: float = K1, b: float = B) -> BM25Index:
        """Lucene BM25 weights, by bm25s, of documents given as term ids (0 to vocabulary_size - 1)."""
        import logging

        import bm25s  # 0.2 s more of imports (its BEIR helpers, tqdm): only when an index is built

        logging.getLogger("bm25s").setLevel(logging.WARNING)  # bm25s sets its own logger to DEBUG on import

        model = bm25s.BM25(k1=k1, b=b, method="lucene", dtype="float64", csc_backend="scipy")
        ids = list(token_ids)
        model.index((ids, {i: i for i in range(vocabulary_size)}), create_empty_token=False, show_progress=False)
        weights = model.scores  # CSC of (documents, vocabulary): read as CSR, it is its transpose
        postings = sp.csr_matrix((weights["data"], weights["indices"], weights["indptr"]),
                                 shape=(vocabulary_size, len(ids)))
        rows = np.arange(len(ids), dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
        return cls(postings, rows, tuple(ids), k1, b)

    def __len__(self) -> int:
        return self.postings.shape[1]

    @property
    def vectors(self) -> sp.csc_matrix:
        """The (documents, vocabulary) weight matrix, a view of the postings: Retriever's corpus_vectors."""
        return self.postings.T

    def subindex(self, rows: np.ndarray) -> BM25Index:
        """BM25 over some of this index's documents alone (their own N, df and avgdl, as a registry of that size
        would be indexed), registry rows kept: the scaling study's sub-registries."""
        rows = np.asarray(rows, dtype=np.int64)
        return BM25Index.build([self.token_ids[r] for r in rows], self.postings.shape[0], self.rows[rows],
                               self.k1, self.b)

    def search(self, query: sp.spmatrix, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(scores, registry rows) of the top-k for one query row, best first."""
        matrix = query_matrix(query, self.postings.shape[0])
        if matrix.shape[0] != 1:
            raise ValueError(f"search takes one query, not {matrix.shape[0]}; use batch_search")
        scores, rows = self.batch_search(matrix, k)
        return scores[0], rows[0]

    def batch_search(self, queries: sp.spmatrix | np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(float32 scores, int64 registry rows) of shape (n, k') with k' = min(k, size), ties to the lower row."""
        if k < 1:
            raise ValueError("k must be at least 1")
        matrix = query_matrix(queries, self.postings.shape[0])
        k = min(k, len(self))
        scores, columns = np.zeros((0, k), dtype=np.float32), np.zeros((0, k), dtype=np.int64)
        blocks = [top_k((matrix[s:s + SEARCH_BLOCK] @ self.postings).toarray().astype(np.float32), k)
                  for s in range(0, matrix.shape[0], SEARCH_BLOCK)]
        if blocks:
            scores, columns = (np.concatenate(parts) for parts in zip(*blocks))
        return scores, self.rows[columns]


def query_matrix(queries: sp.spmatrix | np.ndarray, width: int) -> sp.csr_matrix:
    """Queries as a CSR matrix: what BM25Encoder gives, a row of it, or what MemoEncoder stacks (np.stack of
    1 x dim matrices is an object array of them; of no text, a (0, dim) zero array)."""
    if isinstance(queries, np.ndarray) and queries.dtype == object:
        queries = sp.vstack(list(queries.ravel()), format="csr")
    matrix = sp.csr_matrix(queries)
    if matrix.shape[1] != width:
        raise ValueError(f"queries have {matrix.shape[1]} terms, the index's vocabulary {width}")
    return matrix


def top_k(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(scores, columns) of each row's k best, best first, ties to the lower column; exact, in O(size) per row."""
    n, size = scores.shape
    if k >= size:
        columns = np.argsort(-scores, axis=1, kind="stable")
    else:
        # each row's k-th best score; selected from the front (negated), which on the rows of zeros a sparse
        # query leaves is 20x faster than from the back (np.partition's introselect: 0.2 ms, not 4.3 ms)
        kth = -np.partition(-scores, k - 1, axis=1)[:, k - 1:k]
        above, level = scores > kth, scores == kth
        need = k - above.sum(axis=1, keepdims=True)  # how many of the rows tied at the k-th best, lowest first
        chosen = above | (level & (np.cumsum(level, axis=1) <= need))
        columns = np.nonzero(chosen)[1].reshape(n, k)  # ascending within each row
        order = np.argsort(-np.take_along_axis(scores, columns, axis=1), axis=1, kind="stable")
        columns = np.take_along_axis(columns, order, axis=1)
    return np.take_along_axis(scores, columns, axis=1), columns.astype(np.int64)


def bm25_retriever(registry: Registry, k1: float = K1, b: float = B) -> Retriever:
    """A Retriever searching registry.documents (the texts the embedding indexes) with BM25."""
    vocabulary: dict[str, int] = {}
    token_ids = [[vocabulary.setdefault(t, len(vocabulary)) for t in tokens(doc)] for doc in registry.documents]
    index = BM25Index.build(token_ids, len(vocabulary), k1=k1, b=b)
    return Retriever(registry, BM25Encoder(vocabulary, k1, b), index)  # type: ignore[arg-type]
