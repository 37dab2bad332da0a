"""Shared fixtures: a deterministic fake encoder, small registries, and the real data when present."""
from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from core.retrieval.discovery import Retriever
from core.retrieval.index import VectorIndex
from core.data.registry import Registry
from core.settings import PROJECT_ROOT, Settings
from core.data.toolbench import Api

REPO_DATA = PROJECT_ROOT / "data" / "toolbench"  # committed: every clone has it


class FakeEncoder:
    """Hashed bag of words: texts sharing words get similar unit vectors. Deterministic, instant."""

    model_id = "fake-bow-64"
    dim = 64
    runtime = "fake"

    def __init__(self) -> None:
        self.calls = 0

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, progress=None) -> np.ndarray:
        self.calls += 1
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            words = re.findall(r"[a-z0-9]+", text.lower()) or ["<empty>"]
            for word in words:
                h = int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "little")
                out[i, h % self.dim] += 1.0 if (h >> 16) & 1 else -1.0
            norm = np.linalg.norm(out[i])
            out[i] = out[i] / norm if norm else np.eye(self.dim, dtype=np.float32)[0]
        if progress:
            progress(len(texts), len(texts))
        return out


SMALL_APIS = (
    Api("Hotels", "search hotels", "Travel", "Find hotels in a city with prices"),
    Api("Hotels", "hotel details", "Travel", "Details and reviews of one hotel"),
    Api("Currency", "exchange rate", "Finance", "Currency exchange rate between two currencies"),
    Api("Currency", "convert", "Finance", "Convert an amount from one currency to another"),
    Api("IP Lookup", "ip info", "Data", "Look up geolocation of an IP address"),
    Api(" Weather", "forecast", "Weather", "Weather forecast for a city"),
    Api("Jokes", "random joke", "Entertainment", "A random joke"),
    Api("Jokes", "joke by category", "Entertainment", "A joke from a category"),
    Api("Football", "player stats", "Sports", "Statistics of a football player"),
    Api("Football", "transfers", "", "Transfers of football players"),
)


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


TINY_QUERIES = (
    {"subset": "G1_instruction", "group": "G1", "query_id": 1, "query": "Find hotels in Paris with prices",
     "relevant_apis": [["Hotels", "search hotels"]], "api_list": [["Hotels", "search hotels"], ["Hotels", "hotel details"]]},
    {"subset": "G2_instruction", "group": "G2", "query_id": 2,
     "query": "Find hotels in London, check the currency exchange rate and look up my IP address.",
     "relevant_apis": [["Hotels", "search hotels"], ["Currency", "exchange rate"], ["IP Lookup", "ip info"]],
     "api_list": [["Hotels", "search hotels"], ["Currency", "exchange rate"], ["IP Lookup", "ip info"]]},
)


def write_compact_data(folder: Path, apis: Sequence[Api], query_rows: Sequence[dict]) -> Path:
    """A compact-format data directory (registry.jsonl.gz + queries.jsonl.gz) the tests make themselves."""
    import gzip
    import json

    folder.mkdir(parents=True, exist_ok=True)
    with gzip.open(folder / "registry.jsonl.gz", "wt", encoding="utf-8") as fh:
        for api in apis:
            fh.write(json.dumps({"category": api.category, "tool_name": api.tool_name, "api_name": api.api_name,
                                 "description": api.description, "doc_source": api.doc_source}) + "\n")
    with gzip.open(folder / "queries.jsonl.gz", "wt", encoding="utf-8") as fh:
        for row in query_rows:
            fh.write(json.dumps(row) + "\n")
    return folder


def write_tiny_data(folder: Path) -> Path:
    """Tiny data small enough for the real model."""
    return write_compact_data(folder, SMALL_APIS, TINY_QUERIES)


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
