"""How long one edited-stub retrieval takes on the full ToolBench registry, against RtP's retrieval of the query.

    nice -n 10 .venv/bin/python benchmarks/edited_stubs.py [--queries 20] [--rounds 5] [--k 5]

The Inspector's stub editor and `query --stubs` answer "what if the stubs had said X?" with
core.study.edited_stubs.search_edited: the stubs embedded and searched as PtR and the hybrid search a model's, no
LLM. For `--queries` benchmark queries (taken in turn from each instruction subset, those the offline heuristic
writes 1..4 stubs for), the heuristic's stubs have one stub rewritten (the edit), and each round times, query by
query in the same process, RtP's retrieval of the query (the baseline: one embedding, one search) and search_edited
of the edited stubs (PtR and the hybrid: each stub and the query embedded, every text searched). Nothing is
memoised between calls. Goal (issue 33): <= 150 ms per edited-stub retrieval on 2 cores. Prints the machine's load
and cores beside the figures: they mean little on a busy machine.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.agents.stubs import OfflineStubWriter
from core.data.loaders import queries_for
from core.retrieval.archs import baseline
from core.retrieval.assemble import build_retriever
from core.retrieval.discovery import clean_query
from core.retrieval.records import Stub
from core.settings import Settings
from core.study.edited_stubs import search_edited
from core.threads import one_blas_thread

SUBSETS = ("G1_instruction", "G2_instruction", "G3_instruction")
GOAL_MS = 150.0
MOST_STUBS = 4


def edited_cases(settings: Settings, n: int) -> list[tuple[str, tuple[Stub, ...]]]:
    """n queries with the heuristic's 1..MOST_STUBS stubs, the last stub rewritten as a researcher might."""
    writer = OfflineStubWriter()
    pools = [iter(queries_for(settings, subset)) for subset in SUBSETS]
    cases: list[tuple[str, tuple[Stub, ...]]] = []
    while len(cases) < n:
        query = next(pools[len(cases) % len(pools)]).query
        stubs = writer.write(query).stubs
        if 1 <= len(stubs) <= MOST_STUBS:
            last = stubs[-1]
            cases.append((query, (*stubs[:-1], Stub(f"{last.name}_by_id", f"{last.reasoning}, looked up by its id"))))
    return cases


def percentiles(samples: list[float]) -> dict[str, float]:
    cuts = statistics.quantiles(samples, n=20, method="inclusive")
    return {"p50_ms": round(statistics.median(samples), 1), "p95_ms": round(cuts[18], 1),
            "max_ms": round(max(samples), 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--k", type=int, default=5)
    args = parser.parse_args()
    one_blas_thread()  # as the CLI and the app run
    settings = Settings.from_env().with_(registry="full")
    load_before = os.getloadavg()
    started = time.perf_counter()
    retriever, info = build_retriever(settings)
    load_s = time.perf_counter() - started
    cases = edited_cases(settings, args.queries)
    rtp_arch = baseline()
    rtp_ms: list[float] = []
    edited_ms: list[float] = []
    for round_index in range(args.rounds + 1):  # round 0 warms the encoder and the index up, untimed
        for query, stubs in cases:
            t0 = time.perf_counter()
            rtp_arch.retrieve(clean_query(query), None, args.k, retriever)
            t1 = time.perf_counter()
            search_edited(query, stubs, args.k, retriever)
            t2 = time.perf_counter()
            if round_index:
                rtp_ms.append((t1 - t0) * 1000)
                edited_ms.append((t2 - t1) * 1000)
    rtp, edited = percentiles(rtp_ms), percentiles(edited_ms)
    report = {
        "registry": info.registry, "apis": info.size, "encoder": f"{info.model_id} ({info.runtime})",
        "index": info.index["kind"], "vectors": info.source,
        "retriever_load_s": round(load_s, 2), "cpus": os.cpu_count(), "load_before": [round(x, 2) for x in load_before],
        "queries": len(cases), "rounds": args.rounds, "k": args.k,
        "queries_by_stub_count": {n: sum(len(s) == n for _, s in cases) for n in range(1, MOST_STUBS + 1)},
        "rtp": rtp, "edited": edited,
        "ratio_p50": round(edited["p50_ms"] / rtp["p50_ms"], 2),
        "ratio_p95": round(edited["p95_ms"] / rtp["p95_ms"], 2),
        "goal_ms": GOAL_MS, "goal_met_p50": edited["p50_ms"] <= GOAL_MS, "goal_met_p95": edited["p95_ms"] <= GOAL_MS,
        "load_after": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
