"""The numpy MiniLM forward pass against sentence-transformers, the reference it replaces at query time."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from scipy.special import erf

import core.retrieval.assemble
from core.retrieval.bert_numpy import NumpyBertEncoder, UnsupportedModel, check_supported, erf32
from core.retrieval.embedding import corpus_embeddings, resolve_model_path
from core.data.registry import Registry
from core.settings import Settings

MODEL = "all-MiniLM-L6-v2"
TOLERANCE = 1e-5  # float32 round-off between two orders of summation; measured ~3e-7


def test_erf32_matches_scipy_in_double() -> None:
    x = np.linspace(-12, 12, 200_001, dtype=np.float32)
    assert np.abs(erf32(x).astype(np.float64) - erf(x.astype(np.float64))).max() < 1e-6
    assert erf32(x).dtype == np.float32


@pytest.mark.slow
def test_numpy_forward_pass_gives_the_sentence_transformers_vectors(numpy_encoder: NumpyBertEncoder,
                                                                   numpy_vectors: np.ndarray,
                                                                   encoder_texts: list[str]) -> None:
    """numpy_vectors is numpy_encoder.encode(encoder_texts), computed once per session (conftest)."""
    from core.retrieval.embedding import SentenceTransformerEncoder

    texts, ours = encoder_texts, numpy_vectors
    theirs = SentenceTransformerEncoder(MODEL).encode(texts)
    assert ours.shape == theirs.shape == (len(texts), 384) and ours.dtype == np.float32
    assert np.abs(ours - theirs).max() < TOLERANCE
    one_by_one = np.vstack([numpy_encoder.encode([t]) for t in texts[:12] + texts[-6:]])
    assert np.abs(one_by_one - np.vstack([ours[:12], ours[-6:]])).max() < TOLERANCE  # padding changes nothing
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def _model_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "model"
    shutil.copytree(resolve_model_path(MODEL), folder)
    return folder


@pytest.mark.parametrize("change", ["cls_pooling", "roberta", "no_normalize", "no_safetensors"])
def test_models_the_forward_pass_cannot_run_are_refused(tmp_path: Path, change: str) -> None:
    folder = _model_copy(tmp_path)
    check_supported(folder)  # the untouched copy is fine
    if change == "cls_pooling":
        path = folder / "1_Pooling" / "config.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), "pooling_mode_cls_token": True,
                                    "pooling_mode_mean_tokens": False}))
    elif change == "roberta":
        path = folder / "config.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), "model_type": "roberta"}))
    elif change == "no_normalize":
        path = folder / "modules.json"
        path.write_text(json.dumps(json.loads(path.read_text())[:2]))
    else:
        (folder / "model.safetensors").unlink()
    with pytest.raises(UnsupportedModel):
        check_supported(folder)


def test_load_encoder_falls_back_to_sentence_transformers(tmp_path: Path, fake_encoder, monkeypatch) -> None:
    folder = _model_copy(tmp_path)
    (folder / "model.safetensors").unlink()
    monkeypatch.setattr(core.retrieval.assemble, "load_reference_encoder", lambda name: fake_encoder)
    load = core.retrieval.assemble.load_encoder.__wrapped__
    assert load(str(folder), "auto") is fake_encoder
    assert load(MODEL, "torch") is fake_encoder
    assert load(MODEL, "numpy").runtime == "numpy"
    with pytest.raises(UnsupportedModel):
        load(str(folder), "numpy")


def test_the_corpus_is_built_by_the_builder_and_must_be_the_same_model(tmp_path: Path, fake_encoder,
                                                                      small_registry: Registry) -> None:
    class OtherModel:
        model_id, dim, runtime = "another-model", 64, "fake"

    with pytest.raises(ValueError, match="does not match"):
        corpus_embeddings(fake_encoder, small_registry, tmp_path, builder=OtherModel)
    built: list[int] = []

    def builder():
        built.append(1)
        return fake_encoder

    vectors, cached = corpus_embeddings(fake_encoder, small_registry, tmp_path, builder=builder)
    again, cached_again = corpus_embeddings(fake_encoder, small_registry, tmp_path, builder=builder)
    assert (cached, cached_again, len(built)) == ("built", "cache", 1)  # a cache hit never loads the builder
    np.testing.assert_array_equal(vectors, again)


def test_encoder_runtime_setting() -> None:
    assert Settings.from_env(env={}).encoder_runtime == "auto"
    assert Settings.from_env(env={"ENCODER_RUNTIME": " Torch "}).encoder_runtime == "torch"
    assert Settings.from_env(env={"ENCODER_RUNTIME": "onnx"}).encoder_runtime == "onnx"
    with pytest.raises(ValueError, match="ENCODER_RUNTIME must be one of"):
        Settings.from_env(env={"ENCODER_RUNTIME": "gpu"})
