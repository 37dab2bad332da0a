"""Cheap scores with a proven error bound, which the exact search in index.py uses to skip most rows.

Int8Scores: the registry as int8 (one global scale) and each query as int8 (its own scale),
multiplied by ONNX Runtime's integer GEMM: the 47k x 384 matrix is 18 MB instead of 72 MB, so a
single query reads it from L3 cache, and a batch runs ~4x more multiplies per cycle than float32.
For q = s*q8 + eq and x = t*x8 + ex (rounding residues),

    q.x - s*t*(q8.x8) = q.ex + eq.(t*x8),   so   |error| <= |q|*max|ex| + |eq|*max|t*x8|,

and q8.x8 must be exact in int32. Which codes keep it exact depends on the CPU (exact_code_limit): with VNNI
the registry's codes span +-127; on an AVX2-only CPU the GEMM sums pairs of uint8 x int8 products in int16
(vpmaddubsw, saturating), so the codes span +-64 (2 * 255 * 64 = 32,640 fits; 2 * 255 * 127 does not) and the
bound, twice as wide, keeps the search exact. FloatScores (numpy float32 BLAS, which reads all 72 MB per query) is
the fallback without onnxruntime or an exact GEMM, and the choice for small indexes, where building a session
costs more than it saves.
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from core.retrieval import onnx_proto
from core.threads import cores, inference_session

# Any cosine the index reports is float32(its float64 dot): within 2**-24 relative of the real one.
# The bound adds this much on top, far above that rounding and above float32 BLAS round-off too.
ROUNDING = 1e-5
# The registry codes' ranges tried, widest (most precise) first: see the module's docstring.
CODE_LIMITS = (127, 64)
# measured: float32 wins at 4,096 rows (batch 36 vs 38 ms, build 0.4 vs 12 ms), int8 at 10,000 (61 vs 75 ms)
INT8_MIN_ROWS = 8192
CHUNK = 64  # rows per chunk whose maximum is reported: small enough to keep index.py's lower bound tight


class Scores(NamedTuple):
    """Cheap scores [n, >= N] (columns past N repeat row N-1), their per-chunk maxima [n, ceil(N / CHUNK)]
    and each query's error bound in the cheap scores' units."""

    cheap: np.ndarray
    maxima: np.ndarray
    bound: np.ndarray


class FloatScores:
    """float32 Q @ V.T; its error against the float64 dot is float32 round-off, <= dim * 2**-24 * |q| * |x|
    (|x| <= 1.001, assert_normalised's tolerance: twice that bound leaves room)."""

    kernel = "float32 BLAS"

    def __init__(self, vectors: np.ndarray) -> None:
        self.vectors = vectors

    def scores(self, queries: np.ndarray) -> Scores:
        cheap = queries @ self.vectors.T
        n, size = cheap.shape
        full = size // CHUNK * CHUNK
        maxima = cheap[:, :full].reshape(n, -1, CHUNK).max(axis=2)
        if full < size:
            maxima = np.hstack([maxima, cheap[:, full:].max(axis=1, keepdims=True)])
        bound = np.linalg.norm(queries, axis=1).astype(np.float64) * (self.vectors.shape[1] * 2.0 ** -23) + ROUNDING
        return Scores(cheap, maxima, bound)


class Int8Scores:
    """Integer dot products of int8 queries with the int8 registry, via ONNX Runtime's MatMulInteger."""

    def __init__(self, vectors: np.ndarray, chunk: int, limit: int = CODE_LIMITS[0]) -> None:
        from onnxruntime import InferenceSession  # noqa: F401 (import error here means: use FloatScores)

        self.kernel = f"int8 MatMulInteger (ONNX Runtime), registry codes within +-{limit}"
        self.scale = float(max(vectors.max(), -vectors.min())) / limit or 1.0
        codes, self.max_residue, self.max_decoded_norm = _quantised(vectors, self.scale)
        self.size = len(vectors)
        # Padded to whole chunks with copies of the last row, which lies in the last chunk: every chunk's
        # maximum is then still some real row of that chunk (what the k-th-best lower bound needs).
        padded = np.vstack([codes, np.repeat(codes[-1:], -len(codes) % chunk, axis=0)])
        self._model = _matmul_integer_model(np.ascontiguousarray(padded.T), chunk)
        self._sessions: dict[int, object] = {}
        for threads in {1, cores()}:  # made with the index: inside a first answer each took 0.08-0.4 s, 13 ms here
            self._session(threads)

    def _session(self, threads: int):
        """One session per thread count: a single query runs best on one thread, a batch on all."""
        if threads not in self._sessions:
            self._sessions[threads] = inference_session(self._model, threads)
        return self._sessions[threads]

    def scores(self, queries: np.ndarray) -> Scores:
        """int32 q8.x8 and its chunk maxima, computed in one ONNX Runtime call."""
        step = np.abs(queries).max(axis=1).astype(np.float64) / 127.0
        step[step == 0] = 1.0
        q8 = np.rint(queries / step[:, None]).astype(np.int16)
        residue = np.sqrt(((queries - q8 * step[:, None]) ** 2).sum(axis=1))
        norm = np.sqrt((queries.astype(np.float64) ** 2).sum(axis=1))
        bound = norm * self.max_residue + residue * self.max_decoded_norm + ROUNDING
        threads = 1 if len(queries) == 1 else cores()
        cheap, maxima = self._session(threads).run(None, {"q": (q8 + 128).astype(np.uint8)})
        return Scores(cheap, maxima, bound / (step * self.scale))


def _quantised(vectors: np.ndarray, scale: float, rows: int = 2048) -> tuple[np.ndarray, float, float]:
    """The int8 codes, the largest row residue |x - t*x8| and the largest decoded norm |t*x8|, in float64 as the
    bound needs; a block of rows at a time, so that the float64 copies stay in cache (measured: 2-5x faster than
    whole-matrix passes on the full registry, on every server's index load)."""
    codes = np.empty(vectors.shape, np.int8)
    max_residue = max_norm = 0.0
    for start in range(0, len(vectors), rows):
        part = vectors[start:start + rows]
        rounded = np.rint(part / np.float32(scale))
        codes[start:start + rows] = rounded
        decoded = rounded.astype(np.float64) * scale
        residue = part - decoded
        max_residue = max(max_residue, float(np.einsum("ij,ij->i", residue, residue).max(initial=0.0)))
        max_norm = max(max_norm, float(np.einsum("ij,ij->i", decoded, decoded).max(initial=0.0)))
    return codes, float(np.sqrt(max_residue)), float(np.sqrt(max_norm))


def _matmul_integer_model(codes_t: np.ndarray, chunk: int) -> bytes:
    """uint8 queries (zero point 128) x the constant int8 matrix -> int32 dots, and their maxima per chunk."""
    dim, size = codes_t.shape
    return onnx_proto.model(
        "int8_scores",
        [onnx_proto.node("MatMulInteger", ["q", "codes", "zero"], ["dots"]),
         onnx_proto.node("Reshape", ["dots", "chunked"], ["blocks"]),
         onnx_proto.node("ReduceMax", ["blocks", "last"], ["maxima"], keepdims=0)],
        [onnx_proto.tensor("codes", codes_t), onnx_proto.tensor("zero", np.array(128, np.uint8)),
         onnx_proto.tensor("chunked", np.array([0, size // chunk, chunk], np.int64)),
         onnx_proto.tensor("last", np.array([2], np.int64))],
        [onnx_proto.value_info("q", np.uint8, ["n", dim])],
        [onnx_proto.value_info("dots", np.int32, ["n", size]),
         onnx_proto.value_info("maxima", np.int32, ["n", size // chunk])],
        opset=18)


@functools.cache
def exact_code_limit() -> int | None:
    """The widest of CODE_LIMITS for which this CPU's integer GEMM in ONNX Runtime is exact, or None (then the float32
    prefilter). Without VNNI, +-127 codes saturated and let top-k rows through (seen on an AVX2-only AMD EPYC).
    Checked once per limit on its worst case: extreme query codes against extreme registry codes of one sign."""
    try:
        return next((limit for limit in CODE_LIMITS if _gemm_exact(limit)), None)
    except ImportError:
        return None


def _gemm_exact(limit: int) -> bool:
    codes = np.full((64, 2 * CHUNK), limit, np.int8)
    codes[:, 1::2] = -limit
    queries = np.full((2, 64), 127, np.int16)
    queries[1] = -127
    session = Int8Scores.__new__(Int8Scores)
    session._model, session._sessions = _matmul_integer_model(codes, CHUNK), {}
    cheap, _ = session._session(1).run(None, {"q": (queries + 128).astype(np.uint8)})
    return bool(np.array_equal(cheap, queries.astype(np.int64) @ codes.astype(np.int64)))


def make_scores(vectors: np.ndarray) -> FloatScores | Int8Scores:
    """Int8Scores where it pays, onnxruntime is installed and some code range keeps this CPU's integer GEMM exact
    (exact_code_limit), else FloatScores."""
    if len(vectors) >= INT8_MIN_ROWS and (limit := exact_code_limit()) is not None:
        try:
            return Int8Scores(vectors, CHUNK, limit)
        except ImportError:  # onnxruntime gone since the check ran (its answer is cached)
            pass
    return FloatScores(vectors)
