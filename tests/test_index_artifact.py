"""The shipped float16 vectors: round trip, keyed use, fallback on any mismatch or damage, and the real files."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core.retrieval.embedding import cache_key, corpus_embeddings, shipped_embeddings
from core.retrieval.artifact import (ArtifactError, artifact_name, decode_payload, encode_payload, read_artifact,
                                     read_header, write_artifact)
from core.data.registry import Registry
from core.settings import PROJECT_ROOT

SHIPPED = PROJECT_ROOT / "data" / "index"


def unit_rows(n: int, dim: int, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def shipped_for(encoder, registry: Registry, folder: Path) -> Path:
    """Write the encoder's vectors of `registry` as an artifact in `folder`, as `make index-artifact` does."""
    vectors = encoder.encode(registry.documents)
    path = folder / artifact_name(encoder.model_id, registry.name)
    write_artifact(path, vectors, model_id=encoder.model_id, registry=registry.name,
                   key=cache_key(encoder.model_id, registry), registry_hash=registry.content_hash)
    return path


def test_round_trip_is_float16_exact_and_unit_length() -> None:
    x = unit_rows(300, 48)
    y = decode_payload(encode_payload(x), 300, 48)
    assert y.dtype == np.float32 and y.shape == x.shape
    np.testing.assert_allclose(np.linalg.norm(y, axis=1), 1.0, atol=1e-6)
    assert np.abs(y - x).max() < 2e-3  # float16 keeps ~3 decimal digits
    # The byte planes decode bit-exactly to the float16 values (before re-normalisation).
    half = x.astype(np.float16).astype(np.float32)
    np.testing.assert_allclose(y, half / np.linalg.norm(half, axis=1, keepdims=True), rtol=0, atol=1e-7)


def test_the_same_vectors_give_the_same_bytes(tmp_path: Path) -> None:
    x = unit_rows(50, 16)
    for name in ("a.vec", "b.vec"):
        write_artifact(tmp_path / name, x, model_id="m", registry="r", key="k", registry_hash="h")
    assert (tmp_path / "a.vec").read_bytes() == (tmp_path / "b.vec").read_bytes()


def test_matching_artifact_is_used_and_nothing_is_embedded(tmp_path: Path, fake_encoder, small_registry) -> None:
    shipped_for(fake_encoder, small_registry, tmp_path / "index")
    calls = fake_encoder.calls
    vectors, source = corpus_embeddings(fake_encoder, small_registry, tmp_path / "cache",
                                        artifact_dir=tmp_path / "index")
    assert source == "artifact" and fake_encoder.calls == calls
    assert np.abs(vectors - fake_encoder.encode(small_registry.documents)).max() < 2e-3


def test_a_deferred_decoded_cache_is_written_only_when_its_task_runs(tmp_path: Path, fake_encoder,
                                                                    small_registry) -> None:
    """The dashboard defers the decoded vectors' write until after its first answer (ui.first_answer.defer): the
    vectors come back at once, nothing is in the cache until the task runs, and the next read is the cache's."""
    index, cache = tmp_path / "index", tmp_path / "cache"
    shipped_for(fake_encoder, small_registry, index)
    tasks: list = []
    vectors = shipped_embeddings(fake_encoder.model_id, fake_encoder.dim, small_registry, cache, index,
                                 defer=tasks.append)
    assert len(tasks) == 1 and not list(cache.glob("emb-*"))
    tasks[0]()
    [written] = cache.glob("emb-*-f16-*.npy")
    read = shipped_embeddings(fake_encoder.model_id, fake_encoder.dim, small_registry, cache, index,
                              defer=tasks.append)
    assert len(tasks) == 1 and np.array_equal(read, vectors)  # read from the cache: nothing more to write
    assert np.array_equal(np.load(written), vectors)


def test_other_documents_fall_back_to_a_build(tmp_path: Path, fake_encoder, small_registry) -> None:
    shipped_for(fake_encoder, small_registry, tmp_path / "index")
    edited = Registry(small_registry.name, small_registry.apis[:-1])  # same name, other documents
    messages: list[str] = []
    vectors, source = corpus_embeddings(fake_encoder, edited, tmp_path / "cache", artifact_dir=tmp_path / "index",
                                        notify=messages.append)
    assert source == "built" and vectors.shape == (len(edited), fake_encoder.dim)
    assert any("other documents or another model" in m for m in messages)


@pytest.mark.parametrize("damage", ["truncate", "flip", "bad_magic", "bad_header", "empty"])
def test_damaged_artifact_says_so_and_rebuilds(tmp_path: Path, fake_encoder, small_registry, damage: str) -> None:
    path = shipped_for(fake_encoder, small_registry, tmp_path / "index")
    data = path.read_bytes()
    damaged = {"truncate": data[:-100], "flip": data[:-8] + bytes(b ^ 0x5A for b in data[-8:]),
               "bad_magic": b"NOTAVEC\n" + data[8:], "bad_header": data[:8] + b"{not json\n" + data[200:],
               "empty": b""}[damage]
    path.write_bytes(damaged)
    with pytest.raises(ArtifactError) as info:
        read_artifact(path)
    assert path.name in str(info.value)
    messages: list[str] = []
    vectors, source = corpus_embeddings(fake_encoder, small_registry, tmp_path / "cache",
                                        artifact_dir=tmp_path / "index", notify=messages.append)
    assert source == "built" and vectors.shape == (len(small_registry), fake_encoder.dim)
    assert len(messages) == 1 and "cannot be used" in messages[0] and "Traceback" not in messages[0]


@pytest.mark.slow
@pytest.mark.parametrize("registry_name", ["full", "documented"])
def test_shipped_artifacts_match_the_committed_registries(real_data: Path, registry_name: str, tmp_path: Path) -> None:
    """The committed files are the MiniLM vectors of exactly the committed documents: the header's key
    matches, and a fresh numpy encode of sampled documents agrees to float16 precision."""
    from core.retrieval.assemble import load_encoder
    from core.data.loaders import registry_for
    from core.settings import Settings

    settings = Settings.from_env(env={"TOOLBENCH_DATA": str(real_data), "CACHE_DIR": str(tmp_path),
                                      "REGISTRY": registry_name})
    registry = registry_for(settings)
    encoder = load_encoder("all-MiniLM-L6-v2", "numpy")
    path = SHIPPED / artifact_name(encoder.model_id, registry_name)
    header = read_header(path)
    assert header.key == cache_key(encoder.model_id, registry)
    assert (header.n, header.dim) == (len(registry), 384)
    vectors = read_artifact(path, header)
    rows = np.random.default_rng(7).choice(len(registry), 40, replace=False)
    fresh = encoder.encode([registry.documents[r] for r in rows])
    assert np.abs(fresh - vectors[rows]).max() < 2e-3
    assert np.min(np.sum(fresh * vectors[rows], axis=1)) > 0.99999
