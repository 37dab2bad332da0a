from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core.retrieval.embedding import assert_normalised, cache_key, corpus_embeddings
from core.data.registry import Registry


def test_second_call_computes_nothing(tmp_path: Path, fake_encoder, small_registry: Registry) -> None:
    first, source = corpus_embeddings(fake_encoder, small_registry, tmp_path)
    assert source == "built" and fake_encoder.calls == 1
    second, source = corpus_embeddings(fake_encoder, small_registry, tmp_path)
    assert source == "cache" and fake_encoder.calls == 1
    np.testing.assert_array_equal(first, second)


@pytest.mark.parametrize("damage", ["truncate", "garbage", "flip", "no_meta"])
def test_damaged_cache_is_rebuilt(tmp_path: Path, fake_encoder, small_registry: Registry, damage: str) -> None:
    good, _ = corpus_embeddings(fake_encoder, small_registry, tmp_path)
    key = cache_key(fake_encoder.model_id, small_registry)
    path = tmp_path / f"emb-{key}.npy"
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        path.write_bytes(b"not an array at all")
    elif damage == "flip":
        path.write_bytes(data[:-8] + bytes(b ^ 0x5A for b in data[-8:]))
    else:
        (tmp_path / f"emb-{key}.json").unlink()
    rebuilt, source = corpus_embeddings(fake_encoder, small_registry, tmp_path)
    assert source == "built" and fake_encoder.calls == 2
    np.testing.assert_array_equal(rebuilt, good)
    assert corpus_embeddings(fake_encoder, small_registry, tmp_path)[1] == "cache"  # and cached again


def test_cache_key_depends_on_model_and_texts(fake_encoder, small_registry: Registry) -> None:
    other = Registry("small", small_registry.apis[:-1])
    assert cache_key("m1", small_registry) != cache_key("m2", small_registry)
    assert cache_key("m1", small_registry) != cache_key("m1", other)


def test_assert_normalised() -> None:
    assert_normalised(np.eye(3, dtype=np.float32))
    with pytest.raises(ValueError):
        assert_normalised(np.full((2, 2), 0.5, dtype=np.float32))
    with pytest.raises(ValueError):
        assert_normalised(np.eye(3))  # float64 is refused: FAISS wants float32


def test_a_cached_index_of_another_dimension_is_named_in_one_warning_and_rebuilt(
        tmp_path: Path, fake_encoder, small_registry: Registry, caplog: pytest.LogCaptureFixture) -> None:
    """A cache written under the model's key by an encoder of another dimension (a model whose declaration changed,
    a copied cache): never searched with, one warning that names both shapes, then the right vectors."""
    from core.retrieval.embedding import save_cached

    key = cache_key(fake_encoder.model_id, small_registry)
    wide = np.eye(len(small_registry), fake_encoder.dim + 8, dtype=np.float32)  # unit rows, a valid digest
    save_cached(tmp_path, key, wide, fake_encoder.model_id, small_registry)
    with caplog.at_level("WARNING"):
        vectors, source = corpus_embeddings(fake_encoder, small_registry, tmp_path)
    assert source == "built" and vectors.shape == (len(small_registry), fake_encoder.dim)
    [warning] = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert f"holds ({len(small_registry)}, {fake_encoder.dim + 8}), not ({len(small_registry)}, {fake_encoder.dim})" \
        in warning and "rebuilding" in warning
    assert corpus_embeddings(fake_encoder, small_registry, tmp_path)[1] == "cache"
