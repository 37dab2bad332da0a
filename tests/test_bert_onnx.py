"""The ONNX Runtime query encoder (the default) against the fp32 numpy forward pass it replaces."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import core.retrieval.assemble
import core.retrieval.bert_onnx
from core.data.loaders import queries_for
from core.retrieval.assemble import build_retriever
from core.retrieval.bert_numpy import NumpyBertEncoder
from core.retrieval.bert_onnx import OnnxBertEncoder, cached_graph, graph_path, weights_sha256
from core.retrieval.embedding import canonical_model_id, resolve_model_path
from core.settings import PROJECT_ROOT, Settings

MODEL = "all-MiniLM-L6-v2"
# Both are float32 evaluations of the same weights; they differ only in summation order and in ONNX
# Runtime's fused attention/LayerNorm/GELU kernels, i.e. float32 round-off carried through 6 layers
# (measured: 1.9e-7 at most over 100 real queries). 1e-5 is the bound the numpy pass meets against
# torch; a cosine moved by less than 1e-5 reorders two APIs only if their cosines are within 2e-5.
TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def onnx_encoder(graph_cache: Path) -> OnnxBertEncoder:
    """Over the session's graph (conftest): building it is test_the_graph_is_built_once_per_weights' subject."""
    return OnnxBertEncoder(resolve_model_path(MODEL), canonical_model_id(MODEL), graph_cache)


@pytest.mark.slow
def test_onnx_vectors_match_the_numpy_forward_pass(onnx_encoder: OnnxBertEncoder, numpy_vectors: np.ndarray,
                                                   encoder_texts: list[str]) -> None:
    """numpy_vectors is the numpy pass over encoder_texts, computed once per session (conftest)."""
    texts, reference = encoder_texts, numpy_vectors
    ours = onnx_encoder.encode(texts)
    assert ours.shape == reference.shape == (len(texts), 384) and ours.dtype == np.float32
    assert np.abs(ours - reference).max() < TOLERANCE
    one_by_one = np.vstack([onnx_encoder.encode([t]) for t in texts[:8] + texts[-6:]])
    assert np.abs(one_by_one - np.vstack([ours[:8], ours[-6:]])).max() < TOLERANCE  # padding changes nothing
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


@pytest.mark.slow
def test_top5_sets_agree_on_real_queries(numpy_encoder: NumpyBertEncoder, onnx_encoder: OnnxBertEncoder,
                                        real_data: Path, tmp_path: Path) -> None:
    """On the shipped full registry: the same top-5 sets for 160 real queries (all 1,100 agreed when measured)."""
    settings = Settings.from_env(env={"TOOLBENCH_DATA": str(real_data), "CACHE_DIR": str(tmp_path)})
    retriever, info = build_retriever(settings, encoder=numpy_encoder)
    assert info.source == "artifact" and info.size == 47038
    texts = [q.query for q in queries_for(settings)][::7]
    _, ours = retriever.index.batch_search(onnx_encoder.encode(texts), 5)
    _, reference = retriever.index.batch_search(numpy_encoder.encode(texts), 5)
    same = [set(a) == set(b) for a, b in zip(ours.tolist(), reference.tolist())]
    assert len(same) == 158 and sum(same) >= len(same) - 1


@pytest.mark.slow
def test_the_graph_is_built_once_per_weights(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = Path(resolve_model_path(MODEL))
    graph = cached_graph(folder, "minilm", tmp_path)
    path = graph_path(folder, tmp_path)
    assert weights_sha256(folder)[:16] in path.name and path.read_bytes() == graph and len(graph) > 80_000_000

    def boom(encoder):
        raise AssertionError("rebuilt")

    monkeypatch.setattr(core.retrieval.bert_onnx, "build_graph", boom)
    assert cached_graph(folder, "minilm", tmp_path) == graph  # read back, not rebuilt
    other = tmp_path / "other-weights"
    shutil.copytree(folder, other)
    data = bytearray((other / "model.safetensors").read_bytes())
    data[-1] ^= 1  # one bit of one weight
    (other / "model.safetensors").write_bytes(bytes(data))
    with pytest.raises(AssertionError, match="rebuilt"):  # other weights: another key, so a build
        cached_graph(other, "minilm", tmp_path)


def test_without_onnxruntime_auto_falls_back_to_numpy(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    load = core.retrieval.assemble.load_encoder.__wrapped__
    assert load(MODEL, "auto", tmp_path).runtime == "numpy"
    with pytest.raises(ImportError):
        load(MODEL, "onnx", tmp_path)


@pytest.mark.subprocess
@pytest.mark.parametrize("cached", [True, False])
def test_a_fresh_interpreter_loads_or_builds_the_graph_importing_neither_torch_nor_onnx(
        graph_cache: Path, tmp_path: Path, cached: bool) -> None:
    """With the graph cached, and on a fresh clone's first start, which writes it (core.retrieval.onnx_proto)."""
    if cached:
        shutil.copytree(graph_cache / "onnx", tmp_path / "onnx")
    code = ("import sys; from core.retrieval.assemble import load_encoder; e = load_encoder('all-MiniLM-L6-v2'); "
            "v = e.encode(['find hotels in London']); "
            "print(e.runtime, v.shape, [m for m in ('torch', 'sentence_transformers', 'onnx') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True,
                         env={**os.environ, "CACHE_DIR": str(tmp_path), "ENCODER_RUNTIME": "auto"})
    assert out.stdout.split() == ["onnx", "(1,", "384)", "[]"]
    assert len(list((tmp_path / "onnx").glob("minilm-*.onnx"))) == 1


def test_the_written_graph_is_valid_onnx(graph_cache: Path) -> None:
    """onnx's own parser and checker accept the bytes onnx_proto wrote (ONNX Runtime's Attention is a contrib op
    the checker does not know, so the model is checked without its schema pass)."""
    import onnx

    (graph,) = (graph_cache / "onnx").glob("minilm-*.onnx")
    parsed = onnx.load(str(graph))
    onnx.checker.check_model(parsed)
    kinds = [n.op_type for n in parsed.graph.node]
    assert kinds.count("Attention") == 6 and kinds.count("LayerNormalization") == 13
    assert {o.domain: o.version for o in parsed.opset_import} == {"": 20, "com.microsoft": 1}
    norm = next(n for n in parsed.graph.node if n.op_type == "LayerNormalization")
    assert {a.name: (a.type, a.i if a.type == 2 else a.f) for a in norm.attribute} == {
        "axis": (2, -1), "epsilon": (1, pytest.approx(1e-12, rel=1e-6))}


@pytest.mark.parametrize("damage", ["zeroed", "random", "truncated", "no_digest"])
@pytest.mark.slow
def test_a_damaged_graph_is_rebuilt_with_one_line_never_used(graph_cache: Path, tmp_path: Path, damage: str,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    """Issue 23: 64 KB zeroed at 80% of the graph (size kept) loaded silently and moved recall; random bytes there
    failed an assertion; a truncated graph gave an InvalidProtobuf traceback. Each is now found and rebuilt."""
    folder, model_id = resolve_model_path(MODEL), canonical_model_id(MODEL)
    shutil.copytree(graph_cache / "onnx", tmp_path / "onnx")  # a copy: the graph and its digest, as built
    good = cached_graph(Path(folder), model_id, tmp_path)
    path = graph_path(Path(folder), tmp_path)
    queries = ["find hotels in Paris", "convert 200 EUR to USD"]
    before = OnnxBertEncoder(folder, model_id, tmp_path).encode(queries)
    at = int(len(good) * 0.8)
    damaged = {"zeroed": good[:at] + bytes(65536) + good[at + 65536:],
               "random": good[:at] + np.random.default_rng(0).bytes(65536) + good[at + 65536:],
               "truncated": good[:at], "no_digest": good}[damage]
    path.write_bytes(damaged)
    if damage == "no_digest":
        (path.parent / (path.name + ".sha256")).unlink()
    with caplog.at_level("WARNING"):
        after = OnnxBertEncoder(folder, model_id, tmp_path).encode(queries)
    assert np.array_equal(before, after) and path.read_bytes() == good
    [line] = [r.getMessage() for r in caplog.records if "ONNX graph" in r.getMessage()]
    assert line.endswith("rebuilding it") and "\n" not in line
