"""Does the runner's concurrency deliver? Wall time of `run_main` with a fake LLM of fixed latency.

Every LLM call (PtR's stub call, both planners' calls) sleeps L seconds, so N calls on C workers
cannot finish faster than N*L/C. The runner should stay within 1.25x of that bound: anything more
is overhead of ours (retrieval, scoring, commits, scheduling tails).

    .venv/bin/python benchmarks/bench_runner.py [--queries 128] [--latency 0.05] [--concurrency 1,8,32]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.retrieval.memo import memoised
from core.settings import Settings
from core.study.catalog import BenchContext
from core.study.main_study import run_main
from core.agents.factory import Agents
from core.agents.llm import LLMResponse, Usage
from core.agents.planner import LLMPlanner
from core.agents.prompts import DISCOVERY_SCHEMA
from core.store.store import Store
from core.agents.stubs import LLMStubWriter
from core.data.toolbench import Query
from benchmarks.fakes import QUERY_SPECS, make_retriever

TARGET_RATIO = 1.25


class FixedLatencyLLM:
    """Implements core.agents.llm's LLMClient: sleeps `latency_s`, then answers valid JSON for either prompt."""

    backend = "fake"
    model = "fixed-latency"

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s

    def generate(self, prompt: str, *, schema: dict | None = None, temperature: float = 0.0) -> LLMResponse:
        time.sleep(self.latency_s)
        if schema is DISCOVERY_SCHEMA:
            text = json.dumps({"stubs": [{"name": "search_hotels", "reasoning": "hotels in a city"},
                                         {"name": "get_exchange_rate", "reasoning": "currency rates"}]})
        else:
            first = next((line.split(". ", 1)[1].split(":")[0] for line in prompt.splitlines()
                          if line[:1].isdigit() and ". " in line), "")
            text = json.dumps({"selected_apis": [first] if first else [], "steps": ["call it"], "refusal": None})
        return LLMResponse(text, Usage(50, 10, 0), self.latency_s, self.backend, self.model)


def make_queries(n: int) -> list[Query]:
    """n queries cycling over the tiny test specs, with distinct ids."""
    return [Query(subset, subset[:2], 1000 + i, text, relevant, api_list)
            for i, (subset, text, relevant, api_list) in
            ((i, QUERY_SPECS[i % len(QUERY_SPECS)]) for i in range(n))]


def measure(n_queries: int, latency_s: float, concurrency: int) -> dict:
    retriever = memoised(make_retriever())
    client = FixedLatencyLLM(latency_s)
    factory = lambda run_index: Agents(LLMStubWriter(client), LLMPlanner(client, retriever.registry.get))  # noqa: E731
    queries = make_queries(n_queries)
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(f"sqlite:///{Path(tmp) / 'bench.sqlite'}")
        start = time.perf_counter()
        run_main(BenchContext(store, retriever, queries, Settings(), "bench"), runs=1, concurrency=concurrency,
                 agents_for=factory)
        wall = time.perf_counter() - start
        rows = sum(store.count_results(r.id) for r in store.runs())
        store.close()
    calls = 3 * n_queries  # RtP: planner; PtR: stubs + planner
    ideal = calls * latency_s / concurrency
    return {"concurrency": concurrency, "queries": n_queries, "llm_calls": calls, "latency_s": latency_s,
            "rows": rows, "ideal_s": ideal, "wall_s": wall, "ratio": wall / ideal, "ok": wall / ideal <= TARGET_RATIO,
            "load_1min": os.getloadavg()[0]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=128)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per fake LLM call")
    parser.add_argument("--concurrency", default="1,8,32")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = [measure(args.queries, args.latency, int(c)) for c in args.concurrency.split(",")]
    if args.json:
        print(json.dumps(results, indent=1))
    else:
        print(f"{'C':>4} {'calls':>6} {'L (s)':>6} {'N*L/C (s)':>10} {'wall (s)':>9} {'ratio':>6}  <= {TARGET_RATIO}"
              f"  load")
        for r in results:
            print(f"{r['concurrency']:>4} {r['llm_calls']:>6} {r['latency_s']:>6.3f} {r['ideal_s']:>10.3f} "
                  f"{r['wall_s']:>9.3f} {r['ratio']:>6.3f}  {'ok' if r['ok'] else 'SLOW':<6}{r['load_1min']:.2f}")
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
