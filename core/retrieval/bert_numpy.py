"""The MiniLM (BERT, mean pooling, L2 normalise) sentence encoder as a numpy forward pass.

Why: importing torch + sentence-transformers costs 8-9 s on this hardware, which is most of the
dashboard's cold start, while the model itself is six small layers. Loading the same safetensors
weights and the same tokenizer.json here takes a fraction of a second and encodes one query no
slower than torch. The corpus cache is still built by sentence-transformers (the reference);
tests check that both give the same vectors.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from core.retrieval.embedding import ProgressFn, TwoSided

SUPPORTED_MODULES = ["sentence_transformers.models.Transformer", "sentence_transformers.models.Pooling",
                     "sentence_transformers.models.Normalize"]


class UnsupportedModel(ValueError):
    """The model folder is not a BERT encoder with mean pooling and normalisation."""


# Rational approximation of erf on [-4, 4] (Eigen's float32 erf): max error 5e-7, 3x faster than
# scipy.special.erf, whose float32 loop computes in double. Highest order first.
_ERF_P = [np.float32(c) for c in (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
                                  -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
                                  -1.60960333262415e-02)]
_ERF_Q = [np.float32(c) for c in (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
                                  -7.37332916720468e-03, -1.42647390514189e-02)]


def erf32(x: np.ndarray) -> np.ndarray:
    """erf of a float32 array, as float32."""
    x = np.clip(x, -4.0, 4.0)
    x2 = x * x
    p = np.full_like(x, _ERF_P[0])
    for c in _ERF_P[1:]:
        p *= x2
        p += c
    p *= x
    q = np.full_like(x, _ERF_Q[0])
    for c in _ERF_Q[1:]:
        q *= x2
        q += c
    p /= q
    return p


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact (erf) GELU, in place: the tanh approximation would drift from the torch vectors."""
    y = erf32(x * np.float32(1.0 / np.sqrt(2.0)))
    y += 1.0
    y *= x
    y *= 0.5
    return y


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = np.mean(centred * centred, axis=-1, keepdims=True)
    return centred / np.sqrt(var + eps) * weight + bias


def check_supported(folder: Path) -> tuple[dict, dict]:
    """(bert config, sentence-bert config) of a model folder this module can run, else UnsupportedModel."""
    try:
        modules = json.loads((folder / "modules.json").read_text())
        config = json.loads((folder / "config.json").read_text())
        pooling = json.loads((folder / "1_Pooling" / "config.json").read_text())
        st_config = json.loads((folder / "sentence_bert_config.json").read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise UnsupportedModel(f"{folder} is not a sentence-transformers model folder: {exc}") from exc
    if [m.get("type") for m in modules] != SUPPORTED_MODULES:
        raise UnsupportedModel("needs exactly Transformer -> Pooling -> Normalize modules")
    if config.get("model_type") != "bert" or config.get("hidden_act") != "gelu" \
            or config.get("position_embedding_type", "absolute") != "absolute":
        raise UnsupportedModel("needs a BERT model with gelu activation and absolute positions")
    modes = {k for k, v in pooling.items() if k.startswith("pooling_mode") and v}
    if modes != {"pooling_mode_mean_tokens"}:
        raise UnsupportedModel(f"needs mean pooling alone, got {sorted(modes)}")
    if not (folder / "model.safetensors").exists() or not (folder / "tokenizer.json").exists():
        raise UnsupportedModel("needs model.safetensors and tokenizer.json")
    return config, st_config


def load_tokenizer(folder: Path, config: dict, st_config: dict):
    """The model's tokenizers.Tokenizer, truncating at sentence-transformers' max_seq_length, no padding."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.enable_truncation(int(st_config.get("max_seq_length") or config["max_position_embeddings"]))
    tokenizer.no_padding()
    return tokenizer


def tokenize(tokenizer, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(token ids int64, attention mask float32), both [batch, longest], padded with zeros."""
    encodings = tokenizer.encode_batch(list(texts))
    length = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(encodings), length), dtype=np.int64)
    mask = np.zeros((len(encodings), length), dtype=np.float32)
    for row, enc in enumerate(encodings):
        ids[row, :len(enc.ids)] = enc.ids
        mask[row, :len(enc.ids)] = 1.0
    return ids, mask


def sorted_batches(texts: Sequence[str], batch_size: int) -> list[np.ndarray]:
    """Indices of texts in batches of similar length: less padding per batch."""
    order = np.argsort([len(t) for t in texts], kind="stable")
    return [order[start:start + batch_size] for start in range(0, len(texts), batch_size)]


def encode_sorted(texts: Sequence[str], dim: int, batch_size: int, progress: ProgressFn | None,
                  pooled: Callable[[list[str]], np.ndarray]) -> np.ndarray:
    """Unit vectors of texts, in length-sorted batches through `pooled` (a batch's pooled outputs)."""
    texts = list(texts)
    out = np.zeros((len(texts), dim), dtype=np.float32)
    done = 0
    for idx in sorted_batches(texts, batch_size):
        vectors = pooled([texts[i] for i in idx])
        out[idx] = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        done += len(idx)
        if progress is not None:
            progress(done, len(texts))
    return out


class NumpyBertEncoder(TwoSided):
    """Same Encoder protocol as SentenceTransformerEncoder; no torch."""

    runtime = "numpy"

    def __init__(self, folder: str | Path, model_id: str) -> None:
        from safetensors.numpy import load_file

        folder = Path(folder)
        config, st_config = check_supported(folder)
        self.model_id = model_id
        self.dim = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config["layer_norm_eps"])
        self.tokenizer = load_tokenizer(folder, config, st_config)
        weights = load_file(str(folder / "model.safetensors"))
        self.w = {name.removeprefix("bert."): value for name, value in weights.items()}
        for i in range(self.layers):  # one fused QKV projection per layer: one matmul instead of three
            p = f"encoder.layer.{i}.attention.self."
            self.w[p + "qkv.weight"] = np.ascontiguousarray(np.concatenate(
                [self.w[p + n + ".weight"] for n in ("query", "key", "value")]).T)
            self.w[p + "qkv.bias"] = np.concatenate([self.w[p + n + ".bias"] for n in ("query", "key", "value")])
        for name in [n for n in self.w if n.endswith("dense.weight")]:
            self.w[name] = np.ascontiguousarray(self.w[name].T)  # stored [out, in]; we multiply x @ W

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, progress: ProgressFn | None = None) -> np.ndarray:
        texts = list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        done = 0
        for idx in sorted_batches(texts, batch_size):
            out[idx] = self._encode_batch([texts[i] for i in idx])
            done += len(idx)
            if progress is not None:
                progress(done, len(texts))
        return out

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        ids, mask = tokenize(self.tokenizer, texts)
        hidden = self._forward(ids, mask)
        pooled = (hidden * mask[:, :, None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return (pooled / norms).astype(np.float32)

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Hidden states [batch, length, dim]; dense layers run on [batch*length, dim] as one GEMM each."""
        w, eps = self.w, self.eps
        batch, length = ids.shape
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:length]
             + w["embeddings.token_type_embeddings.weight"][0]).reshape(batch * length, self.dim)
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
        head_dim = self.dim // self.heads
        scale = np.float32(1.0 / np.sqrt(head_dim))
        bias = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]  # padded keys get no attention
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            qkv = x @ w[p + "attention.self.qkv.weight"] + w[p + "attention.self.qkv.bias"]
            qkv = qkv.reshape(batch, length, 3, self.heads, head_dim).transpose(2, 0, 3, 1, 4)
            scores = (qkv[0] * scale) @ qkv[1].transpose(0, 1, 3, 2) + bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ qkv[2]).transpose(0, 2, 1, 3).reshape(batch * length, self.dim)
            attended = context @ w[p + "attention.output.dense.weight"] + w[p + "attention.output.dense.bias"]
            x = _layer_norm(attended + x, w[p + "attention.output.LayerNorm.weight"],
                            w[p + "attention.output.LayerNorm.bias"], eps)
            inner = x @ w[p + "intermediate.dense.weight"] + w[p + "intermediate.dense.bias"]
            out = _gelu(inner) @ w[p + "output.dense.weight"] + w[p + "output.dense.bias"]
            x = _layer_norm(out + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], eps)
        return x.reshape(batch, length, self.dim)
