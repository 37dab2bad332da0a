"""Shared test helpers: the fakes and tiny data the test modules (and their subprocesses) build on.

Test modules import these from here (fixtures live in conftest.py, the fake LLM servers in
fake_llm_servers.py, the PostgreSQL server and the store look-ups in stores.py), never from one
another. benchmarks/ imports nothing from tests/; the tests reuse its fake encoder and ten APIs
(benchmarks/fakes.py).
"""
from __future__ import annotations

import gzip
import json
import math
import os
import shutil
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import select

from benchmarks.app_load import CHROMIUM_ARGS, free_port  # noqa: F401 - re-exported: the benchmarks' own
from benchmarks.fakes import APIS as BENCHMARK_APIS
from benchmarks.fakes import CV, FP, FX, HD, IP, JC, JK, QUERY_SPECS, WX, BagOfWordsEncoder, H  # noqa: F401 - re-exported
from core.agents.factory import Agents
from core.agents.llm import Usage
from core.agents.llm.local_model import LocalModelError, llama_cpp_module
from core.agents.planner import Plan
from core.agents.stubs import StubOutcome
from core.analysis.reader import ResultsReader
from core.data.registry import Registry
from core.data.toolbench import GOLD_DEFINITIONS, Api, Query
from core.retrieval.archs import Arch, WrittenStubs, arch, the_query
from core.retrieval.discovery import Discovery, Hit, Retriever, Stub, clean_query
from core.retrieval.index import VectorIndex
from core.retrieval.memo import memoised
from core.settings import PROJECT_ROOT, Settings
from core.study.catalog import BenchContext
from core.study.hybrid import run_hybrid
from core.study.ksweep import run_ksweep
from core.study.main_study import run_main
from core.evaluation.run_means import RUN_MEANS, trajectory_means
from core.study.scaling import run_scaling
from core.store.engine import make_engine
from core.store.schema import QueryResult
from core.store.store import Store


# ------------------------------------------------------------------ a fake encoder and tiny data

class FakeEncoder(BagOfWordsEncoder):
    """The benchmarks' hashed bag of words (texts sharing words get similar unit vectors; deterministic,
    instant) that counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, progress=None) -> np.ndarray:
        self.calls += 1
        return super().encode(texts, batch_size=batch_size, progress=progress)


SMALL_APIS = BENCHMARK_APIS


TINY_QUERIES = (
    {"subset": "G1_instruction", "group": "G1", "query_id": 1, "query": "Find hotels in Paris with prices",
     "relevant_apis": [["Hotels", "search hotels"]],
     "api_list": [["Hotels", "search hotels"], ["Hotels", "hotel details"]]},
    {"subset": "G2_instruction", "group": "G2", "query_id": 2,
     "query": "Find hotels in London, check the currency exchange rate and look up my IP address.",
     "relevant_apis": [["Hotels", "search hotels"], ["Currency", "exchange rate"], ["IP Lookup", "ip info"]],
     "api_list": [["Hotels", "search hotels"], ["Currency", "exchange rate"], ["IP Lookup", "ip info"]]},
)


def write_compact_data(folder: Path, apis: Sequence[Api], query_rows: Sequence[dict]) -> Path:
    """A compact-format data directory the tests make themselves: both registries (registry_full.jsonl.gz and
    registry.jsonl.gz, the same bytes: "full" is refused without its own file) and queries.jsonl.gz."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = "".join(json.dumps({"category": api.category, "tool_name": api.tool_name, "api_name": api.api_name,
                               "description": api.description, "doc_source": api.doc_source}) + "\n" for api in apis)
    registry = gzip.compress(rows.encode("utf-8"))
    for name in ("registry_full.jsonl.gz", "registry.jsonl.gz"):
        (folder / name).write_bytes(registry)
    with gzip.open(folder / "queries.jsonl.gz", "wt", encoding="utf-8") as fh:
        for row in query_rows:
            fh.write(json.dumps(row) + "\n")
    return folder


def write_tiny_data(folder: Path) -> Path:
    """Tiny data small enough for the real model."""
    return write_compact_data(folder, SMALL_APIS, TINY_QUERIES)


def write_official_layout(root: Path) -> None:
    tools = root / "toolenv" / "tools"
    (tools / "Travel").mkdir(parents=True)
    (tools / "Finance").mkdir(parents=True)
    (tools / "Travel" / "hotels.json").write_text(json.dumps({
        "tool_name": " Hotels", "api_list": [
            {"name": "search", "description": "Find hotels"},
            {"name": "details", "description": None}]}))
    (tools / "Finance" / "fx.json").write_text(json.dumps({
        "tool_name": "FX", "api_list": [{"name": "rate", "description": "Exchange rate"}]}))
    (tools / "Finance" / "broken.json").write_text("{not json")
    tests = root / "test_instruction"
    tests.mkdir()
    (tests / "G2_instruction.json").write_text(json.dumps([{
        "query_id": 7, "query": "Find a hotel and the rate",
        "api_list": [{"tool_name": " Hotels", "api_name": "search"}, {"tool_name": "FX", "api_name": "rate"}],
        "relevant APIs": [[" Hotels", "search"], ["FX", "rate"]]}]))


# ------------------------------------------------- the runner's fakes: queries, retriever, agents

FT = ("Football", "transfers")


def make_queries(n: int | None = None) -> list[Query]:
    """Tiny ToolBench-like queries: 6 single-tool (G1) and 6 two-tool (G2) requests over SMALL_APIS."""
    out = []
    for i, (subset, text, relevant, api_list) in enumerate(QUERY_SPECS):
        out.append(Query(subset, subset[:2], 100 + i, text, relevant, api_list))
    return out if n is None else [q for s in ("G1_instruction", "G2_instruction")
                                  for q in [q for q in out if q.subset == s][:n]]


# A throwaway architecture (tests/test_archs.py, tests/test_app_pages.py): RtP searching 2k deep and keeping the
# top k, declared with no other edit.
WIDE = Arch("rtp@2k", "RtP@2k", "RtP@2k · 2k retrieved, top k kept", "#000000", the_query, depth=lambda k: 2 * k,
            in_ksweep=True, beyond_paper=True, caption="RtP's query searched twice as deep.")


def rtp_of(query: str, k: int, retriever: Retriever) -> Discovery:
    """RtP's declared retrieval for one query, cleaned as the query path cleans it."""
    return arch("rtp").retrieve(clean_query(query), None, k, retriever)


def ptr_of(stubs: Sequence[Stub], k: int, retriever: Retriever) -> Discovery:
    """PtR's declared retrieval of given stubs."""
    return arch("ptr").retrieve("", WrittenStubs(tuple(stubs)), k, retriever)


def hybrid_of(query: str, stubs: Sequence[Stub], k: int, retriever: Retriever, fallback: bool = False) -> Discovery:
    """The hybrid's declared retrieval: the cleaned query plus the stubs (none searched after a fallback)."""
    return arch("hybrid").retrieve(clean_query(query), WrittenStubs(tuple(stubs), fallback), k, retriever)


def make_retriever() -> Retriever:
    registry = Registry("small", SMALL_APIS)
    encoder = FakeEncoder()
    return Retriever(registry, encoder, VectorIndex(encoder.encode(registry.documents)))


class FakeStubWriter:
    """Splits at ' and '; from run 1 on adds a run-dependent stub so PtR's runs differ. Optional delay."""

    backend = "fake"
    model = "fake-llm-1"
    prompt_version = "fake-stubs-v1"

    def __init__(self, run_index: int = 0, delay_s: float = 0.0) -> None:
        self.run_index = run_index
        self.delay_s = delay_s
        self.calls = 0

    def write(self, query: str) -> StubOutcome:
        self.calls += 1
        if self.delay_s:
            time.sleep(self.delay_s)
        parts = [p.strip() for p in query.split(" and ") if p.strip()]
        stubs = [Stub("_".join(p.lower().split()[:3]), p) for p in parts]
        if self.run_index % 2:
            stubs.append(Stub("get_random_joke", "a random joke"))
        return StubOutcome(tuple(stubs), self.backend, self.model, self.prompt_version, Usage(30, 12, 4), 0.01)


class FakePlanner:
    """Selects the retrieved APIs scoring at least 0.3 (at most two); refuses when none does."""

    backend = "fake"
    model = "fake-llm-1"
    prompt_version = "fake-planner-v1"

    def __init__(self) -> None:
        self.calls = 0

    def plan(self, query: str, hits: Sequence[Hit]) -> Plan:
        self.calls += 1
        chosen = [h for h in hits if h.score >= 0.3][:2]
        refusal = None if chosen else "nothing fits"
        return Plan(tuple(h.display_name for h in chosen), tuple(h.key for h in chosen),
                    tuple(f"call {h.display_name}" for h in chosen), refusal, len(hits), self.backend, self.model,
                    self.prompt_version, Usage(100, 20, 0), 0.02)


def fake_agents(delay_s: float = 0.0):
    """A factory run_index -> Agents; the created agents are kept on the factory for assertions."""
    made: dict[int, Agents] = {}

    def factory(run_index: int) -> Agents:
        made[run_index] = Agents(FakeStubWriter(run_index, delay_s), FakePlanner())
        return made[run_index]

    factory.made = made  # type: ignore[attr-defined]
    return factory


def bench_context(store: Store, retriever: Retriever, queries: Sequence[Query], commit: str = "test",
                  **overrides: Any) -> BenchContext:
    """What `bench` hands a study's runner, for a test: the default (offline) settings unless given, and the
    studies built on the main runs read the latest main study of any backend (the fake agents' is no real one)."""
    return BenchContext(**{"store": store, "retriever": retriever, "queries": queries, "settings": Settings(),
                           "commit": commit, "any_backend": True, **overrides})


def run_study(url: str, runs: int = 2, ks=(1, 3, 5), sizes=(4, 7, None), seeds: int = 2,
              concurrency: int = 4) -> tuple[Store, Retriever, list[Query]]:
    """main + ksweep + scaling into `url` on the tiny data."""
    store = Store(url)
    retriever = memoised(make_retriever())
    queries = make_queries()
    context = bench_context(store, retriever, queries, commit="abc123")
    run_main(context, runs=runs, k=5, concurrency=concurrency, agents_for=fake_agents())
    run_ksweep(context, ks=ks)
    run_scaling(context, sizes=sizes, seeds=seeds, k=5)
    return store, retriever, queries


# --------------------------------------------------------------------------- the local model, ports

MODEL_CACHE = PROJECT_ROOT / "data" / "cache"  # where `make llm` assembled the model


def llama_built() -> bool:
    try:
        llama_cpp_module()
    except LocalModelError:
        return False
    return True


def needs_llama(skip: bool, reason: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """For a test that runs a real model through llama.cpp: marks it `llm` (`make test-fast` leaves it out) and
    skips it where `skip` (llama.cpp or the model missing here, outside CI)."""
    def mark(test: Callable[..., Any]) -> Callable[..., Any]:
        return pytest.mark.llm(pytest.mark.skipif(skip, reason=reason)(test))
    return mark


def chromium() -> str:
    """Debian's Chromium for the browser tests: a skip where it is missing, a failure under CI, which needs it."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("CI needs Chromium for the browser test (apt-get install chromium)")
        pytest.skip("Chromium is not installed")
    return path


# ---------------------------------------------------------------- the dashboard's test data (AppTest and the browser)

APP = PROJECT_ROOT / "app.py"
TIMEOUT_S = 60
EVIL_DESCRIPTION = "<script>alert(1)</script> ![pwn](http://evil.example/x.png) **bold** :red[red]"
APIS = (*SMALL_APIS, Api("Evil Widget", "render page", "Data", EVIL_DESCRIPTION))
QUERIES = (
    Query("G1_instruction", "G1", 1, "Find hotels in Paris with prices", (H,), (H, HD)),
    Query("G1_instruction", "G1", 2, "Tell me a random joke", (JK,), (JK,)),
    Query("G1_instruction", "G1", 3, "Weather forecast for Berlin", (WX,), (WX,)),
    Query("G2_instruction", "G2", 4, "Find hotels in London and check the currency exchange rate", (H, FX), (H, FX)),
    Query("G2_instruction", "G2", 5, "Tell me a random joke and the weather forecast for Rome", (JK, WX), (JK, WX)),
    Query("G2_instruction", "G2", 6, "Look up my IP address and convert 20 dollars", (IP, CV), (IP, CV)),
)
MAIN_K = 3


def write_data(folder: Path) -> Path:
    return write_compact_data(folder, APIS, [
        {"subset": q.subset, "group": q.group, "query_id": q.query_id, "query": q.query,
         "relevant_apis": q.relevant_apis, "api_list": q.api_list} for q in QUERIES])


def build_app_env(folder: Path) -> dict[str, str]:
    """Tiny data + a filled results database + a private cache; returns the environment to run the app with."""
    env = {"TOOLBENCH_DATA": str(write_data(folder / "toolbench")), "CACHE_DIR": str(folder / "cache"),
           "LLM_BACKEND": "offline", "DATABASE_URL": f"sqlite:///{folder / 'results.sqlite'}", "REGISTRY": "full",
           "INDEX_DIR": str(folder / "index")}
    encoder = FakeEncoder()
    registry = Registry("full", APIS)
    retriever = Retriever(registry, encoder, VectorIndex(encoder.encode(registry.documents)))
    store = Store(env["DATABASE_URL"])
    context = bench_context(store, retriever, QUERIES, settings=Settings.from_env(env=env))
    run_main(context, runs=2, k=MAIN_K)
    run_ksweep(context, ks=(1, MAIN_K, 5))
    run_hybrid(context)
    run_scaling(context, sizes=(6, None), seeds=2, k=MAIN_K)
    store.close()
    return env


SCRUBBED = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "LLM_MODEL", "EMBEDDING_MODEL")


# ---------------------------------------------------------------- run means in Python, as declared

def run_means(rows: pd.DataFrame, names: Sequence[str], by: Sequence[str] = ("subset", "arch"),
              gold: str | None = None) -> pd.DataFrame:
    """The declared run means `names` (core.evaluation.run_means; with `gold`, its trajectory means too) of per-query
    rows, computed in Python: shaped like the reader's per-run frame from SQL (by + run_index + names + n)."""
    declared = {**RUN_MEANS, **(trajectory_means(gold) if gold else {})}
    keys = [*by, "run_index"]
    out = [{**dict(zip(keys, key)), **{name: declared[name].mean(part.to_dict("records")) for name in names},
            "n": len(part)} for key, part in rows.groupby(keys, sort=True)]
    return pd.DataFrame(out, columns=[*keys, *names, "n"])


def run_means_both_ways(url: str) -> tuple[list[str], set[str]]:
    """Every declared run mean (core.evaluation.run_means, under each gold definition) of every run in the store at
    `url`, from the reader's SQL and from the declaration's Python over the stored rows: where the two differ
    (not the same bits, or only one defined), and the names some run defines."""
    reader = ResultsReader(url)
    engine = make_engine(url, writer=False)
    with engine.connect() as conn:
        stored = conn.execute(select(QueryResult.__table__).where(QueryResult.error.is_(None))).mappings().all()
    engine.dispose()
    rows: dict[int, list[Mapping]] = defaultdict(list)
    for row in stored:
        rows[row["run_id"]].append(row)
    differ: list[str] = []
    defined: set[str] = set()
    for gold in GOLD_DEFINITIONS:
        declared = {**RUN_MEANS, **trajectory_means(gold)}
        for run in reader._per_run(reader.runs(), gold).to_dict("records"):
            for name, mean in declared.items():
                in_sql, in_python = run[name], mean.mean(rows[run["run_id"]])
                if math.isnan(in_sql) and math.isnan(in_python):
                    continue
                if in_sql != in_python:
                    differ.append(f"run {run['run_id']}, {name} under {gold}: SQL {in_sql!r}, Python {in_python!r}")
                defined.add(name)
    return differ, defined
