"""Derived files read back from CACHE_DIR, damaged the ways a disk or a person damages them (a zeroed region,
a flipped bit, a cut), with the size kept or not: each is found against the digest recorded when it was
written, rebuilt with one warning, and what is served equals what the undamaged file gave.

The ONNX graph and the ANN indexes have theirs in test_bert_onnx.py and test_ann.py; the local models' in
test_local_models.py.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import core.data.registry_cache as rc
from core.data.registry import Registry
from core.retrieval.artifact import artifact_name, write_artifact
from core.retrieval.embedding import cache_key, corpus_embeddings
from tests.helpers import SMALL_APIS, FakeEncoder, write_compact_data


def _zeroed(at: int, n: int) -> Callable[[bytes], bytes]:
    return lambda data: data[:at] + bytes(n) + data[at + n:]


def _npy_damage(kind: str, data: bytes) -> bytes:
    """Before the digest, both header cases escaped np.load as a tokenize.TokenError traceback."""
    close = data.index(b"), }")  # the end of the header's shape
    return {"zeroed header": _zeroed(close, 4),
            "flipped header bit": lambda d: d[:close] + bytes([d[close] ^ 1]) + d[close + 1:],  # ")" becomes "("
            "zeroed rows": _zeroed(len(data) - 1024, 512),
            "truncated": lambda d: d[:len(d) - 100]}[kind](data)


NPY_DAMAGE = ["zeroed header", "flipped header bit", "zeroed rows", "truncated"]


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize("damage", NPY_DAMAGE)
def test_a_damaged_embedding_cache_is_rebuilt_with_one_line(tmp_path: Path, fake_encoder: FakeEncoder,
                                                            small_registry: Registry, damage: str,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    encoder = fake_encoder
    good, source = corpus_embeddings(encoder, small_registry, tmp_path)
    path = tmp_path / f"emb-{cache_key(encoder.model_id, small_registry)}.npy"
    raw = path.read_bytes()
    path.write_bytes(_npy_damage(damage, raw))
    with caplog.at_level(logging.WARNING):
        again, source = corpus_embeddings(encoder, small_registry, tmp_path)
    assert source == "built" and encoder.calls == 2
    np.testing.assert_array_equal(again, good)
    [line] = _warnings(caplog)
    assert path.name in line and "rebuilding it" in line and "\n" not in line
    assert path.read_bytes() == raw and corpus_embeddings(encoder, small_registry, tmp_path)[1] == "cache"


@pytest.mark.parametrize("damage", NPY_DAMAGE)
def test_a_damaged_decoded_index_is_decoded_again_with_one_line(tmp_path: Path, fake_encoder: FakeEncoder,
                                                                small_registry: Registry, damage: str,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    encoder = fake_encoder
    write_artifact(tmp_path / "index" / artifact_name(encoder.model_id, small_registry.name),
                   encoder.encode(small_registry.documents), model_id=encoder.model_id, registry=small_registry.name,
                   key=cache_key(encoder.model_id, small_registry), registry_hash=small_registry.content_hash)
    cache = tmp_path / "cache"
    good, source = corpus_embeddings(encoder, small_registry, cache, artifact_dir=tmp_path / "index")
    [path] = cache.glob("emb-*-f16-*.npy")
    raw = path.read_bytes()
    path.write_bytes(_npy_damage(damage, raw))
    with caplog.at_level(logging.WARNING):
        again, source = corpus_embeddings(encoder, small_registry, cache, artifact_dir=tmp_path / "index")
    assert source == "artifact" and encoder.calls == 1  # decoded again; only the artifact was ever embedded
    np.testing.assert_array_equal(again, good)
    [line] = _warnings(caplog)
    assert path.name in line and "rebuilding it" in line
    assert path.read_bytes() == raw  # kept again, as it was


@pytest.mark.parametrize("damage", ["zeroed region", "flipped bytes", "truncated"])
def test_a_damaged_registry_cache_is_parsed_again_with_one_line(tmp_path: Path, damage: str,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    data = write_compact_data(tmp_path / "data", SMALL_APIS, [])
    cache = tmp_path / "cache"
    good = rc.load_registry_cached(data, "full", cache)
    [path] = cache.glob("registry-*.marshal")
    raw = path.read_bytes()
    middle = len(raw) // 2
    flipped = raw[:middle] + bytes(b ^ 0x5A for b in raw[middle:middle + 8]) + raw[middle + 8:]
    path.write_bytes({"zeroed region": _zeroed(middle, 64)(raw), "flipped bytes": flipped,
                      "truncated": raw[:middle]}[damage])
    with caplog.at_level(logging.WARNING):
        assert rc.load_registry_cached(data, "full", cache) == good
    [line] = _warnings(caplog)
    assert path.name in line and "parsing the data again" in line
    assert path.read_bytes() == raw  # rewritten as it was
