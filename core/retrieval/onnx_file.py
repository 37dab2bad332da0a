"""An encoder over an ONNX graph file: one shipped as it is (paraphrase-MiniLM-L3-v2's, no weights to build a graph
from) or one exported from a model's weights at install (all-mpnet-base-v2's, core.retrieval.onnx_export); run with
the declared tokenizer, maximum length and pooled output (core.embedding_models).

The graph's pooled output is the masked mean of its token outputs, not normalised: normalised here, as
sentence-transformers' Normalize module does.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from core.embedding_models import EmbeddingModelSpec, ModelUnavailable
from core.retrieval.bert_numpy import encode_sorted, tokenize
from core.retrieval.embedding import ProgressFn, TwoSided
from core.threads import inference_session


class OnnxFileEncoder(TwoSided):
    """The Encoder protocol over `folder`'s graph file and tokenizer.json, on ONNX Runtime."""

    runtime = "onnx"

    def __init__(self, folder: Path, spec: EmbeddingModelSpec) -> None:
        import onnxruntime  # noqa: F401 - a missing onnxruntime is an ImportError, not a graph it cannot read
        from tokenizers import Tokenizer

        self.model_id, self.dim = spec.model_id, spec.dim
        self.query_prefix, self.document_prefix = spec.query_prefix, spec.document_prefix
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(spec.max_seq_length)
        self.tokenizer.no_padding()
        graph = spec.onnx_graph or spec.weights
        try:
            self.session = inference_session(str(folder / graph))
        except Exception as exc:  # onnxruntime raises its own exception types for a graph it cannot read
            raise ModelUnavailable(f"{graph} of {spec.name} cannot be loaded by ONNX Runtime "
                                   f"({type(exc).__name__}); run `make embed MODEL={spec.name}`") from None
        self.output = spec.onnx_output

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, progress: ProgressFn | None = None) -> np.ndarray:
        return encode_sorted(texts, self.dim, batch_size, progress, self._pooled)

    def _pooled(self, batch: list[str]) -> np.ndarray:
        ids, mask = tokenize(self.tokenizer, batch)
        return self.session.run([self.output], {"input_ids": ids, "attention_mask": mask.astype(np.int64)})[0]
