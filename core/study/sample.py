"""The planner sample: which queries of a subset get both planners when a study plans only a sample.

A real LLM's planner costs more than its stubs (a longer prompt), so a study can plan a stratified
sample of each subset and retrieve for every query. The sample is stratified by the size of the
query's api_list gold set (1-3, 4-6, 7+ APIs, the strata a plan's pass rate depends on most),
allocated in proportion and drawn with a fixed seed, so every run, backend and resume picks the
same queries. It is named as a sample wherever its figures are shown.
"""
from __future__ import annotations

import random
from collections.abc import Sequence

from core.data.toolbench import Query

SAMPLE_SEED = 0
STRATA = ((1, 3), (4, 6), (7, 10**9))


def stratum(query: Query) -> int:
    size = len(query.gold("api_list"))
    return next((i for i, (low, high) in enumerate(STRATA) if low <= size <= high), 0)


def planner_sample(queries: Sequence[Query], per_subset: int, seed: int = SAMPLE_SEED) -> frozenset[str]:
    """The uids of `per_subset` queries of each subset (all of a smaller one), stratified and seeded.

    Each stratum gets its proportional share rounded down, and the remaining places go to the strata
    with the largest remainders, so the total is exact."""
    by_subset: dict[str, list[Query]] = {}
    for q in queries:
        by_subset.setdefault(q.subset, []).append(q)
    chosen: set[str] = set()
    for subset, qs in sorted(by_subset.items()):
        if per_subset >= len(qs):
            chosen.update(q.uid for q in qs)
            continue
        strata: dict[int, list[Query]] = {}
        for q in sorted(qs, key=lambda q: q.query_id):
            strata.setdefault(stratum(q), []).append(q)
        shares = {s: per_subset * len(members) / len(qs) for s, members in strata.items()}
        counts = {s: int(share) for s, share in shares.items()}
        for s in sorted(shares, key=lambda s: (counts[s] - shares[s], s))[: per_subset - sum(counts.values())]:
            counts[s] += 1
        rng = random.Random(f"{seed}:{subset}")
        for s, members in sorted(strata.items()):
            chosen.update(q.uid for q in rng.sample(members, counts[s]))
    return frozenset(chosen)
