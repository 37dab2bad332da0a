"""Shared fixtures: a deterministic fake encoder, small registries, and the real data when present.

The plain fakes and tiny data they build on live in tests/helpers.py (import them from there).
"""
from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from core.retrieval.bert_numpy import NumpyBertEncoder
from core.retrieval.bert_onnx import cached_graph
from core.retrieval.discovery import Retriever
from core.retrieval.embedding import canonical_model_id, resolve_model_path
from core.retrieval.index import VectorIndex
from core.data.registry import Registry
from core.data.toolbench import load_queries, load_registry
from core.settings import PROJECT_ROOT, Settings
# re-exported: test_app_pages imports SMALL_APIS, FakeEncoder and write_compact_data from here
from tests.helpers import SMALL_APIS, FakeEncoder, write_compact_data, write_tiny_data  # noqa: F401
from tests.stores import STORES, PostgresServer, PostgresUnavailable, start_postgres

REPO_DATA = PROJECT_ROOT / "data" / "toolbench"  # committed: every clone has it
MINILM = "all-MiniLM-L6-v2"  # the packaged embedding model


@pytest.fixture
def fake_encoder() -> FakeEncoder:
    return FakeEncoder()


@pytest.fixture
def small_registry() -> Registry:
    return Registry("small", SMALL_APIS)


@pytest.fixture
def small_retriever(small_registry: Registry, fake_encoder: FakeEncoder) -> Retriever:
    return Retriever(small_registry, fake_encoder, VectorIndex(fake_encoder.encode(small_registry.documents)))


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Settings isolated from the developer's environment: offline backend, temp cache."""
    return Settings.from_env(env={"CACHE_DIR": str(tmp_path / "cache"), "LLM_BACKEND": "offline",
                                  "INDEX_DIR": str(tmp_path / "index")})


@pytest.fixture(scope="session")
def real_data() -> Path:
    """The real ToolBench data, committed in data/toolbench/: the integration tests always run."""
    assert (REPO_DATA / "queries.jsonl.gz").is_file(), f"the committed ToolBench data is missing from {REPO_DATA}"
    return REPO_DATA


@pytest.fixture(scope="session")
def encoder_texts(real_data: Path) -> list[str]:
    """What the forward-pass tests compare vectors on: real queries and API documents (the longest past 256
    tokens: truncated the same way) and edge cases."""
    docs = Registry("documented", tuple(load_registry(real_data, "documented"))).documents
    return ([q.query for q in load_queries(real_data)[::60]] + list(docs[::400])
            + [max(docs, key=len), "", "x", "天气预报 🌦️ weather in Zürich",
               "<script>alert(1)</script> ![img](http://x/y.png)", "translate this text " * 2000])


@pytest.fixture(scope="session")
def numpy_encoder() -> NumpyBertEncoder:
    """The numpy MiniLM forward pass: test_bert_numpy's subject, test_bert_onnx's reference."""
    return NumpyBertEncoder(resolve_model_path(MINILM), canonical_model_id(MINILM))


@pytest.fixture(scope="session")
def numpy_vectors(numpy_encoder: NumpyBertEncoder, encoder_texts: list[str]) -> np.ndarray:
    """numpy_encoder's vectors of encoder_texts, computed once for both of those tests (the padded batch is
    seconds of numpy); read-only, so neither can change the other's."""
    vectors = numpy_encoder.encode(encoder_texts)
    vectors.flags.writeable = False
    return vectors


@pytest.fixture(scope="session")
def graph_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache directory holding the query encoder's ONNX graph, built once per session (seconds a build): tests
    whose subject is not the build copy its onnx/ folder into their own cache."""
    cache = tmp_path_factory.mktemp("graph-cache")
    cached_graph(Path(resolve_model_path(MINILM)), canonical_model_id(MINILM), cache)
    return cache


@pytest.fixture
def tiny_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Environment pointing every entry point at tiny data, a temp cache and the offline backend."""
    env = {"TOOLBENCH_DATA": str(write_tiny_data(tmp_path / "toolbench")), "CACHE_DIR": str(tmp_path / "cache"),
           "LLM_BACKEND": "offline", "DATABASE_URL": f"sqlite:///{tmp_path / 'results.sqlite'}",
           "INDEX_DIR": str(tmp_path / "index")}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    for key in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "REGISTRY"):
        monkeypatch.delenv(key, raising=False)
    return env


def on_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def reaches_postgres(item: pytest.Item) -> bool:
    """Whether a test needs the PostgreSQL server: it uses pg_server (itself or through another fixture), it is a
    store test's "postgresql" case, or it asks new_store for stores without being pinned to SQLite."""
    if "pg_server" in getattr(item, "fixturenames", ()):
        return True
    callspec = getattr(item, "callspec", None)
    stores = {v for v in (callspec.params.values() if callspec is not None else ()) if isinstance(v, str)}
    if "postgresql" in stores:
        return True
    return "new_store" in getattr(item, "fixturenames", ()) and "sqlite" not in stores


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The `postgres` marker (`make test-fast` leaves those tests out), from the fixtures a test uses, so that a new
    store test is classified without anyone remembering to mark it."""
    for item in items:
        if reaches_postgres(item):
            item.add_marker(pytest.mark.postgres)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    """A real PostgreSQL server for the whole session (tests/stores.py), started on first use and removed
    afterwards. Under CI it must start: a failure there fails every test that needs it, never skips."""
    try:
        server = start_postgres()
    except PostgresUnavailable as exc:
        if on_ci():
            pytest.fail(f"PostgreSQL did not start under CI: {exc}", pytrace=False)
        pytest.skip(f"PostgreSQL did not start here: {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def new_store(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[str], str]:
    """store kind ("sqlite" or "postgresql") -> the URL of a new, empty database of that kind."""
    made = itertools.count()

    def new(kind: str) -> str:
        if kind == "sqlite":
            folder = tmp_path / f"store{next(made)}"
            folder.mkdir()
            return f"sqlite:///{folder / 'results.sqlite'}"
        return request.getfixturevalue("pg_server").new_database()

    return new


@pytest.fixture(params=STORES)
def db_url(request: pytest.FixtureRequest, new_store: Callable[[str], str]) -> str:
    """A new, empty results database on each store in turn: the store tests run against both."""
    return new_store(request.param)
