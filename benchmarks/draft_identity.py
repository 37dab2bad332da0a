"""Exact speculative decoding, checked and timed (issue 34): each reply with prompt-lookup drafts against plain greedy
decoding, byte for byte, per installed local model.

    nice -n 10 .venv/bin/python benchmarks/draft_identity.py [--model NAME|all] [--stubs 60] [--plans 60] [--json]

The stub prompts of the first `--stubs` test queries (the 1,100 in subset order) and the plan prompts of the first
`--plans` over their RtP top 5, exactly as the stub writer and the planner build them (the model's prompt style and
schema), each answered by one client per decoder (the same file and threads; standard or flash attention, with or
without prompt-lookup drafts), with no call cache. Reports per model, prompt kind and decoder: the replies identical
to its base's (drafts against the same attention without them, flash against the stored decoder), where they part,
output tokens/s over the same prompts, the speed-up, and the share of drafted tokens kept.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.agents.factory import make_agents
from core.agents.llm.local_llama import LocalLlamaClient
from core.agents.llm.local_model import installed_models, resolve_local_model
from core.data.loaders import queries_for
from core.local_models import LOCAL_MODELS
from core.retrieval.archs import arch
from core.retrieval.assemble import build_retriever
from core.settings import Settings


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


@dataclass(frozen=True)
class Decoder:
    """One way of decoding the same file: flash attention or not, and how many tokens are drafted at a time."""
    flash: bool
    draft: int

    @property
    def name(self) -> str:
        return ("flash" if self.flash else "standard") + (f"+drafts-{self.draft}" if self.draft else "")

    @property
    def base(self) -> Decoder:
        """What this decoder must equal byte for byte: its attention without drafts; the stored decoder's for that."""
        return Decoder(self.flash, 0) if self.draft else STORED


STORED = Decoder(False, 0)  # the decoder every stored reply and the call cache come from


def parse(text: str) -> Decoder:
    attention, _, drafts = text.partition("+drafts-")
    if attention not in ("standard", "flash"):
        raise argparse.ArgumentTypeError(f"{text}: standard or flash, then optionally +drafts-N")
    return Decoder(attention == "flash", int(drafts or 0))


def compare(clients: dict[Decoder, LocalLlamaClient], pairs: list[tuple[str, dict]]) -> dict:
    """Every decoder's replies, tokens/s and drafts kept, each checked against its base's replies."""
    replies: dict[Decoder, list[str]] = {d: [] for d in clients}
    tokens, seconds = dict.fromkeys(clients, 0), dict.fromkeys(clients, 0.0)
    counts = {d: (sum(i.drafted for i in c._ensure_loaded()), sum(i.accepted for i in c._ensure_loaded()))
              for d, c in clients.items()}
    for prompt, schema in pairs:
        for decoder, client in clients.items():  # one prompt through every decoder in turn: the load is shared
            start = time.perf_counter()
            reply = client.generate(prompt, schema=schema)
            seconds[decoder] += time.perf_counter() - start
            tokens[decoder] += reply.usage.output_tokens
            replies[decoder].append(reply.text)
    report = {}
    for decoder, client in clients.items():
        offered = sum(i.drafted for i in client._ensure_loaded()) - counts[decoder][0]
        kept = sum(i.accepted for i in client._ensure_loaded()) - counts[decoder][1]
        row = {"tok_s": round(tokens[decoder] / seconds[decoder], 1) if seconds[decoder] else None,
               "output_tokens": tokens[decoder], "seconds": round(seconds[decoder], 2)}
        if offered:
            row.update(drafted_tokens=offered, accepted_share=round(kept / offered, 3))
        if decoder != STORED and decoder.base in replies:
            base = replies[decoder.base]
            row["against"] = decoder.base.name
            row["identical"] = sum(a == b for a, b in zip(replies[decoder], base))
            row["mismatches"] = [_parting(number, base[number], mine) for number, mine in enumerate(replies[decoder])
                                 if mine != base[number]][:3]
            row["speedup"] = round(seconds[decoder.base] / seconds[decoder], 2) if seconds[decoder] else None
        report[decoder.name] = row
    return {"prompts": len(pairs), "decoders": report}


def _parting(number: int, base: str, mine: str) -> dict:
    """Where two replies part, with 40 characters either side."""
    at = next((i for i, (a, b) in enumerate(zip(base, mine)) if a != b), min(len(base), len(mine)))
    return {"prompt": number, "at_char": at, "base": base[max(0, at - 40):at + 40],
            "this": mine[max(0, at - 40):at + 40]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="all")
    parser.add_argument("--stubs", type=int, default=60)
    parser.add_argument("--plans", type=int, default=60)
    parser.add_argument("--decoders", type=lambda text: [parse(t) for t in text.split(",")],
                        default=[STORED, Decoder(False, 2), Decoder(True, 0), Decoder(True, 2)],
                        help="comma-separated: standard|flash[+drafts-N] (default standard,standard+drafts-2,"
                             "flash,flash+drafts-2); each is checked against its base, which is added if missing")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    decoders = list(dict.fromkeys([*(d.base for d in args.decoders), *args.decoders]))
    base = Settings.from_env().with_(llm_backend="local", registry="full")
    names = [s.name for s in installed_models(base.cache_dir)] if args.model == "all" else [args.model]
    retriever, _ = build_retriever(base)
    report: dict = {"cores": os.cpu_count(), "load_before": round(os.getloadavg()[0], 2), "models": {}}
    for name in names:
        settings = base.with_(local_model=name, llm_model=name)
        model = resolve_local_model(name, settings.cache_dir)
        clients = {d: LocalLlamaClient(model, timeout_s=600, n_threads=settings.local_threads, instances=1,
                                       draft=d.draft, flash=d.flash).load() for d in decoders}
        report["models"][LOCAL_MODELS[name].label] = {
            kind: compare(clients, pairs) for kind, pairs in prompts(settings, retriever, args.stubs,
                                                                     args.plans).items()}
        del clients  # the next model's instances load with these freed
    report["load_after"] = round(os.getloadavg()[0], 2)
    print(json.dumps(report) if args.json else json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
