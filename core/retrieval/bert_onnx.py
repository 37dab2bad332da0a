"""The MiniLM query encoder as an ONNX Runtime graph, built here from the packaged weights.

Why: a query is ~60 tokens (p50), and the numpy forward pass spent 15-18 ms on it: ~10 ms of float32
GEMMs plus ~100 numpy calls (LayerNorm, GELU, softmax), each reading and writing its own arrays.
ONNX Runtime runs the same float32 graph with fused attention, LayerNorm and GELU kernels in 9-10 ms,
with vectors within 2e-7 of the numpy ones. (int8 weights in the feed-forward layers took it to
4.8 ms but moved recall@5 by up to 0.014 on a subset, with 63% identical top-5 sets: rejected.)
The graph is written (core.retrieval.onnx_proto: no `onnx` import) from the weights NumpyBertEncoder loads (no
torch, no download), and cached under CACHE_DIR keyed by the weights' sha256, so it is built once per model. A CACHE_DIR
that cannot take it (read-only, full) costs a build per start: the graph built is used from memory, with one line.
"""
from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from core.retrieval.bert_numpy import NumpyBertEncoder, check_supported, encode_sorted, load_tokenizer, tokenize
from core.files import CannotWrite, untold
from core.retrieval import onnx_proto
from core.retrieval.checked_file import checked_bytes, write_checked
from core.retrieval.embedding import ProgressFn, TwoSided
from core.threads import inference_session

log = logging.getLogger(__name__)

GRAPH_VERSION = 2  # part of the cache key: bump it when the graph below changes (2: written by onnx_proto)
OPSET = 20  # Gelu is an opset-20 operator
MS = "com.microsoft"


def weights_sha256(folder: Path) -> str:
    """sha256 of the safetensors file: the cache key that ties a built graph to its weights."""
    digest = hashlib.sha256()
    with open(folder / "model.safetensors", "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


class _Graph:
    """Collects nodes and initialisers; names are generated so the builder below stays short."""

    def __init__(self) -> None:
        self.nodes: list[onnx_proto.Message] = []
        self.inits: list[onnx_proto.Message] = []
        self.count = 0

    def const(self, array: np.ndarray) -> str:
        self.count += 1
        name = f"c{self.count}"
        self.inits.append(onnx_proto.tensor(name, np.ascontiguousarray(array)))
        return name

    def op(self, kind: str, inputs: Sequence[str], domain: str = "", **attrs: int | float) -> str:
        self.count += 1
        out = f"t{self.count}"
        self.nodes.append(onnx_proto.node(kind, list(inputs), [out], domain=domain, **attrs))
        return out


def build_graph(encoder: NumpyBertEncoder) -> bytes:
    """The serialised model: input_ids [B, L] int64, attention_mask [B, L] float32 -> mean-pooled [B, dim]."""
    w, g, dim = encoder.w, _Graph(), encoder.dim

    def linear(x: str, name: str) -> str:
        return g.op("Add", [g.op("MatMul", [x, g.const(w[name + ".weight"])]), g.const(w[name + ".bias"])])

    def layer_norm(x: str, name: str) -> str:
        return g.op("LayerNormalization", [x, g.const(w[name + ".weight"]), g.const(w[name + ".bias"])],
                    axis=-1, epsilon=float(encoder.eps))

    length = g.op("Gather", [g.op("Shape", ["input_ids"]), g.const(np.array([1], np.int64))], axis=0)
    positions = (w["embeddings.position_embeddings.weight"] + w["embeddings.token_type_embeddings.weight"][0])
    x = g.op("Add", [g.op("Gather", [g.const(w["embeddings.word_embeddings.weight"]), "input_ids"]),
                     g.op("Slice", [g.const(positions.astype(np.float32)), g.const(np.array([0], np.int64)),
                                    length, g.const(np.array([0], np.int64))])])
    x = layer_norm(x, "embeddings.LayerNorm")
    int_mask = g.op("Cast", ["attention_mask"], to=onnx_proto.DTYPES[np.dtype(np.int32)])  # Attention's mask type
    for i in range(encoder.layers):
        p = f"encoder.layer.{i}."
        attn = p + "attention.self.qkv"
        context = g.op("Attention", [x, g.const(w[attn + ".weight"]), g.const(w[attn + ".bias"]), int_mask],
                       domain=MS, num_heads=encoder.heads)
        x = layer_norm(g.op("Add", [linear(context, p + "attention.output.dense"), x]),
                       p + "attention.output.LayerNorm")
        inner = g.op("Gelu", [linear(x, p + "intermediate.dense")])
        x = layer_norm(g.op("Add", [linear(inner, p + "output.dense"), x]), p + "output.LayerNorm")
    weights = g.op("Unsqueeze", ["attention_mask", g.const(np.array([2], np.int64))])
    total = g.op("ReduceSum", [g.op("Mul", [x, weights]), g.const(np.array([1], np.int64))], keepdims=0)
    count = g.op("Max", [g.op("ReduceSum", ["attention_mask", g.const(np.array([1], np.int64))], keepdims=1),
                         g.const(np.array(1e-9, np.float32))])
    g.nodes.append(onnx_proto.node("Div", [total, count], ["pooled"]))
    return onnx_proto.model("minilm", g.nodes, g.inits,
                            [onnx_proto.value_info("input_ids", np.int64, ["batch", "length"]),
                             onnx_proto.value_info("attention_mask", np.float32, ["batch", "length"])],
                            [onnx_proto.value_info("pooled", np.float32, ["batch", dim])],
                            opset=OPSET, domains={MS: 1})


def graph_path(folder: Path, cache_dir: Path) -> Path:
    """Where the graph of these weights is cached: keyed on the weights' sha256 and the graph builder's version."""
    return cache_dir / "onnx" / f"minilm-{weights_sha256(folder)[:16]}-v{GRAPH_VERSION}.onnx"


def cached_graph(folder: Path, model_id: str, cache_dir: Path) -> bytes:
    """The graph for these weights, built once (the weights are read only then), written atomically with its
    digest, and checked against it on every load (core.retrieval.checked_file); its bytes, read once. Where it
    cannot be written the graph just built is returned all the same: the same bytes, so the same vectors."""
    path = graph_path(folder, cache_dir)
    graph = checked_bytes(path, "the query encoder's ONNX graph")
    if graph is None:
        graph = build_graph(NumpyBertEncoder(folder, model_id))
        try:
            write_checked(path, graph, hashlib.sha256(graph).hexdigest())
        except CannotWrite as exc:
            if untold(exc):
                log.warning("the query encoder's ONNX graph is kept in memory, built again on every start (%s)", exc)
    return graph


class OnnxBertEncoder(TwoSided):
    """Same Encoder protocol, tokenizer and pooling as NumpyBertEncoder; the forward pass runs in ONNX Runtime."""

    runtime = "onnx"

    def __init__(self, folder: str | Path, model_id: str, cache_dir: Path) -> None:
        import onnxruntime  # noqa: F401 - first: without it, load_encoder falls back before a graph is built

        folder = Path(folder)
        config, st_config = check_supported(folder)
        self.model_id, self.dim = model_id, int(config["hidden_size"])
        self.tokenizer = load_tokenizer(folder, config, st_config)
        self.session = inference_session(cached_graph(folder, model_id, cache_dir))

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, progress: ProgressFn | None = None) -> np.ndarray:
        return encode_sorted(texts, self.dim, batch_size, progress, self._pooled)

    def _pooled(self, batch: list[str]) -> np.ndarray:
        ids, mask = tokenize(self.tokenizer, batch)
        return self.session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
