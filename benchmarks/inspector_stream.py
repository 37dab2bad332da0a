"""The live Inspector's stage times per local model, warm, as the page gets them (core.study.one_query.run_query).

For each model (`--model NAME|all`, default: every installed one): load it and answer two warm-up queries, then
run `--queries` benchmark queries (the first of each instruction subset, in turn) with no call cache and report,
per stage, the median and worst seconds from the query's start: RtP's column, the first stub visible (its hits
searched), every stub and PtR's merged hits, PtR's whole column (its plan too), RtP's plan and both plans.
`--schedule all` runs each plan schedule (core.study.one_query.PLAN_SCHEDULES) on every query, interleaved. Goals
(issues 21 and 34, 2 cores, warm): RtP <= 1 s; first stub <= 4 s with the 1.5B; PtR column <= 6 s with the 0.5B
and <= 15 s with the 1.5B; both plans <= 20 s with the 1.5B. Prints the machine's load beside the figures: they
mean little on a busy machine.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.agents.llm.local_model import installed_models
from core.data.loaders import queries_for
from core.local_models import LOCAL_MODELS
from core.retrieval.assemble import build_retriever
from core.settings import Settings
from core.study.one_query import PLAN_SCHEDULES, Stage, plan_schedule, run_query, stage_label

SUBSETS = ("G1_instruction", "G2_instruction", "G3_instruction")
GOALS = {"rtp": 1.0, "first_stub": {"qwen2.5-coder-1.5b-instruct-q4_k_m": 4.0},
         "ptr_column": {"qwen2.5-coder-0.5b-instruct-q4_k_m": 6.0, "qwen2.5-coder-1.5b-instruct-q4_k_m": 15.0},
         "both_plans": {"qwen2.5-coder-1.5b-instruct-q4_k_m": 20.0}}


def stage_times(text: str, retriever, settings: Settings, schedule: str | None = None) -> dict[str, float]:
    seen: dict[str, float] = {}

    def emit(stage: Stage) -> None:
        label = stage_label(stage)
        if label is not None:
            seen.setdefault(label, stage.seconds)

    run_query(text, 5, retriever, settings, emit, use_cache=False, schedule=schedule)
    return {"rtp": seen["RtP hits"], "first_stub": seen.get("first stub", float("nan")),
            "ptr_hits": seen["stubs + PtR hits"], "ptr_column": seen["PtR plan"], "rtp_plan": seen["RtP plan"],
            "both_plans": max(seen["PtR plan"], seen["RtP plan"])}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="", help="a declared model, or all (default: every installed one)")
    parser.add_argument("--queries", type=int, default=6)
    parser.add_argument("--schedule", default="", choices=("", *PLAN_SCHEDULES, "all"),
                        help="when the plans run (core.study.one_query.PLAN_SCHEDULES; default: plan_schedule's); "
                             "all: each in turn, per query")
    args = parser.parse_args()
    base = Settings.from_env().with_(llm_backend="local", registry="full")
    names = ([s.name for s in installed_models(base.cache_dir)] if args.model in ("", "all") else [args.model])
    retriever, _ = build_retriever(base)
    by_subset = {s: queries_for(base, s) for s in SUBSETS}
    texts = [by_subset[SUBSETS[i % 3]][1 + i // 3].query for i in range(args.queries)]
    # Two warm-up queries: an instance keeps a prompt template's prefix once two of its prompts have shared it
    # (core.agents.llm.local_llama.KEPT_PREFIXES), as it has after a user's second query.
    warm = [by_subset["G1_instruction"][0].query, by_subset["G2_instruction"][0].query]
    report: dict = {"cpus": os.cpu_count(), "load_before": os.getloadavg()[0], "queries": len(texts), "models": {}}
    for name in names:
        settings = base.with_(local_model=name, llm_model=name)
        for text in warm:  # loads the model, then keeps the templates' prefixes
            stage_times(text, retriever, settings)
        schedules = PLAN_SCHEDULES if args.schedule == "all" else (args.schedule or plan_schedule(settings),)
        runs = {schedule: [] for schedule in schedules}
        for text in texts:  # the schedules interleaved per query, so a change of load falls on each alike
            for schedule in schedules:
                runs[schedule].append(stage_times(text, retriever, settings, schedule))
        goals = {stage: goal if isinstance(goal, float) else goal.get(name) for stage, goal in GOALS.items()}
        for schedule, done in runs.items():
            figures = {stage: {"p50_s": round(statistics.median(r[stage] for r in done), 2),
                               "max_s": round(max(r[stage] for r in done), 2)} for stage in done[0]}
            figures["goals_met"] = {stage: figures[stage]["p50_s"] <= goal for stage, goal in goals.items() if goal}
            report["models"].setdefault(LOCAL_MODELS[name].label, {})[schedule] = figures
    report["load_after"] = os.getloadavg()[0]
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
