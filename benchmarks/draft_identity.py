"""Exact speculative decoding, checked and timed (issue 34): each reply with prompt-lookup drafts against plain greedy
decoding, byte for byte, per installed local model.

    nice -n 10 .venv/bin/python benchmarks/draft_identity.py [--model NAME|all] [--stubs 60] [--plans 60] [--json]

The stub prompts of the first `--stubs` test queries (the 1,100 in subset order) and the plan prompts of the first
`--plans` over their RtP top 5, exactly as the stub writer and the planner build them (the model's prompt style and
schema), each answered by two clients of the same file and threads, one plain and one drafting (LOCAL_DRAFT=lookup),
with no call cache. Reports per model and prompt kind: replies identical, the first mismatches (where they part),
output tokens/s of each decoder over the same replies, the speed-up, and the share of drafted tokens kept.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.agents.factory import make_agents  # noqa: E402
from core.agents.llm.local_llama import LocalLlamaClient  # noqa: E402
from core.agents.llm.local_model import installed_models, resolve_local_model  # noqa: E402
from core.data.loaders import queries_for  # noqa: E402
from core.local_models import LOCAL_MODELS  # noqa: E402
from core.retrieval.archs import arch  # noqa: E402
from core.retrieval.assemble import build_retriever  # noqa: E402
from core.settings import Settings  # noqa: E402


def prompts(settings: Settings, retriever, n_stubs: int, n_plans: int) -> dict[str, list[tuple[str, dict]]]:
    """(prompt, schema) pairs as the local backend's stub writer and planner send them."""
    agents = make_agents(settings, retriever, use_cache=False)
    writer, planner = agents.stub_writer, agents.planner
    queries = queries_for(settings)
    stubs = [(writer.style.discovery(q.query), writer.style.discovery_schema()) for q in queries[:n_stubs]]
    plans = []
    for q in queries[:n_plans]:
        hits = arch("rtp").retrieve(q.query, None, 5, retriever).hits
        apis = [(h.display_name, getattr(planner.lookup(h.key), "description", "")) for h in hits]
        plans.append((planner.style.planner(q.query, apis), planner.style.planner_schema([n for n, _ in apis])))
    return {"stub": stubs, "plan": plans}


def compare(plain: LocalLlamaClient, drafted: LocalLlamaClient, pairs: list[tuple[str, dict]]) -> dict:
    same, mismatches, tokens, seconds = 0, [], {"plain": 0, "drafted": 0}, {"plain": 0.0, "drafted": 0.0}
    before = [sum(i.drafted for i in drafted._ensure_loaded()), sum(i.accepted for i in drafted._ensure_loaded())]
    for number, (prompt, schema) in enumerate(pairs):
        replies = {}
        for name, client in (("plain", plain), ("drafted", drafted)):
            start = time.perf_counter()
            reply = client.generate(prompt, schema=schema)
            seconds[name] += time.perf_counter() - start
            tokens[name] += reply.usage.output_tokens
            replies[name] = reply.text
        if replies["plain"] == replies["drafted"]:
            same += 1
        elif len(mismatches) < 5:
            at = next((i for i, (a, b) in enumerate(zip(replies["plain"], replies["drafted"])) if a != b),
                      min(len(replies["plain"]), len(replies["drafted"])))
            mismatches.append({"prompt": number, "at_char": at, "plain": replies["plain"][max(0, at - 40):at + 40],
                               "drafted": replies["drafted"][max(0, at - 40):at + 40]})
    offered = sum(i.drafted for i in drafted._ensure_loaded()) - before[0]
    kept = sum(i.accepted for i in drafted._ensure_loaded()) - before[1]
    rate = {name: round(tokens[name] / seconds[name], 1) if seconds[name] else None for name in tokens}
    return {"prompts": len(pairs), "identical": same, "mismatches": mismatches, "output_tokens": tokens["plain"],
            "tok_s": rate, "speedup": round(seconds["plain"] / seconds["drafted"], 2) if seconds["drafted"] else None,
            "drafted_tokens": offered, "accepted_share": round(kept / offered, 3) if offered else None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="all")
    parser.add_argument("--stubs", type=int, default=60)
    parser.add_argument("--plans", type=int, default=60)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    base = Settings.from_env().with_(llm_backend="local", registry="full")
    names = [s.name for s in installed_models(base.cache_dir)] if args.model == "all" else [args.model]
    retriever, _ = build_retriever(base)
    report: dict = {"cores": os.cpu_count(), "load_before": round(os.getloadavg()[0], 2), "models": {}}
    for name in names:
        settings = base.with_(local_model=name, llm_model=name)
        model = resolve_local_model(name, settings.cache_dir)
        plain = LocalLlamaClient(model, timeout_s=600, n_threads=settings.local_threads, instances=1).load()
        drafted = LocalLlamaClient(model, timeout_s=600, n_threads=settings.local_threads, instances=1,
                                   draft=True).load()
        report["models"][LOCAL_MODELS[name].label] = {
            kind: compare(plain, drafted, pairs) for kind, pairs in prompts(settings, retriever, args.stubs,
                                                                              args.plans).items()}
    report["load_after"] = round(os.getloadavg()[0], 2)
    print(json.dumps(report) if args.json else json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
