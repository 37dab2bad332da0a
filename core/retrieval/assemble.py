"""Assembles encoder, embeddings (shipped, cached or built) and index from Settings: the one place that wires them."""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from core.retrieval.build_lock import DeferFn, NotifyFn, ProgressFn
from core.retrieval.discovery import Retriever
from core.retrieval.embedding import (Encoder, SentenceTransformerEncoder, cache_key, canonical_model_id,
                                      corpus_embeddings, resolve_model_path, shipped_embeddings)
from core.retrieval.ann import IndexSpec, SearchIndex, make_index
from core.retrieval.artifact import ArtifactError, artifact_name, read_header
from core.data.registry import Registry
from core.data.loaders import registry_for
from core.embedding_models import LEXICAL, declared_embedding_model
from core.settings import Settings


@dataclass(frozen=True)
class IndexInfo:
    """What `python -m core index` reports, and what every stored result records as provenance."""

    model_id: str
    runtime: str
    registry: str
    size: int
    dim: int
    registry_hash: str
    source: str  # "artifact" (the shipped vectors), "cache" or "built"
    seconds: float
    index: dict = field(default_factory=lambda: {"kind": "flat"})  # IndexSpec.to_json(), plus how it was made

    def to_json(self) -> dict:
        return {"model": self.model_id, "encoder_runtime": self.runtime, "registry": self.registry, "size": self.size,
                "dim": self.dim, "registry_hash": self.registry_hash, "source": self.source,
                "seconds": round(self.seconds, 3), "index": self.index}


@lru_cache(maxsize=2)
def load_reference_encoder(name: str) -> SentenceTransformerEncoder:
    """sentence-transformers (imports torch, 6-9 s here): builds corpus caches, fastest on big batches."""
    return SentenceTransformerEncoder(name)


@lru_cache(maxsize=4)
def load_encoder(name: str, runtime: str = "auto", cache_dir: Path | None = None) -> Encoder:
    """The query encoder. A declared model with an ONNX graph of its own (MiniLM-L3's shipped one, mpnet's exported
    at install) gets ONNX Runtime over it. Otherwise "auto" takes ONNX Runtime when the model is a mean-pooled BERT and
    onnxruntime is installed (its graph is built from the local weights once, into cache_dir, default CACHE_DIR),
    else the numpy forward pass, else sentence-transformers; "onnx" and "numpy" insist, "torch" forces the reference.
    """
    from core.retrieval.bert_numpy import NumpyBertEncoder, UnsupportedModel

    spec = declared_embedding_model(name)
    if runtime == "torch" or (spec is not None and spec.runtime == "sentence-transformers"):
        return load_reference_encoder(name)
    if spec is not None and spec.source != "package" and spec.runtime == "onnx":  # a shipped or exported graph
        from core.retrieval.onnx_file import OnnxFileEncoder

        return OnnxFileEncoder(Path(resolve_model_path(name, cache_dir)), spec)
    try:
        if runtime in ("auto", "onnx"):
            from core.retrieval.bert_onnx import OnnxBertEncoder

            try:
                return OnnxBertEncoder(resolve_model_path(name), canonical_model_id(name),
                                       cache_dir or Settings.from_env().cache_dir)
            except ImportError:
                if runtime == "onnx":
                    raise
        return NumpyBertEncoder(resolve_model_path(name), canonical_model_id(name))
    except UnsupportedModel:
        if runtime in ("numpy", "onnx"):
            raise
        return load_reference_encoder(name)


def lexical_retriever(registry: Registry, start: float) -> tuple[Retriever, IndexInfo]:
    """EMBEDDING_MODEL=bm25: BM25 over the registry's documents, built in about a second, never cached."""
    from core.retrieval.lexical import bm25_retriever

    retriever = bm25_retriever(registry)
    info = IndexInfo(retriever.encoder.model_id, retriever.encoder.runtime, registry.name, len(registry),
                     retriever.encoder.dim, registry.content_hash[:16], "built", time.perf_counter() - start,
                     {"kind": "bm25"})
    return retriever, info


def shipped_index_ready(settings: Settings) -> bool:
    """Whether the configured registry loads from the shipped vectors, embedding nothing (headers only)."""
    registry = registry_for(settings)
    model_id = canonical_model_id(settings.embedding_model)
    try:
        return (read_header(settings.index_dir / artifact_name(model_id, registry.name)).key
                == cache_key(model_id, registry))
    except ArtifactError:
        return False


def _indexed(settings: Settings, vectors: np.ndarray) -> tuple[IndexSpec, SearchIndex, str]:
    """The configured index kind for this many vectors, and the index made over them (make_index's pair)."""
    spec = IndexSpec.of(settings).for_size(len(vectors))
    return (spec, *make_index(spec, vectors, settings.cache_dir))


def build_retriever(settings: Settings, encoder: Encoder | None = None, registry: Registry | None = None,
                    progress: ProgressFn | None = None, notify: NotifyFn | None = None,
                    use_artifact: bool = True, defer: DeferFn | None = None) -> tuple[Retriever, IndexInfo]:
    """Encoder + corpus embeddings (shipped, cached or built) + FAISS index for the configured registry; with
    EMBEDDING_MODEL=bm25, BM25's encoder and index instead (lexical_retriever).

    use_artifact=False skips the shipped vectors: what regenerating them needs, and then sentence-transformers
    encodes them, so that the shipped files stay reproducible from the reference. Otherwise an ONNX query encoder
    encodes the corpus itself: on 2 cores it is 1.2-1.3x torch's rate and loads in 0.4 s instead of 6-9 s
    (docs/benchmarks.md), which is most of a small import's time; its vectors differ from torch's by <= 1.5e-7.
    `defer` takes the cache writes that only speed up later starts (shipped_embeddings).
    """
    start = time.perf_counter()
    if settings.embedding_model == LEXICAL and encoder is None:
        return lexical_retriever(registry or registry_for(settings), start)
    # The encoder loads beside the registry's parse and, for a declared model, the shipped vectors' decode and the
    # index over them, none of which needs it (a fresh clone's cold load: docs/benchmarks.md)
    declared = declared_embedding_model(settings.embedding_model) if use_artifact and encoder is None else None
    shipped = None
    pool = ThreadPoolExecutor(1, thread_name_prefix="encoder")
    try:
        loading = None if encoder else pool.submit(load_encoder, settings.embedding_model, settings.encoder_runtime,
                                                   settings.cache_dir)
        registry = registry or registry_for(settings)
        if declared is not None:
            shipped = shipped_embeddings(declared.model_id, declared.dim, registry, settings.cache_dir,
                                         settings.index_dir, notify, defer)
            if shipped is not None:
                indexed = _indexed(settings, shipped)
        encoder = encoder or loading.result()
    finally:  # a registry that cannot be read is said at once, not after the encoder's load (about 1 s)
        pool.shutdown(wait=False)
    if shipped is not None and (encoder.model_id, encoder.dim) == (declared.model_id, declared.dim):
        source, (spec, index, made) = "artifact", indexed
    else:  # no shipped vectors (looked for once: a refusal is said once), or the encoder is another model's
        by_itself = encoder.runtime in (SentenceTransformerEncoder.runtime, *(("onnx",) if use_artifact else ()))
        builder = None if by_itself else (lambda: load_reference_encoder(settings.embedding_model))
        # the shipped vectors against the loaded encoder's own model and dimension, unless none were found above
        artifacts = settings.index_dir if use_artifact and (declared is None or shipped is not None) else None
        vectors, source = corpus_embeddings(encoder, registry, settings.cache_dir, progress, builder, artifacts, notify)
        spec, index, made = _indexed(settings, vectors)
    info = IndexInfo(encoder.model_id, encoder.runtime, registry.name, len(registry), encoder.dim,
                     registry.content_hash[:16], source, time.perf_counter() - start,
                     {**spec.to_json(), "made": made})
    return Retriever(registry, encoder, index), info
