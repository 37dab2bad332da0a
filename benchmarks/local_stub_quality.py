"""What the local model's stubs are worth, on a stratified sample: the numbers used to tune its prompt.

    .venv/bin/python benchmarks/local_stub_quality.py [--per-subset 10] [--json]

For the first N queries of every subset, stubs are written by the local backend (LLM_BACKEND=local,
no call cache) and by the offline heuristic, and PtR's recall@5 (api_list gold, full registry) is
compared with RtP's. Also reported: stubs per query, the share of queries where a stub copies a
few-shot example's name that shares no word with the query (an "example leak", e.g. translate_text
for a hotel request), and seconds per stub list.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.retrieval.archs import arch, discover
from core.study.evaluate import aggregate, score_query
from core.agents.factory import make_agents
from core.retrieval.assemble import build_retriever
from core.data.loaders import queries_for
from core.agents.prompts import STYLES
from core.settings import Settings
from core.agents.stubs import OfflineStubWriter
from core.data.toolbench import subset_order

EXAMPLE_NAMES = frozenset(re.findall(r'"name": "([a-z_]+)"', STYLES["completion"].discovery_template.template))


def leaks(names: list[str], query: str) -> bool:
    """A stub copies an example's name though no word of that name (4+ letters) is in the query."""
    text = query.lower()
    return any(n in EXAMPLE_NAMES and not any(w in text for w in n.split("_") if len(w) >= 4) for n in names)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-subset", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    settings = Settings.from_env().with_(llm_backend="local", registry="full")
    retriever, _ = build_retriever(settings)
    writer = make_agents(settings, retriever, use_cache=False).stub_writer
    offline = OfflineStubWriter()
    queries = [q for s in subset_order({q.subset for q in queries_for(settings)})
               for q in queries_for(settings, s)[:args.per_subset]]
    outcomes, seconds = [], []
    for q in queries:
        t0 = time.perf_counter()
        outcomes.append(writer.write(q.query))
        seconds.append(time.perf_counter() - t0)
    ptr = arch("ptr")
    local = discover(ptr, [q.query for q in queries], outcomes, [5], retriever)[5]
    heuristic = discover(ptr, [q.query for q in queries], [offline.write(q.query) for q in queries], [5], retriever)[5]
    rtp = discover(arch("rtp"), [q.query for q in queries], None, [5], retriever)[5]
    report: dict = {"model": writer.model, "prompt_version": writer.prompt_version, "queries": len(queries),
                    "subsets": {}}
    for subset in subset_order({q.subset for q in queries}):
        idx = [i for i, q in enumerate(queries) if q.subset == subset]

        def recall(found, idx=idx) -> float:  # idx bound: one subset's queries
            return aggregate([score_query(queries[i], found[i].keys, "api_list", 5) for i in idx])["recall"]

        report["subsets"][subset] = {
            "n": len(idx), "rtp": round(recall(rtp), 3), "ptr_local": round(recall(local), 3),
            "ptr_offline": round(recall(heuristic), 3),
            "stubs_per_query": round(statistics.fmean(len(outcomes[i].stubs) for i in idx), 2),
            "example_leak_share": round(statistics.fmean(
                leaks([s.name for s in outcomes[i].stubs], queries[i].query) for i in idx), 3),
            "fallbacks": sum(outcomes[i].fallback for i in idx)}
    report["seconds_per_stub_list"] = {"p50": round(statistics.median(seconds), 2),
                                       "p95": round(sorted(seconds)[int(0.95 * (len(seconds) - 1))], 2)}
    report["example_leak_share"] = round(statistics.fmean(
        leaks([s.name for s in o.stubs], q.query) for o, q in zip(outcomes, queries)), 3)
    print(json.dumps(report, indent=None if args.json else 1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
