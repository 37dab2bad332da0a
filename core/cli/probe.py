"""`query TEXT --stubs FILE` and `query TEXT --models all|NAME[,NAME...]`: one query probed from the shell.

--stubs answers "what if the stubs had said X?" with no LLM call: the given stubs are searched as PtR and the hybrid
search a model's (core.study.edited_stubs), and every block made from them says EDITED, in its JSON and its heading,
so that it can never be taken for a model's output. --models runs the query through each system this machine can
run (core.agents.systems: the offline heuristic, each installed local model, a configured remote backend), one after
another on one retriever; RtP is printed once, as no system changes it (each system's own RtP plan is in its result).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING, Any

from core.cli.blocks import print_block, print_plan
from core.cli.common import UsageError, retriever_for
from core.retrieval.archs import baseline
from core.retrieval.discovery import CleanQuery, Retriever, clean_query
from core.retrieval.records import Stub
from core.settings import Settings, redact

if TYPE_CHECKING:  # the study's modules load on use: `query --help` and a refused argument need none of them
    from core.study.query_result import ArchResult, QueryOutcome

# A file of MAX_STUBS stubs at the longest texts check_stubs takes is about 2 M characters, 12 MB as JSON escapes
# at the worst; past this it is not a stubs file, and reading it whole first would only cost memory.
MAX_STUBS_FILE_BYTES = 16 * 2**20
ALL = "all"


def add_probe_options(parser: argparse.ArgumentParser) -> None:
    """--stubs and --models on `query`: either, never both (one searches given stubs, the other has them written)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--stubs", metavar="FILE",
                       help="search these stubs as PtR and the hybrid, no LLM called: JSON, a list of "
                            "{\"name\", \"reasoning\"} objects or [name, reasoning] pairs, or an object with "
                            "\"stubs\" (a `query --json` block); - reads stdin")
    group.add_argument("--models", metavar="all|NAME[,NAME...]",
                       help="run the query through every system that can run here (all), or the named ones "
                            "(offline, local:<model>, ...), one after another; RtP is shown once")


def probing(args: argparse.Namespace) -> bool:
    return args.stubs is not None or args.models is not None


def cmd_probe(args: argparse.Namespace, settings: Settings) -> int:
    """`query` with --stubs or --models; every input is checked before the index loads."""
    if args.arch is not None:
        raise UsageError("--arch does not apply with --stubs or --models: they show every architecture")
    if args.stubs is not None:
        return _probe_stubs(args, read_stubs(args.stubs), settings)
    return _probe_models(args, chosen_systems(args.models, settings), settings)


def read_stubs(name: str) -> tuple[Stub, ...]:
    """The stubs of --stubs FILE (`-`: stdin); StubsError in one line naming the file and what is wrong with it."""
    from core.study.edited_stubs import StubsError, stubs_from_json

    try:
        if name == "-":
            raw = sys.stdin.buffer.read(MAX_STUBS_FILE_BYTES + 1)
        else:
            with open(name, "rb") as fh:
                raw = fh.read(MAX_STUBS_FILE_BYTES + 1)
    except FileNotFoundError:
        raise StubsError(f"--stubs {name}: no such file") from None
    except OSError as exc:
        raise StubsError(f"--stubs {name} cannot be read ({exc.strerror or type(exc).__name__})") from None
    if len(raw) > MAX_STUBS_FILE_BYTES:
        raise StubsError(f"--stubs {name} is over {MAX_STUBS_FILE_BYTES // 2**20} MB: not a stubs file")
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise StubsError(f"--stubs {name} is not UTF-8 text (byte {exc.start + 1})") from None
    except ValueError as exc:  # json.JSONDecodeError
        raise StubsError(f"--stubs {name} is not JSON ({exc})") from None
    except RecursionError:
        raise StubsError(f"--stubs {name} is not JSON (nested too deep)") from None
    try:
        return stubs_from_json(data)
    except StubsError as exc:
        raise StubsError(f"--stubs {name}: {exc}") from None


def chosen_systems(value: str, settings: Settings) -> list[str]:
    """The systems --models names (`all`: every one that can run here), or UsageError naming those that can."""
    from core.agents.systems import runnable_systems

    runnable = runnable_systems(settings)
    if value.strip() == ALL:
        return runnable
    names = list(dict.fromkeys(name.strip() for name in value.split(",") if name.strip()))
    unknown = [name for name in names if name not in runnable]
    if unknown or not names:
        given = f"{unknown[0]!r} cannot run here" if unknown else "no system named"
        raise UsageError(f"--models: {given}; these can: {', '.join(runnable)} (or {ALL})")
    return names


def _probe_stubs(args: argparse.Namespace, stubs: tuple[Stub, ...], settings: Settings) -> int:
    from core.study.edited_stubs import EDITED, EDITED_ARCHS, search_edited

    query = clean_query(args.text)
    retriever = _retriever(settings)
    rtp = _rtp_block(query, args.k, retriever)
    edited = search_edited(query, stubs, args.k, retriever)
    blocks = {name: edited.block(name) for name in EDITED_ARCHS}
    if args.json:
        print(json.dumps({"query": query, "k": args.k, "stubs": [{"name": s.name, "reasoning": s.reasoning}
                                                                  for s in edited.stubs],
                          "source": EDITED, rtp.arch: rtp.to_json(),
                          **{name: None if block is None else {**block.to_json(), "label": EDITED}
                             for name, block in blocks.items()}}, ensure_ascii=False))
        return 0
    print_block(rtp, score_name=retriever.score_name)
    for name, block in blocks.items():
        if block is None:
            print(f"== {name.upper()} ({EDITED}): no stubs given, nothing to search")
        else:
            print_block(block, EDITED, retriever.score_name)
    return 0


def _probe_models(args: argparse.Namespace, systems: list[str], settings: Settings) -> int:
    from core.agents.systems import with_system
    from core.store.cleaning import without_nul
    from core.study.one_query import run_query
    from core.study.query_result import QueryOutcome

    query = clean_query(args.text)
    retriever = _retriever(settings)
    rtp = _rtp_block(query, args.k, retriever)
    if not args.json:
        print_block(rtp, score_name=retriever.score_name)
    runs: list[dict[str, Any]] = []
    for system in systems:
        chosen = with_system(settings, system)
        started = time.perf_counter()
        # The LLM's texts as the store would hold them (NUL characters dropped), as plain `query` prints them.
        answer = without_nul(run_query(query, args.k, retriever, chosen, use_cache=not args.no_cache).to_json())
        seconds = time.perf_counter() - started
        if answer.get("llm_error"):  # this system cannot run; the others still do
            answer["llm_error"] = redact(answer["llm_error"], chosen.secrets())
            print(f"{system}: LLM unavailable: {answer['llm_error']}", file=sys.stderr)
        runs.append({"system": system, "label": chosen.backend_label, "result": answer, "seconds": round(seconds, 2)})
        if not args.json:
            _print_system(runs[-1], QueryOutcome.from_json(answer), rtp.arch, retriever.score_name)
    if args.json:
        print(json.dumps({"query": query, "k": args.k, rtp.arch: rtp.to_json(), "systems": runs}, ensure_ascii=False))
    return 0


def _print_system(run: dict[str, Any], outcome: QueryOutcome, rtp_name: str, score_name: str) -> None:
    """One system's lines: its heading, then its own RtP plan and every block that searched its stubs."""
    print(f"\n## {run['system']} ({run['label']}), {run['seconds']:.2f} s")
    if run["result"].get("llm_error"):
        print(f"   LLM unavailable: {run['result']['llm_error']}")
    for block in outcome.blocks:
        if block.arch != rtp_name:
            print_block(block, score_name=score_name)
        elif block.plan is not None:
            print_plan(block.plan, f"{rtp_name.upper()} ")


def _retriever(settings: Settings) -> Retriever:
    """The configured retriever, memoised: each text is embedded once, whichever search or system asks."""
    from core.retrieval.memo import memoised

    return memoised(retriever_for(settings)[0])


def _rtp_block(query: CleanQuery, k: int, retriever: Retriever) -> ArchResult:
    """The baseline's block (RtP: the query alone), as run_query makes it; it needs no stubs, so one serves all."""
    from core.study.query_result import ArchResult

    return ArchResult.of(baseline().name, baseline().retrieve(query, None, k, retriever))
