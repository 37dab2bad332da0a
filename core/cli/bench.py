"""`python -m core bench {main,ksweep,scaling,hybrid,all}` and `python -m core report`, registered into core.cli.

bench writes into the results store (DATABASE_URL, default data/results.sqlite) with a progress bar
on stderr; `--resume` continues unfinished runs (after a crash or kill) without losing or
duplicating a row, and skips finished ones. report prints the study's tables beside the paper's.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable

from core.backends import BACKENDS
from core.settings import Settings
from core.data.toolbench import PAPER_SUBSETS, SUBSETS

STUDIES = ("main", "ksweep", "scaling", "hybrid", "all")


def parse_subsets(text: str) -> list[str]:
    if text.strip().lower() == "all":
        return list(SUBSETS)
    chosen = [s.strip() for s in text.split(",") if s.strip()]
    unknown = [s for s in chosen if s not in SUBSETS]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"--subsets takes 'all' or a comma list of {', '.join(SUBSETS)}; "
                                         f"unknown: {', '.join(unknown) or '(none given)'}")
    return list(dict.fromkeys(chosen))


def parse_sizes(text: str) -> list[int | None]:
    out: list[int | None] = []
    for part in (p.strip().lower() for p in text.split(",") if p.strip()):
        if part == "full":
            out.append(None)
            continue
        try:
            value = int(part.replace("k", "000"))
        except ValueError:
            raise argparse.ArgumentTypeError(f"--sizes takes integers or 'full', like 1000,5k,full; not {part!r}") from None
        if value < 1:
            raise argparse.ArgumentTypeError("--sizes must be positive")
        out.append(value)
    if not out:
        raise argparse.ArgumentTypeError("--sizes needs at least one size")
    return out


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("expected a positive integer")
    return value


def _add_bench_flags(p: argparse.ArgumentParser, study: str) -> None:
    from core.cli.common import add_common, parse_ks
    from core.study.main_study import DEFAULT_RUNS, MAIN_K
    from core.study.ksweep import KSWEEP_KS
    from core.study.scaling import SCALING_SEEDS, SCALING_SIZES

    p.add_argument("--subsets", type=parse_subsets, default=list(PAPER_SUBSETS),
                   help=f"comma list or 'all' (default: {','.join(PAPER_SUBSETS)})")
    p.add_argument("--limit", type=_positive, help="first N queries of each subset only (smoke tests)")
    p.add_argument("--resume", action="store_true",
                   help="continue unfinished runs of the same configuration and skip finished ones")
    p.add_argument("--db", help="results database URL (default: DATABASE_URL, else data/results.sqlite)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    if study in ("main", "scaling", "all"):
        p.add_argument("--k", type=_positive, default=MAIN_K, help=f"APIs retrieved (default {MAIN_K})")
    if study in ("main", "all"):
        p.add_argument("--runs", type=_positive, default=DEFAULT_RUNS, help=f"runs per architecture (default {DEFAULT_RUNS})")
        p.add_argument("--concurrency", type=_positive, default=8, help="LLM calls in flight (default 8)")
    if study in ("ksweep", "all"):
        p.add_argument("--ks", type=parse_ks, default=list(KSWEEP_KS),
                       help=f"k values of the sweep (default {','.join(map(str, KSWEEP_KS))})")
    if study in ("scaling", "all"):
        p.add_argument("--sizes", type=parse_sizes, default=list(SCALING_SIZES),
                       help="sub-registry sizes (default "
                            + ",".join("full" if s is None else str(s) for s in SCALING_SIZES) + ")")
        p.add_argument("--seeds", type=_positive, default=SCALING_SEEDS,
                       help=f"sampling seeds per size (default {SCALING_SEEDS}; the full registry runs once)")
    add_common(p, backend=True)


def llm_provenance(settings: Settings) -> dict:
    """{"llm": what the backend says of itself (a local model's file, sha256, quantisation, runtime,
    sampling)} for the run's config; {} for backends that have nothing beyond their name."""
    from core.agents.llm import make_client

    client = make_client(settings)
    describe = getattr(client, "provenance", None)
    return {"llm": describe()} if describe is not None else {}


def cmd_bench(args: argparse.Namespace, settings: Settings) -> int:
    from core.cli.common import retriever_for
    from core.agents.factory import agents_factory
    from core.retrieval.memo import memoised
    from core.study.hybrid import run_hybrid
    from core.study.ksweep import run_ksweep
    from core.study.main_study import run_main
    from core.study.scaling import run_scaling
    from core.data.loaders import queries_for
    from core.study.store import Store, git_commit

    study = args.study
    url = args.db or settings.results_url
    queries = [q for subset in args.subsets for q in queries_for(settings, subset)[: args.limit]]
    retriever, info = retriever_for(settings)
    retriever = memoised(retriever)
    store = Store(url)
    commit = git_commit()
    progress = not args.no_progress
    config = {"limit": args.limit, "use_cache": not args.no_cache, "subsets": args.subsets,
              "encoder_runtime": info.runtime, "temperature": 0.0, **llm_provenance(settings)}
    summary: dict = {"db": store.engine.url.render_as_string(hide_password=True), "registry": info.registry,
                     "registry_size": info.size, "backend": settings.llm_backend, "queries": len(queries)}
    phases: list[tuple[str, Callable[[], list[int]]]] = []
    if study in ("main", "all"):
        factory = agents_factory(settings, retriever, use_cache=not args.no_cache)
        phases.append(("main", lambda: run_main(store, retriever, factory, queries, runs=args.runs, k=args.k,
                                                concurrency=args.concurrency, resume=args.resume, progress=progress,
                                                commit=commit, config={**config, "concurrency": args.concurrency})))
    if study in ("ksweep", "all"):
        phases.append(("ksweep", lambda: run_ksweep(store, retriever, queries, ks=args.ks, resume=args.resume,
                                                    progress=progress, llm_backend=settings.llm_backend,
                                                    commit=commit, config=config)))
    if study in ("hybrid", "all"):
        phases.append(("hybrid", lambda: run_hybrid(store, retriever, queries, resume=args.resume, progress=progress,
                                                    llm_backend=settings.llm_backend, commit=commit, config=config)))
    if study in ("scaling", "all"):
        phases.append(("scaling", lambda: run_scaling(store, retriever, queries, sizes=args.sizes, seeds=args.seeds,
                                                      k=args.k, resume=args.resume, progress=progress,
                                                      llm_backend=settings.llm_backend, commit=commit, config=config)))
    try:
        for name, phase in phases:
            start = time.perf_counter()
            run_ids = phase()
            summary[name] = {"runs": len(run_ids), "seconds": round(time.perf_counter() - start, 2)}
            if not args.json:
                print(f"bench {name}: {len(run_ids)} run(s) written in {summary[name]['seconds']:.1f} s", file=sys.stderr)
    finally:
        store.close()
    print(json.dumps(summary) if args.json else
          f"results in {summary['db']} ({summary['queries']} queries, registry {info.registry} {info.size:,} APIs, "
          f"backend {settings.llm_backend}); see `python -m core report`")
    return 0


def cmd_report(args: argparse.Namespace, settings: Settings) -> int:
    from core.analysis.report import build_report, render_text
    from core.analysis.reader import ResultsReader

    reader = ResultsReader(args.db or settings.results_url)
    if not reader.available():
        print(f"error: {reader.status()['error'] or 'no complete run stored yet'}", file=sys.stderr)
        return 1
    report = build_report(reader, args.gold, args.report_backend)
    print(json.dumps(report, ensure_ascii=False, default=str) if args.json else render_text(report))
    return 0


def register(subparsers: argparse._SubParsersAction, handlers: dict) -> None:
    """Add `bench` and `report` to the `python -m core` parser."""
    p = subparsers.add_parser(
        "bench", help="run the study (main, ksweep, scaling, hybrid, all) into the results database",
        description="Run the study into the results store. main: RtP and PtR at k=5 for R runs (planner in every "
                    "run). ksweep: k=1..20 from the stored stubs (no new LLM calls). scaling: stratified "
                    "sub-registries x seeds from the stored stubs. hybrid: the stored stubs plus the raw query "
                    "(beyond the paper; no LLM calls). all: main, ksweep, hybrid, scaling. Interrupted runs "
                    "continue with --resume.")
    studies = p.add_subparsers(dest="study", required=True, metavar="STUDY")
    helps = {"main": "RtP vs PtR, R runs, planner included", "ksweep": "recall/precision at k=1,3,5,10,20",
             "scaling": "registry sizes 1k..full x seeds",
             "hybrid": "stored PtR stubs plus the raw query, merged by best similarity (beyond the paper)",
             "all": "main, then ksweep, hybrid and scaling"}
    for study in STUDIES:
        _add_bench_flags(studies.add_parser(study, help=helps[study], description=helps[study]), study)
    handlers["bench"] = cmd_bench

    r = subparsers.add_parser("report", help="print the study's tables beside the paper's figures",
                              description="Tables of the latest complete runs (main with p-values, k sweep, scaling, "
                                          "divergence, trajectory, stubs, search width, cost) beside "
                                          "data/paper_reference.json.")
    r.add_argument("--gold", choices=("api_list", "relevant"), default="api_list",
                   help="gold definition: api_list (default; the paper's) or relevant (ToolBench's)")
    r.add_argument("--backend", dest="report_backend", choices=BACKENDS,
                   help="report this backend's latest study (default: the latest of any)")
    r.add_argument("--db", help="results database URL (default: DATABASE_URL, else data/results.sqlite)")
    r.add_argument("--json", action="store_true", help="print machine-readable JSON")
    handlers["report"] = cmd_report
