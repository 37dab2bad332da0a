"""`python -m core bench STUDY` and `python -m core report`: one bench subcommand per declared study.

bench writes into the results store (DATABASE_URL, default data/results.sqlite) with a progress bar
on stderr; `--resume` continues unfinished runs (after a crash or kill) without losing or
duplicating a row, and skips finished ones; a run another bench process is writing is refused, in one
line naming that process (core.store.claims), before anything in it changes. `bench all` runs every
study in the catalog's order.
report prints the study's tables beside the paper's. Both check the results database URL first, and bench
opens the store (refusing a foreign or damaged database untouched) before the index loads.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from core.backends import BACKENDS
from core.cli.common import add_common, k_value, k_values, read_store, validate_results_url
from core.data.toolbench import DEFAULT_GOLD, GOLD_DEFINITIONS, PAPER_SUBSETS, subset_order
from core.settings import Settings
from core.study import catalog
from core.study.catalog import Param, Study, chosen_subsets, parse_subsets, within


def _studies_of(name: str) -> tuple[Study, ...]:
    return tuple(s for s in catalog.STUDIES if s.in_all) if name == "all" else tuple(
        s for s in catalog.STUDIES if s.name == name)


K_PARSERS = {"k": k_value, "ks": k_values}  # k flags take BOUNDS["k"] (check_k), whatever the study declares


def _params_of(studies: tuple[Study, ...]) -> dict[str, Param]:
    """Every flag these studies take, once each (main and scaling share --k)."""
    return {p.name: p for study in studies for p in study.params}


def _add_bench_flags(p: argparse.ArgumentParser, studies: tuple[Study, ...]) -> None:
    p.add_argument("--subsets", type=parse_subsets,
                   help=f"comma list or 'all' (default: {','.join(PAPER_SUBSETS)} on ToolBench, every subset "
                        "elsewhere)")
    p.add_argument("--limit", type=within("limit"), help="first N queries of each subset only (smoke tests)")
    p.add_argument("--resume", action="store_true",
                   help="continue unfinished runs of the same configuration and skip finished ones (a run "
                        "another process is writing is refused)")
    p.add_argument("--db", help="results database URL (default: DATABASE_URL, else data/results.sqlite)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    for param in _params_of(studies).values():
        p.add_argument(param.flag, dest=param.name, type=K_PARSERS.get(param.name, param.parse),
                       default=param.default, help=param.help)
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
    from core.data.loaders import queries_for
    from core.retrieval.memo import memoised
    from core.study.catalog import BenchContext
    from core.store.commit import git_commit
    from core.store.store import Store

    studies = _studies_of(args.study)
    url = args.db or settings.results_url
    validate_results_url(url, writer=True)
    subsets = chosen_subsets(args.subsets, subset_order({q.subset for q in queries_for(settings)}),
                             settings.registry_declared.is_toolbench)
    queries = [q for subset in subsets for q in queries_for(settings, subset)[: args.limit]]
    store = Store(url)  # before the index: a database that cannot be opened is refused in a second
    try:
        retriever, info = retriever_for(settings)
        config = {"limit": args.limit, "use_cache": not args.no_cache, "subsets": subsets,
                  "encoder_runtime": info.runtime, "index": info.index, "temperature": 0.0, **llm_provenance(settings)}
        context = BenchContext(store, memoised(retriever), queries, settings, git_commit(), config, resume=args.resume,
                               progress=not args.no_progress, use_cache=not args.no_cache)
        summary: dict = {"db": store.engine.url.render_as_string(hide_password=True), "registry": info.registry,
                         "registry_size": info.size, "backend": settings.llm_backend, "queries": len(queries)}
        for study in studies:
            start = time.perf_counter()
            run_ids = study.run(context, **{p.name: getattr(args, p.name) for p in study.params})
            summary[study.name] = {"runs": len(run_ids), "seconds": round(time.perf_counter() - start, 2)}
            if not args.json:
                print(f"bench {study.name}: {len(run_ids)} run(s) written in {summary[study.name]['seconds']:.1f} s",
                      file=sys.stderr)
    finally:
        store.close()
    print(json.dumps(summary) if args.json else
          f"results in {summary['db']} ({summary['queries']} queries, registry {info.registry} {info.size:,} APIs, "
          f"backend {settings.llm_backend}); see `python -m core report`")
    return 0


def cmd_report(args: argparse.Namespace, settings: Settings) -> int:
    from core.analysis.report import build_report, render_text

    report = read_store(args, settings, lambda reader: build_report(reader, args.gold, args.report_backend,
                                                                    queries=query_texts(settings)))
    if report is None:
        return 1
    if args.readme:
        return write_readme(settings.root / "README.md", report)
    print(json.dumps(report, ensure_ascii=False, default=str) if args.json else render_text(report))
    return 0


def write_readme(path: Path, report: dict) -> int:
    """Rewrite the README's headline results from this report (core.analysis.readme_results)."""
    from core.analysis.readme_results import headline_table, with_block
    from core.files import write_atomic

    text = path.read_text(encoding="utf-8")
    try:
        new = with_block(text, headline_table(report))
    except ValueError as exc:
        print(f"error: {path.name}: {exc}", file=sys.stderr)
        return 1
    if new == text:
        print(f"{path.name}'s headline results are current")
        return 0
    write_atomic(path, new)  # a read-only or full folder is CannotWrite, said in one line by the CLI
    print(f"rewrote {path.name}'s headline results from the stored study")
    return 0


def query_texts(settings: Settings) -> dict[tuple[str, int], str]:
    """The test queries' texts by (subset, query_id), for the copy rate; {} (and no copy rate) without the data."""
    from core.data.loaders import queries_for

    try:
        return {(q.subset, q.query_id): q.query for q in queries_for(settings)}
    except (OSError, ValueError) as exc:
        print(f"note: no query texts ({exc}); the copy rate is left out", file=sys.stderr)
        return {}


def register(subparsers: argparse._SubParsersAction, handlers: dict) -> None:
    """Add `bench` and `report` to the `python -m core` parser."""
    p = subparsers.add_parser(
        "bench", help=f"run a study ({', '.join(s.name for s in catalog.STUDIES)}, all) into the results database",
        description="Run a study into the results store: "
                    + "; ".join(f"{s.name}: {s.help}"
                                + ("" if s.calls_llm else " (no LLM calls: the main study's stored stubs)")
                                for s in catalog.STUDIES)
                    + f"; all: {', '.join(s.name for s in _studies_of('all'))}. "
                      "Interrupted runs continue with --resume.")
    studies = p.add_subparsers(dest="study", required=True, metavar="STUDY")
    for name, help_text in [*((s.name, s.help) for s in catalog.STUDIES),
                            ("all", ", then ".join(s.name for s in _studies_of("all")))]:
        _add_bench_flags(studies.add_parser(name, help=help_text, description=help_text), _studies_of(name))
    handlers["bench"] = cmd_bench

    r = subparsers.add_parser("report", help="print the study's tables beside the paper's figures",
                              description="Tables of the latest complete runs (main with p-values, k sweep, scaling, "
                                          "divergence, trajectory, stubs, search width, cost) beside "
                                          "data/paper_reference.json.")
    r.add_argument("--gold", choices=GOLD_DEFINITIONS, default=DEFAULT_GOLD.name,
                   help="gold definition: api_list (default; the paper's) or relevant (ToolBench's)")
    r.add_argument("--backend", dest="report_backend", choices=BACKENDS,
                   help="report this backend's latest study (default: the default study, as the pages show it)")
    r.add_argument("--readme", action="store_true",
                   help="rewrite README.md's headline results table from this report instead of printing it")
    r.add_argument("--db", help="results database URL (default: DATABASE_URL, else data/results.sqlite)")
    add_common(r)
    handlers["report"] = cmd_report
