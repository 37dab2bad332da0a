"""Approximate inner-product search (FAISS HNSW or IVF) behind VectorIndex's interface, and the factory.

INDEX=flat (the default) keeps exact search (core.retrieval.index.VectorIndex). INDEX=hnsw or ivf trades
exactness for speed on registries far beyond the real 47k APIs: `python -m core index-scale` measures
both against exact search. ANN indexes of a registry are cached under CACHE_DIR, keyed by the vectors'
sha256 and the parameters, so an app start loads them instead of rebuilding them (or, where CACHE_DIR cannot take
them, uses the one built from memory, with one line).
"""
from __future__ import annotations

import hashlib
import logging
import math
import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from core.files import CannotWrite, untold
from core.retrieval.checked_file import intact, write_checked
from core.retrieval.embedding import assert_normalised
from core.retrieval.index import VectorIndex, search_args
from core.settings import Settings

log = logging.getLogger(__name__)

if TYPE_CHECKING:  # FAISS serves HNSW and IVF only: exact search (the default) and the app's start never import it
    import faiss

# FAISS returns equal scores in heap order: a few extra candidates let ties be re-sorted by row, as VectorIndex does.
TIE_MARGIN = 16
MIN_POINTS_PER_LIST = 39  # FAISS warns below 39 training points per IVF list
TRAIN_POINTS_PER_LIST = 64  # IVF trains on at most this many points per list (FAISS default 256): 256k at 1M
SEED = 1234
SEARCH_TIME = ("hnsw_ef_search", "ivf_nprobe")  # parameters of a search, not of the built structure


class SearchIndex(Protocol):
    """What the retrievers need of an index: exact (VectorIndex) or approximate (AnnIndex)."""

    vectors: np.ndarray
    rows: np.ndarray

    def __len__(self) -> int: ...
    def subindex(self, rows: np.ndarray) -> SearchIndex: ...
    def search(self, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]: ...
    def batch_search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]: ...


@dataclass(frozen=True)
class IndexSpec:
    """INDEX and its parameters (settings HNSW_M, HNSW_EF_CONSTRUCTION, HNSW_EF_SEARCH, IVF_NLIST, IVF_NPROBE).

    The search-time defaults are the smallest measured to reach recall@5 >= 0.99 of exact search on the test
    queries at 1M vectors (real + synthetic; data/index_scale.json): efSearch 512 gave 0.987 there, 1024 0.993
    (p50 4 ms); nprobe 128 of 4,000 lists gave 0.987, 256 0.994 (p50 6 ms). Queries are not documents, so the
    graph and the lists need a wider search than document-to-document benchmarks suggest.
    ivf_nlist None: about 4*sqrt(n) lists, FAISS's rule of thumb, fixed when the index is built.
    """

    kind: str = "flat"
    hnsw_m: int = 32
    hnsw_ef_construction: int = 200
    hnsw_ef_search: int = 1024
    ivf_nlist: int | None = None
    ivf_nprobe: int = 256

    def __post_init__(self) -> None:
        if self.kind not in ("flat", "hnsw", "ivf"):
            raise ValueError(f"INDEX must be one of flat, hnsw, ivf, not {self.kind!r}")
        if not 2 <= self.hnsw_m <= 256:
            raise ValueError(f"HNSW_M must be from 2 to 256 (neighbours per node of the HNSW graph), not {self.hnsw_m}")
        if self.hnsw_ef_construction < self.hnsw_m:
            raise ValueError(f"HNSW_EF_CONSTRUCTION must be at least HNSW_M ({self.hnsw_m}): it is the candidate "
                             f"list a node's {self.hnsw_m} neighbours are chosen from; not {self.hnsw_ef_construction}")
        if self.hnsw_ef_search < 1:
            raise ValueError(f"HNSW_EF_SEARCH must be at least 1, not {self.hnsw_ef_search}")
        if self.ivf_nlist is not None and self.ivf_nlist < 1:
            raise ValueError(f"IVF_NLIST must be at least 1 (or unset for about 4*sqrt(n)), not {self.ivf_nlist}")
        if self.ivf_nprobe < 1:
            raise ValueError(f"IVF_NPROBE must be at least 1, not {self.ivf_nprobe}")
        if self.ivf_nlist is not None and self.ivf_nprobe > self.ivf_nlist:
            raise ValueError(f"IVF_NPROBE ({self.ivf_nprobe}) cannot exceed IVF_NLIST ({self.ivf_nlist}): "
                             "it is the number of lists searched")

    @classmethod
    def of(cls, settings: Settings) -> IndexSpec:
        """The configured index: INDEX plus whichever parameters are set (the rest keep these defaults)."""
        return cls(settings.index, **{name.lower(): value for name, value in settings.index_params})

    def for_size(self, n: int) -> IndexSpec:
        """This spec with IVF's list count fixed for n vectors (and nprobe capped at it)."""
        if self.kind != "ivf":
            return self
        nlist = self.ivf_nlist or max(1, min(round(4 * math.sqrt(n)), n // MIN_POINTS_PER_LIST))
        if nlist > n:
            raise ValueError(f"IVF_NLIST={nlist} needs at least {nlist} vectors to train its lists; "
                             f"this index has {n:,}")
        return replace(self, ivf_nlist=nlist, ivf_nprobe=min(self.ivf_nprobe, nlist))

    def params(self) -> dict[str, Any]:
        """The parameters this kind uses, named as their settings (lower case): what provenance records."""
        prefix = {"flat": None, "hnsw": "hnsw_", "ivf": "ivf_"}[self.kind]
        return {} if prefix is None else {k: v for k, v in asdict(self).items() if k.startswith(prefix)}

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, **self.params()}

    def slug(self) -> str:
        """The build-time parameters as a file-name part: efSearch and nprobe apply at search time, so a cached
        index serves any value of them."""
        built = {k: v for k, v in self.params().items() if k not in SEARCH_TIME}
        return "-".join([self.kind, *(f"{k.split('_', 1)[1]}{v}" for k, v in built.items())])


class AnnIndex:
    """A FAISS HNSW or IVF index with VectorIndex's interface: registry rows, ties by row, sub-indexes."""

    def __init__(self, spec: IndexSpec, vectors: np.ndarray, rows: np.ndarray | None = None,
                 built: faiss.Index | None = None) -> None:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        assert_normalised(vectors)
        self.spec = spec.for_size(len(vectors))
        self.dim = vectors.shape[1]
        self.vectors = vectors
        self.rows = np.arange(len(vectors), dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
        self.index = built if built is not None else build_faiss(self.spec, vectors)
        if self.index.ntotal != len(vectors) or self.index.d != self.dim:
            raise ValueError(f"the FAISS index holds {self.index.ntotal:,} x {self.index.d}, the vectors "
                             f"{len(vectors):,} x {self.dim}")

    def with_search(self, **changes: int) -> AnnIndex:
        """The same built index searched with other search-time parameters (hnsw_ef_search, ivf_nprobe):
        what a parameter sweep needs without rebuilding. Search parameters go with each call, so the two
        indexes can be used side by side."""
        return AnnIndex(replace(self.spec, **changes), self.vectors, self.rows, self.index)

    def __len__(self) -> int:
        return self.index.ntotal

    def subindex(self, rows: np.ndarray) -> AnnIndex:
        """An index of the same kind over some of these rows (registry rows kept), for the scaling study."""
        rows = np.asarray(rows, dtype=np.int64)
        return AnnIndex(replace(self.spec, ivf_nlist=None) if self.spec.kind == "ivf" else self.spec,
                        self.vectors[rows], self.rows[rows])

    def search(self, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(scores, registry rows) of the approximate top-k for one query vector, best first."""
        import faiss

        faiss.omp_set_num_threads(1)  # one query is one graph walk or list scan: threads only add overhead
        scores, rows = self._search(query.reshape(1, -1), k)
        return scores[0], rows[0]

    def batch_search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        import faiss

        faiss.omp_set_num_threads(os.cpu_count() or 1)
        return self._search(queries, k)

    def _search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        queries, k = search_args(queries, k, len(self))
        fetch = min(k + TIE_MARGIN, len(self))
        scores, ids = self.index.search(queries, fetch, params=self._params(1))
        widen = 2
        while (short := np.flatnonzero((ids[:, :k] < 0).any(axis=1))).size:
            # The probed IVF lists (or, rarely, HNSW's beam) held fewer than k vectors: search again, wider.
            if widen > 2 * len(self):
                raise RuntimeError(f"the {self.spec.kind} index cannot reach {k} of its {len(self):,} vectors")
            scores[short], ids[short] = self.index.search(queries[short], fetch, params=self._params(widen))
            widen *= 2
        order = np.lexsort((ids, -np.where(ids < 0, -np.inf, scores)), axis=-1)[:, :k]
        scores = np.take_along_axis(scores, order, axis=1)
        ids = np.take_along_axis(ids, order, axis=1)
        return scores, self.rows[ids]

    def _params(self, widen: int) -> faiss.SearchParameters:
        """This spec's search-time parameter, `widen` times wider (retries only)."""
        import faiss

        if self.spec.kind == "hnsw":
            return faiss.SearchParametersHNSW(efSearch=self.spec.hnsw_ef_search * widen)
        assert self.spec.ivf_nlist is not None
        return faiss.SearchParametersIVF(nprobe=min(self.spec.ivf_nprobe * widen, self.spec.ivf_nlist))


def build_faiss(spec: IndexSpec, vectors: np.ndarray) -> faiss.Index:
    """The FAISS structure of a spec (fixed for this size) over these vectors, built on every core."""
    import faiss

    n, dim = vectors.shape
    faiss.omp_set_num_threads(os.cpu_count() or 1)
    if spec.kind == "hnsw":
        index = faiss.IndexHNSWFlat(dim, spec.hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = spec.hnsw_ef_construction
        index.add(vectors)
        return index
    if spec.kind == "ivf":
        assert spec.ivf_nlist is not None  # for_size fixed it
        quantiser = faiss.IndexFlatIP(dim)
        index = faiss.IndexIVFFlat(quantiser, dim, spec.ivf_nlist, faiss.METRIC_INNER_PRODUCT)
        index.cp.seed = SEED
        index.cp.spherical = True  # unit vectors: centroids renormalised, so inner product picks the list
        index.cp.max_points_per_centroid = TRAIN_POINTS_PER_LIST
        index.train(vectors)
        index.add(vectors)
        return index
    raise ValueError(f"{spec.kind!r} is not an approximate index")


def vectors_sha256(vectors: np.ndarray) -> str:
    """sha256 over the shape and the float32 bytes: what an ANN cache file is built from."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    digest = hashlib.sha256(f"{vectors.shape[0]}x{vectors.shape[1]}".encode())
    digest.update(memoryview(vectors).cast("B"))
    return digest.hexdigest()


def cache_path(cache_dir: Path, spec: IndexSpec, vectors: np.ndarray) -> Path:
    return cache_dir / f"ann-{vectors_sha256(vectors)[:20]}-{spec.for_size(len(vectors)).slug()}.faiss"


def cached_ann(spec: IndexSpec, vectors: np.ndarray, cache_dir: Path) -> tuple[AnnIndex, str]:
    """(index, "cache" or "built"): read from CACHE_DIR when these vectors were indexed with these parameters,
    else built and written there (atomically, core.files: a concurrent start reads a whole file or builds its own)."""
    import faiss

    path = cache_path(cache_dir, spec, vectors)
    if intact(path, "the ANN index"):
        try:
            return AnnIndex(spec, vectors, built=faiss.read_index(str(path))), "cache"
        except (RuntimeError, ValueError):  # a foreign file with a matching digest: rebuilt below
            pass
    index = AnnIndex(spec, vectors)
    try:
        write_checked(path, lambda fh: faiss.write_index(index.index, faiss.PyCallbackIOWriter(fh.write)))
    except CannotWrite as exc:
        if untold(exc):
            log.warning("the %s index is kept in memory, built again on every start (%s)", spec.kind, exc)
    return index, "built"


def make_index(spec: IndexSpec, vectors: np.ndarray, cache_dir: Path | None = None) -> tuple[SearchIndex, str]:
    """(index, how it was made: "exact", "cache" or "built"): the factory build_retriever uses."""
    if spec.kind == "flat":
        return VectorIndex(vectors), "exact"
    if cache_dir is None:
        return AnnIndex(spec, vectors), "built"
    return cached_ann(spec, vectors, cache_dir)
