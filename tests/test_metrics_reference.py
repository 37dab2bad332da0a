"""Cross-check core.evaluation.metrics against trec_eval (via pytrec-eval-terrier), per query.

Why: recall@k, precision@k and hit@k feed every table and leaderboard; an
off-by-one or a wrong denominator would shift all of them silently. trec_eval is
the reference that BEIR and most IR papers report with, so agreeing with it per
query (not just on averages) pins our conventions to the standard ones.

Convention mapping (ours -> trec_eval), each checked, none skipped silently:
- precision@k: both divide by k, also when fewer than k items are retrieved
  (trec_eval's P_k); compared as is.
- recall@k: identical when the gold set is non-empty. With an empty gold set
  ours returns None (undefined, skipped in aggregation) while trec_eval reports
  0.0; for those queries the test asserts exactly that pair instead.
- hit@k is trec_eval's success_k (1 if any relevant item is in the top k); both
  give 0.0 for an empty gold set; compared as is.
- nDCG@k is trec_eval's ndcg_cut_k with binary relevance; with an empty gold set
  ours is None and trec_eval's 0.0, asserted as that pair, as for recall.
- MRR@k: trec_eval's recip_rank has no cut, so the reference evaluates the run
  cut to its first k items; both give 0.0 when no gold item is there.
- trec_eval drops a query that has no qrels entry at all, so an empty gold set is
  written as one judged non-relevant doc (relevance 0), which counts for nothing;
  the test asserts that no query was dropped.
- trec_eval re-sorts a run by score (ties broken by doc id), so each ranked list
  gets strictly decreasing scores to reproduce our order exactly.
- a run is a dict, so it cannot hold a repeated item; ours counts a repeat once
  at its first rank, so the reference gets the first-occurrence order.
"""
from __future__ import annotations

import math

import numpy as np
import pytrec_eval

from core.data.toolbench import ApiKey
from core.evaluation import metrics

KS = (1, 3, 5, 10, 20)
N_RANDOM_QUERIES = 200
REGISTRY_SIZE = 50
MAX_LIST_LEN = 20
MAX_GOLD = 8
TOL = 1e-9
NO_RELEVANT_DOC = "__judged_nonrelevant__"

Case = tuple[list[ApiKey], set[ApiKey]]


def _registry() -> list[ApiKey]:
    """50 keys over 10 tools, so several APIs share a tool name (as in ToolBench)."""
    return [(f"tool{i % 10}", f"api{i}") for i in range(REGISTRY_SIZE)]


def _random_cases(seed: int = 12) -> list[Case]:
    """Seeded random ranked lists (0..20, no repeats) and gold sets (0..8)."""
    rng = np.random.default_rng(seed)
    reg = _registry()
    cases: list[Case] = []
    for _ in range(N_RANDOM_QUERIES):
        n = int(rng.integers(0, MAX_LIST_LEN + 1))
        g = int(rng.integers(0, MAX_GOLD + 1))
        ranked = [reg[i] for i in rng.choice(REGISTRY_SIZE, size=n, replace=False)]
        gold = {reg[i] for i in rng.choice(REGISTRY_SIZE, size=g, replace=False)}
        cases.append((ranked, gold))
    return cases


def _edge_cases() -> dict[str, Case]:
    """Named cases where conventions differ between libraries, so they are always covered."""
    r = _registry()
    return {
        "shorter_than_k": ([r[0], r[1]], {r[0], r[1], r[2]}),
        "gold_larger_than_k": (r[:20], set(r[:8])),
        "no_gold_in_list": (r[:10], {r[30], r[31], r[32]}),
        "all_gold_in_list": (r[:15], {r[2], r[6], r[9], r[14]}),
        "gold_at_last_rank": (r[:20], {r[19]}),
        "empty_list": ([], {r[0]}),
        "empty_gold": (r[:5], set()),
        "empty_both": ([], set()),
        "repeats_in_list": ([r[0], r[0], r[1], r[0], r[2]], {r[1], r[2]}),
    }


def _doc_ids() -> dict[ApiKey, str]:
    """A bijective key -> doc id map (trec_eval ids are strings)."""
    ids = {key: f"d{i}" for i, key in enumerate(_registry())}
    assert len(set(ids.values())) == len(ids)
    return ids


def _qrels_and_run(cases: dict[str, Case], cut: int | None = None) -> tuple[dict, dict]:
    """trec_eval's qrels and run for the cases; `cut` keeps each ranked list's first `cut` distinct items."""
    ids = _doc_ids()
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for qid, (ranked, gold) in cases.items():
        qrels[qid] = {ids[g]: 1 for g in gold} or {NO_RELEVANT_DOC: 0}
        first_seen = list(dict.fromkeys(ranked))[:cut]  # our dedup: first rank wins
        # strictly decreasing scores, so trec_eval's sort reproduces our order
        run[qid] = {ids[key]: float(len(first_seen) - rank) for rank, key in enumerate(first_seen)}
    return qrels, run


def _reference(cases: dict[str, Case]) -> dict[str, dict[str, float]]:
    """trec_eval's per-query P_k, recall_k, success_k and ndcg_cut_k, plus recip_rank on the run cut at
    each k (as "recip_rank_k"), for all cases."""
    cut = ",".join(str(k) for k in KS)
    qrels, run = _qrels_and_run(cases)
    measures = {f"P.{cut}", f"recall.{cut}", f"success.{cut}", f"ndcg_cut.{cut}"}
    out = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    assert set(out) == set(cases), "trec_eval dropped queries"
    for k in KS:
        cut_qrels, cut_run = _qrels_and_run(cases, k)
        ranks = pytrec_eval.RelevanceEvaluator(cut_qrels, {"recip_rank"}).evaluate(cut_run)
        assert set(ranks) == set(cases), "trec_eval dropped queries"
        for qid, values in ranks.items():
            out[qid][f"recip_rank_{k}"] = values["recip_rank"]
    return out


def _named(cases: list[Case]) -> dict[str, Case]:
    """Query ids for the random cases."""
    return {f"rand{i}": case for i, case in enumerate(cases)}


def _all_cases() -> dict[str, Case]:
    cases = _named(_random_cases())
    cases.update(_edge_cases())
    return cases


def test_metrics_agree_with_trec_eval_per_query() -> None:
    """Every query and every k: ours == trec_eval to 1e-9 under the mapping in the module doc."""
    cases = _all_cases()
    ref = _reference(cases)
    mismatches: list[str] = []
    checked = 0
    for qid, (ranked, gold) in cases.items():
        for k in KS:
            pairs = [
                ("P", metrics.precision_at_k(ranked, gold, k), ref[qid][f"P_{k}"]),
                ("success", metrics.hit_at_k(ranked, gold, k), ref[qid][f"success_{k}"]),
                ("recip_rank", metrics.mrr_at_k(ranked, gold, k), ref[qid][f"recip_rank_{k}"]),
            ]
            for name, ours_value, ref_name in (("recall", metrics.recall_at_k(ranked, gold, k), f"recall_{k}"),
                                               ("ndcg", metrics.ndcg_at_k(ranked, gold, k), f"ndcg_cut_{k}")):
                if gold:
                    pairs.append((name, ours_value, ref[qid][ref_name]))
                elif ours_value is not None or ref[qid][ref_name] != 0.0:
                    # undefined for us (None), 0.0 in trec_eval: assert that exact pair
                    mismatches.append(f"{qid} {name}@{k} empty gold: ours={ours_value} ref={ref[qid][ref_name]}")
            for name, ours, theirs in pairs:
                checked += 1
                if ours is None or not math.isclose(ours, theirs, rel_tol=0.0, abs_tol=TOL):
                    mismatches.append(f"{qid} {name}@{k}: ours={ours} ref={theirs}")
    assert not mismatches, "\n".join(mismatches[:30])
    assert checked >= len(cases) * len(KS) * 3


def test_random_cases_exercise_the_conventions() -> None:
    """The random data must hit the cases where conventions bite, or agreement proves little."""
    cases = _random_cases()
    assert any(not gold for _, gold in cases)
    assert any(not ranked for ranked, _ in cases)
    assert any(0 < len(ranked) < 10 and gold & set(ranked) for ranked, gold in cases)  # short list, hits
    assert any(len(gold) > 5 and gold & set(ranked[:5]) for ranked, gold in cases)  # gold larger than k
    ref = _reference(_named(cases))
    values = {ref[q][m] for q in ref for m in ref[q]}
    assert len(values) > 10, "reference values are degenerate"
    assert any(0.0 < v < 1.0 for v in values)


def test_comparison_can_fail() -> None:
    """A precision that divides by the number retrieved (the other common convention)
    must disagree with trec_eval somewhere, so the agreement above is not vacuous."""
    cases = _named(_random_cases())
    ref = _reference(cases)

    def precision_by_retrieved(ranked: list[ApiKey], gold: set[ApiKey], k: int) -> float:
        top = list(dict.fromkeys(ranked))[:k]
        return sum(1 for x in top if x in gold) / len(top) if top else 0.0

    assert any(
        not math.isclose(precision_by_retrieved(r, g, k), ref[q][f"P_{k}"], abs_tol=TOL)
        for q, (r, g) in cases.items() for k in KS
    )


def test_ndcg_comparison_can_fail() -> None:
    """An nDCG whose ideal ranking counts every gold item (not min(|gold|, k)) must disagree with trec_eval
    where the gold set is larger than k, so the nDCG agreement is not vacuous either."""
    cases = _named(_random_cases())
    ref = _reference(cases)

    def ndcg_uncut_ideal(ranked: list[ApiKey], gold: set[ApiKey], k: int) -> float:
        top = list(dict.fromkeys(ranked))[:k]
        dcg = sum(1 / math.log2(i + 2) for i, x in enumerate(top) if x in gold)
        return dcg / sum(1 / math.log2(i + 2) for i in range(len(gold)))

    assert any(
        not math.isclose(ndcg_uncut_ideal(r, g, k), ref[q][f"ndcg_cut_{k}"], abs_tol=TOL)
        for q, (r, g) in cases.items() if g for k in KS
    )
