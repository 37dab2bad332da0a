"""The studies, each declared once: name, parameters with defaults, runner, and the report sections it feeds.

`python -m core bench` builds one subcommand per study (and `all`, in this order) from these declarations,
`report` builds its sections study by study, and the Results page lists them. A new study is one
more entry here plus its own module, whose runner `function(context, **params)` writes its runs. Runners
are named "module:function" and imported on first use, so `--help` and the pages stay fast.
"""
from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.data.toolbench import PAPER_SUBSETS
from core.declared import declared_function
from core.settings import BOUNDS

if TYPE_CHECKING:
    from core.data.toolbench import Query
    from core.retrieval.discovery import Retriever
    from core.settings import Settings
    from core.store.store import Store

MAIN_K = 5
DEFAULT_RUNS = 4
KSWEEP_KS = (1, 3, 5, 10, 20)
ALL_SUBSETS = "all"  # --subsets all: every subset of the registry's queries
# None: the whole registry. Sizes above it are the distractors study's (the real registry plus synthetic vectors).
SCALING_SIZES: tuple[int | None, ...] = (1000, 2000, 5000, 10000, 20000, None, 100_000, 200_000, 500_000, 1_000_000)
SCALING_SEEDS = 5


# ---------------------------------------------------------------- parameter parsers (argparse types)

def within(name: str) -> Callable[[str], int]:
    """An argparse type for the flag whose range core.settings.BOUNDS declares under `name`."""
    def parse(text: str) -> int:
        try:
            return int(BOUNDS[name].parse(f"--{name.replace('_', '-')}", text))
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = name
    return parse


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("expected a positive integer")
    return value


def parse_ks(text: str) -> list[int]:
    try:
        ks = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"--k takes integers like 5 or 1,3,5,10,20, not {text!r}") from None
    if not ks or ks[0] < 1:
        raise argparse.ArgumentTypeError("--k values must be positive integers")
    return ks


def parse_subsets(text: str) -> list[str]:
    """--subsets as given: ["all"] or the names, each once; which names exist depends on the registry's queries,
    so chosen_subsets checks them once the settings are known."""
    if text.strip().lower() == "all":
        return [ALL_SUBSETS]
    chosen = [s.strip() for s in text.split(",") if s.strip()]
    if not chosen:
        raise argparse.ArgumentTypeError("--subsets takes 'all' or a comma list of subsets; (none given)")
    return list(dict.fromkeys(chosen))


def chosen_subsets(given: list[str] | None, known: list[str], toolbench: bool) -> list[str]:
    """The subsets a bench runs: `given` (parse_subsets) checked against the registry's `known` ones (in study
    order); by default the paper's three on ToolBench, every subset elsewhere."""
    if given is None:
        return list(PAPER_SUBSETS) if toolbench else known
    if given == [ALL_SUBSETS]:
        return known
    unknown = [s for s in given if s not in known]
    if unknown:
        raise ValueError(f"--subsets takes 'all' or a comma list of {', '.join(known)}; unknown: {', '.join(unknown)}")
    return given


def parse_retrievers(text: str) -> list[str]:
    """`--retrievers`: comma-separated declared embedding models (core.embedding_models) or bm25."""
    from core.embedding_models import LEXICAL, embedding_model_spec

    names = [name.strip() for name in text.split(",") if name.strip()]
    try:
        return [name if name == LEXICAL else embedding_model_spec(name).name for name in names]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def parse_sizes(text: str) -> list[int | None]:
    out: list[int | None] = []
    for part in (p.strip().lower() for p in text.split(",") if p.strip()):
        if part == "full":
            out.append(None)
            continue
        try:
            value = int(part.replace("k", "000").replace("m", "000000"))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"--sizes takes integers or 'full', like 1000,5k,full,1m; not {part!r}") from None
        if value < 1:
            raise argparse.ArgumentTypeError("--sizes must be positive")
        out.append(value)
    if not out:
        raise argparse.ArgumentTypeError("--sizes needs at least one size")
    return out


def _sizes_text(sizes: Sequence[int | None]) -> str:
    return ",".join("full" if s is None else str(s) for s in sizes)


# ---------------------------------------------------------------- declarations

@dataclass(frozen=True)
class Param:
    """One study parameter, as the bench flag `--name` (underscores written as dashes)."""

    name: str
    parse: Callable[[str], Any]
    default: Any
    help: str

    @property
    def flag(self) -> str:
        return f"--{self.name.replace('_', '-')}"


@dataclass(frozen=True)
class BenchContext:
    """What every study's runner takes besides its own parameters: where to write, what to run on, and the run's
    provenance."""

    store: Store
    retriever: Retriever
    queries: Sequence[Query]
    settings: Settings
    commit: str
    config: dict[str, Any] = field(default_factory=dict)
    resume: bool = False
    progress: bool = False
    use_cache: bool = True
    any_backend: bool = False  # True: build on the latest main study whatever its backend (tests' fake agents)

    @property
    def main_backend(self) -> tuple[str | None, str | None]:
        """(backend, model) whose latest main study the other studies build on: the configured ones, or with
        `any_backend` (None, None), which core.study.sources.main_sources reads as any."""
        return (None, None) if self.any_backend else (self.settings.llm_backend, self.settings.llm_model)


@dataclass(frozen=True)
class Study:
    name: str
    help: str
    params: tuple[Param, ...]
    runner: str  # "module:function", called as function(context, **params) -> run ids written
    sections: tuple[str, ...]  # the report sections (and reader tables) its runs feed
    calls_llm: bool  # False: it reuses the main study's stored stubs and makes no LLM call
    beyond_paper: bool = False
    in_all: bool = True  # False: `bench all` leaves it out (the retriever axis needs `make embed` first)

    def run(self, context: BenchContext, **params: Any) -> list[int]:
        return declared_function(self.runner)(context, **params)


K = Param("k", positive, MAIN_K, f"APIs retrieved (default {MAIN_K})")
SIZES = Param("sizes", parse_sizes, list(SCALING_SIZES),
              f"registry sizes (default {_sizes_text(SCALING_SIZES)}): up to the real registry, stratified "
              "sub-registries (scaling); above it, the real registry plus synthetic distractors (distractors)")
SEEDS = Param("seeds", within("seeds"), SCALING_SEEDS,
              f"sampling seeds or distractor draws per size (default {SCALING_SEEDS}; the real registry runs once)")
STUDIES: tuple[Study, ...] = (
    Study("main", "RtP vs PtR, R runs, planner included",
          (K, Param("runs", within("runs"), DEFAULT_RUNS, f"runs per architecture (default {DEFAULT_RUNS})"),
           Param("concurrency", within("concurrency"), 8, "LLM calls in flight (default 8)"),
           Param("plan_sample", within("plan_sample"), 0,
                 "plan only this many queries per subset, a stratified seeded sample "
                 "(core/study/sample.py), and retrieve for all (default 0: plan all)")),
          "core.study.main_study:run_main",
          ("main", "paired", "wins", "divergence", "trajectory", "stubs", "search_width", "router", "backends",
           "model_size", "cost"),
          calls_llm=True),
    Study("ksweep", "recall/precision at k=1,3,5,10,20",
          (Param("ks", parse_ks, list(KSWEEP_KS), f"k values of the sweep (default {','.join(map(str, KSWEEP_KS))})"),),
          "core.study.ksweep:run_ksweep", ("ksweep",), calls_llm=False),
    Study("hybrid", "stored PtR stubs plus the raw query, merged by best similarity (beyond the paper)", (),
          "core.study.hybrid:run_hybrid", ("hybrid",), calls_llm=False, beyond_paper=True),
    Study("scaling", "registry sizes 1k..full x seeds",
          (K, SIZES, SEEDS), "core.study.scaling:run_scaling", ("scaling",), calls_llm=False),
    Study("retrievers", "RtP, PtR and hybrid searched by each declared embedding model with every stored system's "
                        "stubs (beyond the paper)",
          (Param("ks", parse_ks, list(KSWEEP_KS), f"k values (default {','.join(map(str, KSWEEP_KS))}; the table "
                                                  f"reads k={MAIN_K})"),
           Param("retrievers", parse_retrievers, None,
                    "comma-separated embedding models or bm25 (default: bm25 and every declared embedding model "
                    "but EMBEDDING_MODEL's; `make embed` installs them)")),
          "core.study.retriever_axis:run_retrievers", ("retrievers",), calls_llm=False, beyond_paper=True,
          in_all=False),
    Study("distractors", "sizes above the real registry: its APIs plus SYNTHETIC distractor vectors, exact search "
                         "(beyond the paper)",
          (K, SIZES, SEEDS), "core.study.distractors:run_distractors", ("distractors",), calls_llm=False,
          beyond_paper=True),
)
