"""Embedding a registry in chunks that survive a kill: mpnet takes 30-60 minutes for the full registry on 2 cores.

The documents are taken in one fixed order (by length, so that a chunk's texts pad alike) and cut into chunks of
CHUNK_DOCS; each finished chunk is written, with its digest, to a parts folder beside the cache file, named by the
digest of its own texts. A killed build loses at most the chunk it was encoding, and the next build loads every
intact chunk and encodes the rest. A chunk whose texts changed has another name, so it is never taken for one that
did not; the folder goes once the whole matrix is in the cache. Where the parts cannot be written (a read-only or
full cache) the build goes on in memory: it only loses the resumption.
"""
from __future__ import annotations

import hashlib
import io
import logging
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from core.files import CannotWrite, ensure_folder, untold
from core.retrieval.build_lock import ProgressFn
from core.retrieval.checked_file import checked_bytes, write_checked

log = logging.getLogger(__name__)
CHUNK_DOCS = 1024  # about 1.5 minutes of mpnet on 2 cores, 5 s of MiniLM: what a kill can cost
EncodeFn = Callable[[list[str], ProgressFn | None], np.ndarray]  # a chunk's texts and its own (done, total)


def parts_folder(cache_dir: Path, key: str) -> Path:
    return cache_dir / f"emb-{key}.parts"


def _chunk_name(texts: Sequence[str]) -> str:
    digest = hashlib.sha256("\x00".join(texts).encode("utf-8", "surrogatepass")).hexdigest()
    return f"chunk-{digest[:20]}.npy"


def _load(path: Path, rows: int, dim: int) -> np.ndarray | None:
    data = checked_bytes(path, "a chunk of a resumed embedding build")
    if data is None:
        return None
    try:
        vectors = np.load(io.BytesIO(data), allow_pickle=False)
    except ValueError:
        return None
    return vectors if vectors.shape == (rows, dim) and vectors.dtype == np.float32 else None


def _save(path: Path, vectors: np.ndarray) -> bool:
    """Whether the chunk was kept; False (said once) when the folder cannot take it."""
    buffer = io.BytesIO()
    np.save(buffer, vectors, allow_pickle=False)
    try:
        write_checked(path, buffer.getvalue())
        return True
    except CannotWrite as exc:
        if untold(exc):
            log.warning("this embedding build cannot be resumed if stopped (%s); it goes on in memory", exc)
        return False


def encode_in_chunks(encode: EncodeFn, texts: Sequence[str], dim: int, folder: Path,
                     progress: ProgressFn | None = None) -> tuple[np.ndarray, int]:
    """(vectors in `texts`' order, how many documents came from chunks an earlier build left in `folder`)."""
    texts = list(texts)
    out = np.empty((len(texts), dim), dtype=np.float32)
    order = np.argsort([len(t) for t in texts], kind="stable")
    try:
        ensure_folder(folder)
        keep = True
    except CannotWrite:
        keep = False
    resumed = 0
    for start in range(0, len(texts), CHUNK_DOCS):
        rows = order[start:start + CHUNK_DOCS]
        chunk = [texts[i] for i in rows]
        path = folder / _chunk_name(chunk)
        vectors = _load(path, len(chunk), dim) if keep else None
        if vectors is None:
            within = None if progress is None else (lambda done, _, base=start: progress(base + done, len(texts)))
            vectors = np.ascontiguousarray(encode(chunk, within), dtype=np.float32)
            keep = keep and _save(path, vectors)
        else:
            resumed += len(chunk)
        out[rows] = vectors
        if progress is not None:
            progress(start + len(chunk), len(texts))
    return out, resumed


def drop_parts(folder: Path) -> None:
    """The parts once the whole matrix is cached; a folder that refuses keeps them (they are only reused)."""
    shutil.rmtree(folder, ignore_errors=True)
