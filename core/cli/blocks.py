"""How `query` prints one architecture's block as text: its heading, stubs, hits and plan. One function for the
plain query, the edited stubs and each system of --models, so that the three read alike.
"""
from __future__ import annotations

from core.agents.planner import Plan
from core.study.query_result import ArchResult


def print_block(block: ArchResult, label: str | None = None, score_name: str = "cosine") -> None:
    """The block's lines; `label` (e.g. EDITED) goes into the heading, so that what made the block is the first
    thing read; `score_name` is the retriever's (Retriever.score_name)."""
    cosine = f"top-1 {score_name} {block.top1_score:.3f}"
    print(f"== {block.arch.upper()} ({label}), {cosine}" if label else f"== {block.arch.upper()} ({cosine})")
    for stub in block.writing.stubs if block.writing is not None else ():
        print(f"   stub {stub.name}: {stub.reasoning}")
    for hit in block.hits:
        via = f"  <- {hit.stub}" if hit.stub else ""
        print(f"{hit.rank:>3}. {hit.score:.3f}  {hit.tool_name.strip()}/{hit.api_name.strip()}"
              f"  [{hit.category or '-'}]{via}")
    if block.plan is not None:
        print_plan(block.plan)


def print_plan(plan: Plan, prefix: str = "") -> None:
    """A plan's selections, refusal or parse error, then its steps; `prefix` names whose plan it is."""
    print(f"   {prefix}plan ({plan.label}): selected {list(plan.selected_apis)}"
          + (f", refusal: {plan.refusal}" if plan.refusal else "")
          + (f", parse error: {plan.parse_error}" if plan.parse_error else ""))
    for step in plan.steps:
        print(f"     - {step}")
