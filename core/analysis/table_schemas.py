"""The columns of every table ResultsReader returns, declared in code: tests/test_reader_schema.py checks each
against the frame the reader builds from the committed database, so a column cannot change unnoticed.

A table is named for the ResultsReader method that returns it. Every table method but `runs`, `leaderboard`,
`side_recall` and `compare_systems` (which name their stored systems) also takes `backend=None` (the study
core.analysis.store_summary.DEFAULT_STUDY_RULE picks), and every one keeps its columns when nothing is stored. A
column's kind is what its values are, None and NaN aside: text, int, float, bool, list, dict or time (a timestamp).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["text", "int", "float", "bool", "list", "dict", "time"]


@dataclass(frozen=True)
class Column:
    """One column: its name in the frame, the kind of its values, what it means."""

    name: str
    kind: Kind
    doc: str = ""  # a column whose name says it all


@dataclass(frozen=True)
class TableSchema:
    """One table: `name` is the ResultsReader method that returns it; its columns in the frame's order."""

    name: str
    doc: str
    columns: tuple[Column, ...]

    @property
    def names(self) -> list[str]:
        """The column names, as a frame's `columns` lists them."""
        return [c.name for c in self.columns]


def _floats(*names: str, doc: str) -> tuple[Column, ...]:
    return tuple(Column(name, "float", doc) for name in names)


# Where a row is: its subset, query, architecture and k.
SUBSET = Column("subset", "text", "the ToolBench subset (G1_instruction, ...)")
SUBSET_OR_ALL = Column("subset", "text", 'the ToolBench subset, or "all" on the row over every query')
QUERY_ID = Column("query_id", "int", "the query's id within its subset")
ARCH = Column("arch", "text", "the architecture (rtp, ptr, hybrid, or another declared one)")
K = Column("k", "int", "APIs kept after retrieval")
RECALL_STATS = _floats("recall_mean", "recall_std", doc="mean and std over runs")
PRECISION_STATS = _floats("precision_mean", "precision_std", doc="mean and std over runs")

# What its figures are over.
RUNS = Column("runs", "int", "runs the figures are over")
N_QUERIES = Column("n_queries", "int", "queries behind the figures")
N = Column("n", "int", "queries compared")

# Comparisons of the paper's two.
BETTER = Column("better", "text", "rtp, ptr or tie, by the means")
BEST_SINGLE = Column("best_single", "text", "the better fixed architecture (rtp or ptr) on the same queries")
VS_BEST = Column("vs_best_single", "float", "mean recall minus best_single's, over the same queries")
P_VS_BEST = Column("p_vs_best", "float", "Wilcoxon signed-rank p of that pairing (NaN when every pair is equal)")

RUNS_TABLE = TableSchema("runs", "one row per stored run, in id order", (
    Column("id", "int", "the run's id"), Column("kind", "text", "its study (main, ksweep, scaling, ...)"), ARCH, SUBSET,
    K, Column("run_index", "int", "which repeat of its configuration"),
    Column("registry_name", "text", "the registry searched"), Column("registry_size", "int", "its APIs"),
    Column("registry_hash", "text", "its content hash"),
    Column("sub_size", "float", "the sub-registry's size (NaN: the whole registry)"),
    Column("sub_seed", "float", "the sub-registry's draw (NaN: the whole registry)"),
    Column("embedding_model", "text", "the retrieval encoder"), Column("llm_backend", "text", "the LLM backend"),
    Column("llm_model", "text", "the LLM"), Column("backend_label", "text", "backend and model, as pages show them"),
    Column("discovery_prompt_version", "text", "digest of PtR's stub prompt"),
    Column("planner_prompt_version", "text", "digest of the planner's prompt"),
    Column("source_run_id", "float", "the main run whose stubs it reused (NaN: none)"),
    Column("git_commit", "text", "the code that wrote it"), Column("n_queries", "int", "queries it was to answer"),
    Column("status", "text", "running, complete, failed, skipped or interrupted (stopped; --resume goes on)"),
    Column("note", "text", "why it failed, was skipped or was interrupted"),
    Column("config", "dict", "its configuration as stored"), Column("started_at", "time", "when it started"),
    Column("finished_at", "time", "when it finished"), Column("n_results", "int", "stored rows"),
    Column("failed_rows", "int", "rows with an error: in no mean; --resume redoes them"),
))

MAIN_TABLE = TableSchema("main_table", "the paper's main comparison, subset x metric, over the main runs", (
    SUBSET, Column("metric", "text", "recall, precision or pass_rate_proxy"),
    *_floats("rtp_mean", "rtp_std", "ptr_mean", "ptr_std", doc="mean and std over runs"),
    Column("p_value", "float", "NaN when it cannot be computed (test says why)"),
    Column("test", "text", "the test behind p_value"), BETTER,
    Column("n_queries", "int", "queries behind the means (the planned ones for the pass rate)"), RUNS,
))

PER_QUERY_COLUMNS = (
    SUBSET, QUERY_ID, *_floats("rtp_recall", "ptr_recall", "rtp_precision", "ptr_precision", doc="mean over runs"),
    Column("recall_diff", "float", "ptr_recall - rtp_recall"),
    Column("outcome", "text", "rtp_wins, ptr_wins, tie or both_miss"),
    Column("rtp_top1", "float", "RtP's top-1 cosine in run 0"),
    Column("n_stubs", "float", "PtR's stubs in run 0 (NaN: none stored)"),
    Column("stub_names", "text", 'run 0\'s stub names, ", "-joined'),
    Column("stub_fallback", "bool", "run 0's stub writer failed: PtR searched with the raw query"),
    Column("diverging", "bool", "PtR's top-k differs from RtP's in some run"),
)
PER_QUERY = TableSchema("per_query", "one row per query at k (another k than the main one: the k sweep's runs)",
                        PER_QUERY_COLUMNS)
BRAND_NAME_LOSSES = TableSchema("brand_name_losses", "per_query rows on the relevant gold (ToolBench's 2-3 APIs per "
                                "query, all reachable at k=5) where PtR recalls none and RtP all", PER_QUERY_COLUMNS)
DECOMPOSITION_WINS = TableSchema("decomposition_wins", "per_query rows where PtR recalls more than RtP with >= 2 stubs",
                                 PER_QUERY_COLUMNS)
PAIRED_TESTS = TableSchema("paired_tests", "per subset and metric, RtP vs PtR paired query by query", (
    SUBSET, Column("metric", "text", "recall or precision"), N,
    *_floats("rtp_mean", "rtp_low", "rtp_high", "ptr_mean", "ptr_low", "ptr_high", doc="mean, bootstrap 95% interval"),
    *_floats("mean_diff", "diff_low", "diff_high", doc="PtR - RtP: mean, bootstrap 95% interval"),
    *_floats("wilcoxon_p", "paired_t_p", doc="two-sided p (NaN when every pair is equal)"), BETTER,
))
WIN_COUNTS = TableSchema("win_counts", "per subset, how each query's recall came out", (
    SUBSET, *(Column(o, "int", "queries with that outcome") for o in ("rtp_wins", "ptr_wins", "tie", "both_miss")),
    N_QUERIES, Column("n_diverging", "int", "queries whose top-k sets differ"),
    *_floats("rtp_recall_diverging", "ptr_recall_diverging", doc="mean recall on the diverging queries"),
))
STUB_COSINES = TableSchema("stub_cosines", "one row per stub PtR's run 0 wrote", (
    SUBSET, QUERY_ID, Column("stub", "text", "the stub's name"), Column("cosine", "float", "its top-1 API's cosine"),
    Column("correct", "bool", "that API is api_list gold"), Column("correct_relevant", "bool", "it is relevant gold"),
))
REPLIES = TableSchema("replies", "run 0's LLM replies in the main study, what core.analysis.copying reads", (
    SUBSET, QUERY_ID, ARCH, Column("stub_fallback", "bool", "the stub writer failed (None on RtP rows)"),
    Column("stub_names", "list", "PtR's stub names (None on RtP rows)"),
    Column("stub_reasonings", "list", "PtR's stub reasonings (None on RtP rows)"),
    Column("plan", "dict", "the planner's plan (None where it did not run)"),
))
HYBRID_PER_QUERY = TableSchema("hybrid_per_query", "each query's mean over the hybrid's runs", (
    SUBSET, QUERY_ID, *_floats("hybrid_recall", "hybrid_precision", doc="mean over runs"),
))
SIDE_RECALL = TableSchema("side_recall", "one side's recall per query (a stored system's architecture at a k), what "
                          "compare_systems sets against another's", (
    SUBSET, QUERY_ID, Column("recall", "float", "mean over runs"),
))
COMPARE_SYSTEMS = TableSchema("compare_systems", "two sides query by query (core.analysis.compare), on the queries "
                              "both define, the largest a - b first", (
    SUBSET, QUERY_ID, *_floats("a_recall", "b_recall", doc="mean over runs"), Column("diff", "float", "a - b"),
    Column("outcome", "text", "a_wins, b_wins, tie or both_miss"),
))

SWEEP_COLUMNS = (SUBSET, ARCH, K, *RECALL_STATS, *PRECISION_STATS, RUNS, N_QUERIES)
KSWEEP = TableSchema("ksweep", "recall and precision per subset, architecture and k", SWEEP_COLUMNS)
STUDY_TABLE = TableSchema("study_table", "any study's runs per subset, architecture and k (a study with no table of "
                          "its own)", SWEEP_COLUMNS)
SCALING_COLUMNS = (
    SUBSET, Column("size", "int", "APIs in the sub-registry"), ARCH, *RECALL_STATS,
    *_floats("divergence_not_identical", "divergence_disjoint", doc="divergence at that size, mean over seeds"),
    *PRECISION_STATS, Column("runs", "int", "seeds the figures are over"), N_QUERIES,
)
SCALING = TableSchema("scaling", "recall per subset, sub-registry size and architecture", (
    *SCALING_COLUMNS,
    Column("gold_share", "float", "the subset's gold APIs (both definitions) as a share of the sub-registry: every "
           "sub-registry holds all of them, so small sizes are mostly gold"),
))
DISTRACTORS = TableSchema("distractors", "scaling's columns for the distractor-scale study: sizes above the real "
                          "registry are SYNTHETIC (core.retrieval.synthetic)", (
    *SCALING_COLUMNS, Column("synthetic_distractors", "int", "synthetic APIs added (0 at the real registry)"),
    Column("registry", "text", '"real" or "real + synthetic distractors"'),
))
SCALING_NOTES = TableSchema("scaling_notes", "sizes the scaling study skipped", (
    SUBSET, Column("size", "int", "the skipped sub-registry size"), Column("note", "text", "why"),
))
DIVERGENCE = TableSchema("divergence", "per subset, how often PtR's top-k differs from RtP's", (
    SUBSET, *_floats("not_identical", "not_identical_std", doc="share of queries whose top-k sets differ, std"),
    *_floats("disjoint", "disjoint_std", doc="share whose sets share no API, std"), RUNS,
))
TRAJECTORY = TableSchema("trajectory", "per subset and architecture, the planner's behaviour (means over runs)", (
    SUBSET, ARCH, Column("fidelity", "float", "share of the plan's selections that were retrieved"),
    Column("selection_rate", "float", "share of the k retrieved APIs the plan used"),
    *_floats("steps", "apis_named", doc="per plan"), Column("refusal_rate", "float", "plans that refused"),
    Column("parse_error_rate", "float", "replies that did not parse"),
    Column("complete_miss_rate", "float", "planned queries whose retrieval recall is 0"),
    Column("wrong_tool_rate", "float", "on those misses: the planner still named an API"),
    Column("refusal_on_miss", "float", "on those misses: the planner refused"),
    Column("planner_jaccard", "float", "mean Jaccard of RtP's and PtR's selections per query and run"), RUNS,
))
STUB_STATS = TableSchema("stub_stats", "per subset, PtR's stubs over every main run", (
    SUBSET, Column("queries", "int", "queries"),
    Column("share_with_stubs", "float", "queries whose stubs came from the writer, not the raw-query fallback"),
    Column("stubs_per_query", "float", "over those"), Column("unique_name_rate", "float", "distinct names / stubs"),
    *_floats("top1_match_rate", "top1_match_rate_relevant",
             doc="stubs whose own top-1 API is gold (api_list, relevant)"),
    *_floats("cosine_correct", "cosine_incorrect", doc="mean top-1 cosine of stubs whose top-1 is / is not gold"),
    RUNS,
))
SEARCH_WIDTH = TableSchema("search_width", "APIs scored before the cut to k (RtP: k; PtR: the union of each stub's)", (
    SUBSET, ARCH, K, *_floats("mean", "median", "max", doc="over the main rows"),
))
COST = TableSchema("cost", "tokens per query per subset (means; the planner's over the planned rows only)", (
    SUBSET, N_QUERIES, Column("n_planned", "int", "rows the planner ran on"),
    Column("rtp_tokens", "float", "RtP: the planner"), Column("ptr_tokens", "float", "PtR: discovery and planner"),
    *_floats("ptr_discovery_tokens", "ptr_discovery_output_tokens", "ptr_planner_tokens", doc="PtR's parts"),
    Column("ptr_overhead", "float", "ptr_tokens / rtp_tokens - 1 (NaN when RtP used none)"),
    *_floats(*(f"{arch}_{part}_tokens" for arch in ("rtp", "ptr") for part in ("prompt", "output", "thoughts")),
             doc="by kind of token"),
))
HYBRID_TABLE = TableSchema("hybrid_table", "the hybrid beside RtP and PtR at the main k, on the queries all three "
                           "have", (
    SUBSET_OR_ALL, N, *_floats("rtp_recall", "ptr_recall", "hybrid_recall", doc="mean over queries"),
    Column("hybrid_recall_std", "float", "std of the hybrid's run means (NaN with one run)"),
    Column("hybrid_precision", "float", "mean over queries"), BEST_SINGLE, VS_BEST, P_VS_BEST,
    Column("share_at_least_both", "float", "queries where the hybrid recalls at least as much as RtP and PtR both"),
))
LEADERBOARD = TableSchema("leaderboard", "every system's latest study at its main k (the paper's rows are added by "
                          "core.analysis.report)", (
    Column("system", "text", "the backend label"), ARCH, SUBSET,
    *_floats("recall", "recall_low", "recall_high", "precision", "precision_low", "precision_high",
             doc="mean over queries, bootstrap 95% interval"), N,
    *(Column(name, "text", "provenance (core.analysis.provenance)")
      for name in ("llm_backend", "llm_model", "embedding_model", "registry", "gold")), K, RUNS,
    Column("plans", "text", "which queries the planners ran on"),
    Column("commit", "text", "the code that wrote the runs"),
))
ROUTER_TABLE = TableSchema("router_table", "RtP, PtR, the cross-validated top-1-cosine router and the oracle", (
    SUBSET_OR_ALL, N, *_floats("rtp_recall", "ptr_recall", doc="mean over queries"),
    Column("router_recall", "float", "out of sample: each fold routed by the others' threshold"),
    Column("oracle_recall", "float", "the better side per query: an upper bound"),
    Column("share_to_ptr", "float", "queries routed to PtR (they need the discovery call)"),
    BEST_SINGLE, VS_BEST, P_VS_BEST,
))
ROUTER_CURVE = TableSchema("router_curve", "routed recall against the threshold, in sample, for the chart", (
    Column("threshold", "float", "route to PtR below it"), Column("recall", "float", "mean routed recall"),
    Column("share_to_ptr", "float", "queries routed to PtR"),
))

SCHEMAS: tuple[TableSchema, ...] = (
    RUNS_TABLE, MAIN_TABLE, PER_QUERY, BRAND_NAME_LOSSES, DECOMPOSITION_WINS, PAIRED_TESTS, WIN_COUNTS, STUB_COSINES,
    REPLIES, HYBRID_PER_QUERY, SIDE_RECALL, COMPARE_SYSTEMS, KSWEEP, STUDY_TABLE, SCALING, DISTRACTORS,
    SCALING_NOTES, DIVERGENCE, TRAJECTORY, STUB_STATS, SEARCH_WIDTH, COST, HYBRID_TABLE, LEADERBOARD, ROUTER_TABLE,
    ROUTER_CURVE,
)
