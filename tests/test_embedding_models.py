"""Embedding models declared once (core.embedding_models): names, ids, where an encoder loads them from, and the
one line a missing or damaged model gets, with RtP on the default model unaffected."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from core.embedding_models import (EMBEDDING_MODELS, MINILM_L3, MPNET_BASE, declared_embedding_model,
                                   embedding_model_spec)
from core.retrieval.embed_install import EmbedInstallError, installed_folder, models_dir
from core.retrieval.embedding import canonical_model_id, resolve_model_path
from core.settings import PROJECT_ROOT
from tests.helpers import MODEL_CACHE


def test_every_declared_model_is_recorded_under_its_hub_id_and_found_by_either_name() -> None:
    for spec in EMBEDDING_MODELS.values():
        assert canonical_model_id(spec.name) == canonical_model_id(spec.model_id) == spec.model_id
        assert declared_embedding_model(spec.model_id) is spec
    assert canonical_model_id("thenlper/gte-base") == "thenlper/gte-base"  # not declared: left as it is
    with pytest.raises(ValueError, match="declared: all-MiniLM-L6-v2, all-mpnet-base-v2, paraphrase-MiniLM-L3-v2"):
        embedding_model_spec("gte-base")
    assert "NOT gte-base" in MPNET_BASE.notes and "stands in for gte-base" in MPNET_BASE.label


def test_a_model_not_installed_is_one_line_naming_make_embed_and_never_a_download(tmp_path: Path) -> None:
    with pytest.raises(EmbedInstallError, match=r"not installed; run `make embed MODEL=all-mpnet-base-v2`"):
        resolve_model_path(MPNET_BASE.name, tmp_path)
    assert not (tmp_path / "embedding_models").exists()  # nothing was fetched or made


def test_a_damaged_installed_model_is_refused_by_its_hash(tmp_path: Path) -> None:
    source = MODEL_CACHE / "embedding_models" / MINILM_L3.name
    if not (source / MINILM_L3.weights).is_file():
        pytest.skip("paraphrase-MiniLM-L3-v2 is not installed here: run `make embed MODEL=paraphrase-MiniLM-L3-v2`")
    target = models_dir(tmp_path) / MINILM_L3.name
    shutil.copytree(source, target)
    assert installed_folder(MINILM_L3, tmp_path) == target
    with (target / MINILM_L3.weights).open("r+b") as fh:
        fh.seek(4096)
        byte = fh.read(1)
        fh.seek(4096)
        fh.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(EmbedInstallError, match=r"has sha256 .*, not the declared .*make embed MODEL=paraphrase"):
        installed_folder(MINILM_L3, tmp_path)


def test_the_l3_graph_gives_unit_vectors_that_rank_a_paraphrase_first() -> None:
    if not (MODEL_CACHE / "embedding_models" / MINILM_L3.name / MINILM_L3.weights).is_file():
        pytest.skip("paraphrase-MiniLM-L3-v2 is not installed here")
    from core.retrieval.onnx_file import OnnxFileEncoder

    encoder = OnnxFileEncoder(MODEL_CACHE / "embedding_models" / MINILM_L3.name, MINILM_L3)
    vectors = encoder.encode_queries(["find hotels in Paris", "a place to stay in Paris", "the weather in Oslo"])
    assert vectors.shape == (3, 384) and np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    similar = vectors @ vectors.T
    assert similar[0, 1] > similar[0, 2] + 0.3
    one = encoder.encode(["find hotels in Paris"])  # alone or in a batch: the same vector (padding is masked)
    assert np.allclose(one[0], vectors[0], atol=1e-5)


@pytest.mark.parametrize("argv, words", [
    (["embed", "--model", "gte-base"], "unknown embedding model 'gte-base'; declared: all-MiniLM-L6-v2"),
    (["embed", "--model", "paraphrase-MiniLM-L3-v2", "--registries", "full,nope"], "nope is not a shipped registry"),
])
@pytest.mark.subprocess
def test_embed_refuses_an_unknown_model_or_registry_in_one_line(argv: list[str], words: str, tmp_path: Path) -> None:
    env = {**os.environ, "CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "core", *argv], cwd=PROJECT_ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and words in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.subprocess
def test_query_with_a_retriever_that_cannot_load_is_one_line_and_the_default_still_answers(tmp_path: Path) -> None:
    """--retriever names a model not installed in this CACHE_DIR: one line naming `make embed`; the studies' model,
    shipped with its index, answers the same query; bm25 needs no install at all."""
    env = {**os.environ, "CACHE_DIR": str(tmp_path), "REGISTRY": "livemcpbench"}

    def query(*extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "core", "query", "search the web for news", "--json", *extra],
                              cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300)

    refused = query("--retriever", MPNET_BASE.name)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and "make embed MODEL=all-mpnet-base-v2" in refused.stderr
    for extra in ((), ("--retriever", "bm25")):
        answered = query(*extra)
        assert answered.returncode == 0, answered.stderr
        assert '"rtp"' in answered.stdout and '"hits"' in answered.stdout


@pytest.mark.slow
def test_mpnet_is_served_by_its_exported_graph_and_a_graph_of_other_weights_is_refused(tmp_path: Path) -> None:
    """mpnet runs on ONNX Runtime over the graph `make embed` exported from its weights, within 1e-6 of
    sentence-transformers; a graph whose sidecar names other weights is never run: one line saying `make embed`."""
    import json

    from core.retrieval.assemble import load_encoder, load_reference_encoder
    from core.retrieval.onnx_export import graph_ready, sidecar

    source = MODEL_CACHE / "embedding_models" / MPNET_BASE.name
    if not graph_ready(MPNET_BASE, source):
        pytest.skip("all-mpnet-base-v2 is not installed here: run `make embed MODEL=all-mpnet-base-v2`")
    texts = ["find hotels in Paris", "convert 200 EUR to USD and look up my IP"]
    served = load_encoder(MPNET_BASE.name, "auto", MODEL_CACHE)
    assert served.runtime == "onnx"
    reference = load_reference_encoder(MPNET_BASE.name).encode_queries(texts)
    assert np.abs(served.encode_queries(texts) - reference).max() < 1e-6
    target = models_dir(tmp_path) / MPNET_BASE.name
    target.mkdir(parents=True)
    for name in (MPNET_BASE.weights, MPNET_BASE.onnx_graph):
        (target / name).symlink_to(source / name)
    meta = json.loads(sidecar(MPNET_BASE, source).read_text())
    sidecar(MPNET_BASE, target).write_text(json.dumps({**meta, "weights_sha256": "0" * 64}))
    with pytest.raises(EmbedInstallError, match=r"ONNX graph of all-mpnet-base-v2 has not been exported .*make embed"):
        installed_folder(MPNET_BASE, tmp_path)


def test_every_retriever_has_a_short_label_for_legends() -> None:
    from core.embedding_models import LEXICAL, retriever_label, retriever_names
    from core.retrieval.lexical import BM25Encoder

    assert retriever_label(BM25Encoder({}).model_id) == retriever_label(LEXICAL) == "BM25"
    assert [retriever_label(EMBEDDING_MODELS[n].model_id) for n in retriever_names(MPNET_BASE.name)[:3]] == [
        MPNET_BASE.name, "all-MiniLM-L6-v2", MINILM_L3.name]
    assert retriever_label("thenlper/gte-base") == "gte-base"  # not declared: the id's last part
