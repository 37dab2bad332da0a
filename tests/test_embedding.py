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
