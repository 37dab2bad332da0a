"""The ONNX graph of a declared model that ships only its weights (all-mpnet-base-v2): exported once by torch at
`make embed`, then served by ONNX Runtime with no torch in the process.

Why: on 2 cores sentence-transformers takes about 98 ms to embed one query with mpnet and ONNX Runtime about 33 ms on
the same weights, within 1.4e-7 of it (docs/embedding_models.md). The graph holds the transformer and the masked
mean pooling (output `pooled`, not normalised: OnnxFileEncoder normalises), with dynamic batch and length. A sidecar
records the weights' sha256 it was exported from, so that a graph of other weights is never run.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from core.embedding_models import EmbeddingModelSpec
from core.files import temporary_name, write_atomic

OPSET = 17


def sidecar(spec: EmbeddingModelSpec, folder: Path) -> Path:
    return folder / f"{spec.onnx_graph}.json"


def graph_ready(spec: EmbeddingModelSpec, folder: Path) -> bool:
    """The graph is there, its size as recorded, exported from the declared weights (no hash of the 436 MB graph:
    a damaged one fails to load in ONNX Runtime, which says to run `make embed`)."""
    graph = folder / spec.onnx_graph
    try:
        meta = json.loads(sidecar(spec, folder).read_text())
    except (OSError, ValueError):
        return False
    return (isinstance(meta, dict) and meta.get("weights_sha256") == spec.sha256 and graph.is_file()
            and graph.stat().st_size == meta.get("size"))


def export_graph(spec: EmbeddingModelSpec, folder: Path) -> Path:
    """folder/spec.onnx_graph, exported from the installed weights unless graph_ready; about 8 s and torch's import."""
    graph = folder / spec.onnx_graph
    if graph_ready(spec, folder):
        return graph
    import torch
    from transformers import AutoModel

    class Pooled(torch.nn.Module):
        def __init__(self, model: torch.nn.Module) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            hidden = self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)

    model = Pooled(AutoModel.from_pretrained(str(folder)).eval())
    example = (torch.ones((2, 8), dtype=torch.int64), torch.ones((2, 8), dtype=torch.int64))
    partial = temporary_name(graph)
    try:
        with torch.no_grad():
            torch.onnx.export(model, example, str(partial), input_names=["input_ids", "attention_mask"],
                              output_names=[spec.onnx_output], opset_version=OPSET, dynamo=False,
                              dynamic_axes={"input_ids": {0: "batch", 1: "tokens"},
                                            "attention_mask": {0: "batch", 1: "tokens"},
                                            spec.onnx_output: {0: "batch"}})
        os.replace(partial, graph)
    finally:
        partial.unlink(missing_ok=True)
    write_atomic(sidecar(spec, folder), json.dumps({"weights_sha256": spec.sha256, "size": graph.stat().st_size,
                                                    "opset": OPSET, "torch": torch.__version__}))
    return graph
