"""Sentence-transformers encoder and the content-hashed corpus embedding cache.

Embedding the full registry takes minutes on two cores, so corpus vectors are cached on disk
under a key of model id + every document text. The .json beside each .npy records the sha256 of the
.npy's bytes, which are checked before numpy parses them: a damaged header used to escape as a
tokenize.TokenError traceback, since numpy's header parser raises whatever a mangled header gives it.
Checking costs what checking the loaded matrix did: hashing the 72 MB, 0.11 s with both cores busy.
A CACHE_DIR that cannot take the vectors (read-only, full) keeps them in memory for the run, said in one line.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from core.embedding_models import ModelUnavailable, declared_embedding_model
from core.files import CannotWrite, ensure_folder, untold, write_atomic, writing
from core.retrieval.build_lock import DeferFn, NotifyFn, ProgressFn, exclusive_build, run_now
from core.retrieval.checked_file import discard, file_sha256
from core.retrieval.chunked_build import drop_parts, encode_in_chunks, parts_folder
from core.retrieval.artifact import ArtifactError, artifact_name, read_artifact, read_header
from core.data.registry import Registry

log = logging.getLogger(__name__)
NORM_TOLERANCE = 1e-3
MODEL_HINT = ("set it to a declared model (all-MiniLM-L6-v2, the default; all-mpnet-base-v2; paraphrase-MiniLM-L3-v2), "
              "a local sentence-transformers folder or a cached model name")

class Encoder(Protocol):
    model_id: str
    dim: int
    runtime: str  # what computes the vectors: "sentence-transformers", "onnx", "numpy"

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, progress: ProgressFn | None = None) -> np.ndarray:
        """L2-normalised float32 vectors, one row per text, exactly as given."""
        ...

    def encode_queries(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        """Search texts (queries, stubs) with the model's declared query prefix."""
        ...

    def encode_corpus(self, texts: Sequence[str], *, batch_size: int = 64,
                      progress: ProgressFn | None = None) -> np.ndarray:
        """Documents with the model's declared document prefix."""
        ...


class TwoSided:
    """The query side and the document side of an encoder (BEIR's encode_queries / encode_corpus, MTEB's
    prompt_type): a model trained with prefixes (e5's "query: ", "passage: ") gets them from its declaration
    (core.embedding_models); the three declared today have none, so both sides are `encode` itself."""

    query_prefix = ""
    document_prefix = ""

    def encode_queries(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        return self.encode([self.query_prefix + t for t in texts], batch_size=batch_size)  # type: ignore[attr-defined]

    def encode_corpus(self, texts: Sequence[str], *, batch_size: int = 64,
                      progress: ProgressFn | None = None) -> np.ndarray:
        return self.encode([self.document_prefix + t for t in texts], batch_size=batch_size,  # type: ignore[attr-defined]
                           progress=progress)


def assert_normalised(vectors: np.ndarray) -> None:
    """FAISS inner product equals cosine only on unit vectors: check it once per matrix."""
    if vectors.ndim != 2 or vectors.dtype != np.float32:
        raise ValueError(f"expected a 2-D float32 matrix, got {vectors.dtype} {vectors.shape}")
    norms = np.sqrt(np.einsum("ij,ij->i", vectors, vectors))  # 10x faster than np.linalg.norm on the registry
    if len(norms) and not np.all(np.abs(norms - 1.0) < NORM_TOLERANCE):
        raise ValueError(f"vectors are not L2-normalised (norms {norms.min():.4f}..{norms.max():.4f})")


def canonical_model_id(name: str) -> str:
    """The id recorded in caches and results: a declared model's hub id (core.embedding_models), else the name."""
    spec = declared_embedding_model(name)
    return spec.model_id if spec is not None else name


def resolve_model_path(name: str, cache_dir: Path | None = None) -> str:
    """The folder of a declared model (the package's copy, or what `make embed` installed in CACHE_DIR), checked
    against its declaration, never downloaded here; a path that does not exist is refused at once, before
    sentence-transformers (and torch) is imported to find that out; any other name is left to sentence-transformers."""
    spec = declared_embedding_model(name)
    if spec is not None:
        from core.retrieval.embed_install import installed_folder  # it imports this module

        return str(installed_folder(spec, cache_dir))
    if looks_like_path(name) and not Path(name).expanduser().exists():
        raise ModelUnavailable(f"EMBEDDING_MODEL is {name!r}, a path that does not exist; {MODEL_HINT}")
    return name


def looks_like_path(name: str) -> bool:
    """A file-system path rather than a hub id ("org/model"): absolute, relative to . or ~, or deeper."""
    return name.startswith((os.sep, ".", "~")) or name.count("/") > 1 or "\\" in name


class SentenceTransformerEncoder(TwoSided):
    """Wraps a sentence-transformers model, loaded offline: the reference that builds corpus caches."""

    runtime = "sentence-transformers"

    def __init__(self, name: str) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        self.model_id = canonical_model_id(name)
        spec = declared_embedding_model(name)
        if spec is not None:
            self.query_prefix, self.document_prefix = spec.query_prefix, spec.document_prefix
        path = resolve_model_path(name)
        try:
            self.model = SentenceTransformer(path, device="cpu")
        except (OSError, ValueError) as exc:  # not a model folder, or a hub name not in the offline cache
            detail = " ".join(str(exc).split()).split(". ")[0][:200]
            raise ModelUnavailable(f"EMBEDDING_MODEL {name!r} cannot be loaded ({type(exc).__name__}: {detail}); "
                                   f"{MODEL_HINT}") from None
        self.dim = int(self.model.get_embedding_dimension() if hasattr(self.model, "get_embedding_dimension")
                       else self.model.get_sentence_embedding_dimension())

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, progress: ProgressFn | None = None) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if progress is None or len(texts) <= batch_size:
            out = self._encode(texts, batch_size)
        else:
            # Length-sorted chunks keep padding low and let us report progress between them.
            order = np.argsort([len(t) for t in texts], kind="stable")
            out = np.empty((len(texts), self.dim), dtype=np.float32)
            chunk = batch_size * 8
            for start in range(0, len(texts), chunk):
                idx = order[start:start + chunk]
                out[idx] = self._encode([texts[i] for i in idx], batch_size)
                progress(min(start + chunk, len(texts)), len(texts))
        assert_normalised(out)
        return out

    def _encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        vectors = self.model.encode(texts, batch_size=batch_size, normalize_embeddings=True,
                                    convert_to_numpy=True, show_progress_bar=False)
        return np.ascontiguousarray(vectors, dtype=np.float32)


def cache_key(model_id: str, registry: Registry) -> str:
    return hashlib.sha256(f"{model_id}\x00{registry.content_hash}".encode()).hexdigest()[:24]


def _paths(cache_dir: Path, key: str) -> tuple[Path, Path]:
    return cache_dir / f"emb-{key}.npy", cache_dir / f"emb-{key}.json"


def drop_cached(cache_dir: Path, key: str) -> None:
    for path in _paths(cache_dir, key):
        discard(path)


def load_cached(cache_dir: Path, key: str, n: int, dim: int) -> np.ndarray | None:
    """The cached matrix if present and its bytes match the digest recorded with it, else None (a damaged
    file is removed, with one warning)."""
    array_path, meta_path = _paths(cache_dir, key)
    if not array_path.exists():
        return None
    try:
        meta = json.loads(meta_path.read_text())
        recorded = meta.get("file_sha256") if isinstance(meta, dict) else None
        if recorded != file_sha256(array_path):
            raise ValueError("no digest recorded" if recorded is None else
                             "its bytes do not match the digest recorded when it was written")
        vectors = np.load(array_path, allow_pickle=False)
        if vectors.shape != (n, dim):
            raise ValueError(f"it holds {vectors.shape}, not ({n}, {dim})")
        assert_normalised(vectors)
        return vectors
    except (OSError, ValueError) as exc:
        log.warning("embedding cache %s cannot be trusted (%s); rebuilding it", array_path.name, exc)
        drop_cached(cache_dir, key)
        return None


def save_cached(cache_dir: Path, key: str, vectors: np.ndarray, model_id: str, registry: Registry,
                extra: dict | None = None) -> None:
    """Write atomically (core.files) so a killed build never leaves a half file behind; the digest of the .npy goes
    into the .json first, so a crash in between leaves a pair that disagrees (rebuilt). CannotWrite when the folder
    cannot take them, and then neither file is left."""
    ensure_folder(cache_dir)
    array_path, meta_path = _paths(cache_dir, key)
    try:
        with writing(array_path) as fh:  # np.save's bytes, written by Python: numpy's tofile drops a full disk's errno
            np.lib.format.write_array_header_1_0(fh, np.lib.format.header_data_from_array_1_0(vectors))
            fh.write(np.ascontiguousarray(vectors).data)
            fh.flush()
            meta = {"model_id": model_id, "registry": registry.name, "n": len(registry), "dim": int(vectors.shape[1]),
                    "registry_hash": registry.content_hash, "file_sha256": file_sha256(Path(fh.name)),
                    "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **(extra or {})}
            write_atomic(meta_path, json.dumps(meta, indent=1))
    except CannotWrite:
        discard(meta_path)
        raise


def shipped_embeddings(model_id: str, dim: int, registry: Registry, cache_dir: Path, artifact_dir: Path,
                       notify: NotifyFn | None = None, defer: DeferFn | None = None) -> np.ndarray | None:
    """The shipped vectors when they were made from exactly these documents by this model, else None. It needs no
    encoder, so that an index can be made from them while the encoder loads (core.retrieval.assemble).

    The decoded float32 matrix is kept in the cache under the artifact's own checksum, because
    loading it (0.1 s) is cheaper than decoding the artifact again (0.35 s) on every start. That write (72 MB and
    its sha256, 0.2 s) only speeds up later starts, so `defer`, when given, is handed it to run when it slows nothing
    (the dashboard's warm start: after the first answer); without it, it is written before returning.
    """
    say = notify or log.warning
    key = cache_key(model_id, registry)
    path = artifact_dir / artifact_name(model_id, registry.name)
    if not path.is_file():
        return None
    try:
        header = read_header(path)
        if header.key != key or (header.n, header.dim) != (len(registry), dim):
            say(f"The shipped index {path.name} was made from other documents or another model; "
                f"embedding the {len(registry):,} documents instead.")
            return None
        decoded_key = f"{key}-f16-{header.payload_sha256[:12]}"
        decoded = load_cached(cache_dir, decoded_key, header.n, header.dim)
        if decoded is not None:
            return decoded
        vectors = read_artifact(path, header)

        def keep() -> None:
            try:
                save_cached(cache_dir, decoded_key, vectors, model_id, registry, {"artifact": path.name})
            except CannotWrite as exc:  # costs a decode per start (0.35 s), nothing else
                if untold(exc):
                    say(f"The decoded index is kept in memory for this run ({exc}); it is decoded again on every "
                        "start.")

        (defer or run_now)(keep)
        return vectors
    except ArtifactError as exc:
        say(f"The shipped index cannot be used: {exc}. Embedding the {len(registry):,} documents instead.")
        return None


def corpus_embeddings(encoder: Encoder, registry: Registry, cache_dir: Path, progress: ProgressFn | None = None,
                      builder: Callable[[], Encoder] | None = None, artifact_dir: Path | None = None,
                      notify: NotifyFn | None = None) -> tuple[np.ndarray, str]:
    """(vectors, source): the registry's document embeddings, computed at most once per content.

    `source` says where they came from: "artifact" (the shipped vectors in `artifact_dir`, used
    first so that every clone searches the same vectors), "cache" (CACHE_DIR) or "built". A build
    holds the cross-process build lock; a process that finds one running waits for it and relays
    its progress. On a build the documents are encoded by `builder()` (default: `encoder` itself),
    so a query-side encoder can leave the bulk work to another runtime of the same model.
    """
    say = notify or log.warning
    key = cache_key(encoder.model_id, registry)
    if artifact_dir is not None:
        shipped = shipped_embeddings(encoder.model_id, encoder.dim, registry, cache_dir, artifact_dir, say)
        if shipped is not None:
            return shipped, "artifact"
    cached = load_cached(cache_dir, key, len(registry), encoder.dim)
    if cached is not None:
        return cached, "cache"
    with exclusive_build(cache_dir, key, progress=progress, notify=say) as slot:
        cached = load_cached(cache_dir, key, len(registry), encoder.dim)
        if cached is not None:  # the build we waited for wrote it
            return cached, "cache"
        corpus_encoder = builder() if builder is not None else encoder
        if (corpus_encoder.model_id, corpus_encoder.dim) != (encoder.model_id, encoder.dim):
            raise ValueError(f"corpus encoder {corpus_encoder.model_id} does not match "
                             f"query encoder {encoder.model_id}")
        slot.publish_start(len(registry))
        parts = parts_folder(cache_dir, key)
        vectors, resumed = encode_in_chunks(lambda chunk, done: corpus_encoder.encode_corpus(chunk, progress=done),
                                            registry.documents, encoder.dim, parts, slot.progress)
        if resumed:
            say(f"Resumed an earlier build of this index: {resumed:,} of the {len(registry):,} documents were "
                "embedded already.")
        assert_normalised(vectors)
        try:
            save_cached(cache_dir, key, vectors, encoder.model_id, registry)
            drop_parts(parts)
        except CannotWrite as exc:
            if untold(exc):
                say(f"The embeddings of the {len(registry):,} documents are kept in memory for this run ({exc}); "
                    "they are embedded again on the next start.")
    return vectors, "built"
