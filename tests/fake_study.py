"""A study that is not in the catalog, for tests/test_catalog.py: RtP at k alone, one run per subset.

It is what a new study's own module looks like: a runner `run_fake(context, **params)` over the shared row
builders, runner and store, declared in the test as one more catalog entry.
"""
from __future__ import annotations

from core.agents.factory import make_agents
from core.retrieval.archs import arch, discover
from core.study.catalog import BenchContext
from core.study.rows import base_row, by_subset
from core.study.runner import insert_run, open_run
from core.study.setup import Setup


def run_fake(context: BenchContext, *, k: int = 2) -> list[int]:
    setup = Setup.of(context.retriever, make_agents(context.settings, context.retriever), context.commit)
    touched = []
    for subset, queries in by_subset(context.queries).items():
        opened = open_run(context.store, setup.spec("fake", "rtp", subset, k, 0), queries, context.resume,
                          setup.git_commit, context.config)
        if opened is None:
            continue
        run_id, todo = opened
        found = discover(arch("rtp"), [q.query for q in todo], None, [k], context.retriever)[k]
        insert_run(context.store, run_id, [base_row(run_id, q, d) for q, d in zip(todo, found)])
        touched.append(run_id)
    return touched
