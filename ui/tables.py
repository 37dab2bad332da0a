"""Display tables: formatting of the study's DataFrames for st.dataframe, testable without Streamlit."""
from __future__ import annotations

import math

import pandas as pd
from pandas.io.formats.style import Styler

from core.retrieval.archs import ARCH_LIST, ARCHS, PAPER_ARCHS, arch
from core.data.toolbench import subset_order


def fmt_p(p: object) -> str:
    """p-values as papers print them: '<0.001' below that, three decimals otherwise, '–' when absent."""
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "–"
    if isinstance(p, str):
        return p
    return "<0.001" if float(p) < 0.001 else f"{float(p):.3f}"


def fmt_mean_std(mean: object, std: object) -> str:
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "–"
    if std is None or (isinstance(std, float) and math.isnan(std)):
        return f"{float(mean):.3f}"
    return f"{float(mean):.3f} ± {float(std):.3f}"


METRIC_ORDER = ("recall", "precision")
PAPER_LABELS = {a: arch(a).label for a in PAPER_ARCHS}  # the paper's two architectures, as the tables name them


def metric_rank(metric: str) -> tuple[int, str]:
    """Recall first, then precision (the paper's headline metrics), then any other metric by name."""
    return (METRIC_ORDER.index(metric) if metric in METRIC_ORDER else len(METRIC_ORDER), metric)


def main_table_display(df: pd.DataFrame) -> pd.DataFrame:
    """ResultsReader.main_table -> one readable row per (subset, metric), in the study's subset order."""
    columns = ["subset", "metric", *PAPER_LABELS.values(), "p-value", "test", "better", "queries", "runs"]
    if df.empty:
        return pd.DataFrame(columns=columns)
    df = df_sorted(df)
    return pd.DataFrame({
        "subset": df["subset"], "metric": df["metric"],
        **{label: [fmt_mean_std(m, s) for m, s in zip(df[f"{a}_mean"], df[f"{a}_std"])]
           for a, label in PAPER_LABELS.items()},
        "p-value": [fmt_p(p) for p in df["p_value"]], "test": df["test"].fillna(""),
        "better": df["better"].fillna(""), "queries": df["n_queries"], "runs": df["runs"],
    }).reset_index(drop=True)


def main_table_styler(df: pd.DataFrame) -> Styler:
    """The display table with the better architecture's cell in bold (only where `better` names one)."""
    display = main_table_display(df)

    def bold(row: pd.Series) -> list[str]:
        side = PAPER_LABELS.get(str(row["better"]).lower())
        return ["font-weight: bold" if col == side else "" for col in row.index]

    return display.style.apply(bold, axis=1)


def paper_table(points: pd.DataFrame) -> pd.DataFrame:
    """ui.paper.main_points -> [subset, metric, RtP, PtR, p-value] as the paper reports them."""
    columns = ["subset", "metric", *PAPER_LABELS.values(), "p-value"]
    if points.empty:
        return pd.DataFrame(columns=columns)
    rows = []
    for (subset, metric), part in points.groupby(["subset", "metric"], sort=False):
        by_arch = {r.arch: r for r in part.itertuples()}
        rows.append({"subset": subset, "metric": metric,
                     **{label: fmt_mean_std(by_arch[a].mean, by_arch[a].std) if a in by_arch else "–"
                        for a, label in PAPER_LABELS.items()},
                     "p-value": part["p_value"].iloc[0] or "–"})
    return pd.DataFrame(rows, columns=columns)


def join_queries(df: pd.DataFrame, texts: dict[tuple[str, int], str]) -> pd.DataFrame:
    """Adds the query text (the database stores only ids) and an Inspector link per row."""
    out = df.copy()
    out.insert(2, "query", [texts.get((s, int(q)), "") for s, q in zip(out["subset"], out["query_id"])])
    return out


def inspector_links(df: pd.DataFrame, k: int) -> list[str]:
    """Relative URLs that open each row's query in the Inspector (the view's query parameters)."""
    return [f"inspector?qid={s}:{int(q)}&k={k}" for s, q in zip(df["subset"], df["query_id"])]


def filter_examples(df: pd.DataFrame, subsets: list[str] | None = None, outcomes: list[str] | None = None,
                    diff_range: tuple[float, float] = (-1.0, 1.0), text: str = "") -> pd.DataFrame:
    """Rows of per_query (+ query text) matching every filter; text matches query or stub names, any case."""
    mask = pd.Series(True, index=df.index)
    if subsets:
        mask &= df["subset"].isin(subsets)
    if outcomes:
        mask &= df["outcome"].isin(outcomes)
    if tuple(diff_range) != (-1.0, 1.0):  # the full range also keeps rows without a difference (empty gold)
        mask &= pd.to_numeric(df["recall_diff"], errors="coerce").between(*diff_range)
    needle = text.strip().lower()
    if needle:
        haystack = df.get("query", pd.Series("", index=df.index)).fillna("").astype(str) + " " + \
            df.get("stub_names", pd.Series("", index=df.index)).fillna("").astype(str)
        mask &= haystack.str.lower().str.contains(needle, regex=False)
    return df[mask]


def search_registry(frame: pd.DataFrame, text: str, doc_sources: list[str] | None = None,
                    categories: list[str] | None = None) -> pd.DataFrame:
    """Rows whose tool, API name or description contains `text` (any case), of the chosen document kinds and
    categories (none chosen = all); all rows for empty text."""
    needle = text.strip().lower()
    mask = frame["_haystack"].str.contains(needle, regex=False) if needle else pd.Series(True, index=frame.index)
    if doc_sources:
        mask &= frame["doc_source"].isin(doc_sources)
    if categories:
        mask &= frame["category"].isin(categories)
    return frame[mask].drop(columns=["_haystack", "_row"], errors="ignore")


def semantic_hits(frame: pd.DataFrame, rows: list[int], scores: list[float], doc_sources: list[str] | None = None,
                  categories: list[str] | None = None) -> pd.DataFrame:
    """The index's ranked hits for a search text as registry rows, with rank and cosine, then filtered."""
    by_row = frame.set_index("_row")
    hits = by_row.loc[rows].assign(rank=range(1, len(rows) + 1), cosine=scores).reset_index(drop=True)
    if doc_sources:
        hits = hits[hits["doc_source"].isin(doc_sources)]
    if categories:
        hits = hits[hits["category"].isin(categories)]
    return hits[["rank", "cosine", "tool", "api", "category", "doc_source", "description"]]


def fmt_ci(low: object, high: object) -> str:
    if low is None or high is None or any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        return "–"
    return f"[{float(low):.3f}, {float(high):.3f}]"


PAPER_SUBSETS = ("G1_instruction", "G2_instruction", "G3_instruction")
MEAN_COLUMN = "mean G1/G2/G3"
ARCH_ORDER = {name: i for i, name in enumerate(ARCHS)}
ARCH_LABELS = {a.name: a.table_label for a in ARCH_LIST}


def leaderboard_view(board: pd.DataFrame, metric: str) -> pd.DataFrame:
    """ResultsReader.leaderboard (+ the paper's rows) -> a row per system and architecture: the metric per
    subset as a number (sortable) and its 95% interval beside it, the mean over the paper's three subsets
    (comparable across every row), then the provenance columns."""
    from core.analysis.tables import LEADERBOARD_PROVENANCE

    if board.empty:
        return pd.DataFrame(columns=["system", "architecture"])
    order = subset_order(board["subset"])
    systems = list(dict.fromkeys(board["system"]))
    rows = []
    for (system, arch_key), part in board.groupby(["system", "arch"], sort=False):
        by_subset = part.set_index("subset")
        row = {"system": system, "architecture": ARCH_LABELS.get(arch_key, arch_key)}
        for subset in order:
            have = subset in by_subset.index
            row[subset] = float(by_subset.at[subset, metric]) if have else math.nan
            row[f"{subset} 95% CI"] = (fmt_ci(by_subset.at[subset, f"{metric}_low"],
                                              by_subset.at[subset, f"{metric}_high"]) if have else "–")
        shared = [float(by_subset.at[s, metric]) for s in PAPER_SUBSETS if s in by_subset.index]
        row[MEAN_COLUMN] = sum(shared) / len(shared) if len(shared) == len(PAPER_SUBSETS) else math.nan
        row.update({c: part[c].iloc[0] for c in LEADERBOARD_PROVENANCE})
        row["_order"] = (systems.index(system), ARCH_ORDER.get(arch_key, 9))
        rows.append(row)
    return pd.DataFrame(rows).sort_values("_order").drop(columns="_order").reset_index(drop=True)


def with_provenance(df: pd.DataFrame, fields: dict) -> pd.DataFrame:
    """The table with a column per provenance field, so every exported row says which backend, models,
    registry, gold, k and commit it comes from; a column the table has already (a k sweep's k) is kept."""
    return df.assign(**{name: [value] * len(df) for name, value in fields.items() if name not in df.columns})


def export_json(df: pd.DataFrame, fields: dict) -> bytes:
    """{"provenance": fields, "rows": records}: the JSON download of a table."""
    import json

    rows = json.loads(df.to_json(orient="records", date_format="iso"))
    return json.dumps({"provenance": fields, "rows": rows}, indent=1, ensure_ascii=False, default=str).encode()


def fmt_mean_ci(mean: object, low: object, high: object) -> str:
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "–"
    return f"{float(mean):.3f} {fmt_ci(low, high)}"


def paired_display(paired: pd.DataFrame) -> pd.DataFrame:
    """ResultsReader.paired_tests -> readable rows: each side's mean with its 95% interval over queries, the
    paired difference with its interval, both tests' p-values."""
    columns = ["subset", "metric", "RtP", "PtR", "PtR − RtP", "Wilcoxon p", "paired t p", "better", "queries"]
    if paired.empty:
        return pd.DataFrame(columns=columns)
    return pd.DataFrame({
        "subset": paired["subset"], "metric": paired["metric"],
        "RtP": [fmt_mean_ci(*v) for v in zip(paired["rtp_mean"], paired["rtp_low"], paired["rtp_high"])],
        "PtR": [fmt_mean_ci(*v) for v in zip(paired["ptr_mean"], paired["ptr_low"], paired["ptr_high"])],
        "PtR − RtP": [fmt_mean_ci(*v) for v in zip(paired["mean_diff"], paired["diff_low"], paired["diff_high"])],
        "Wilcoxon p": [fmt_p(p) for p in paired["wilcoxon_p"]], "paired t p": [fmt_p(p) for p in paired["paired_t_p"]],
        "better": paired["better"], "queries": paired["n"]}, columns=columns).reset_index(drop=True)


def runs_can_vary(main: pd.DataFrame, runs: int) -> bool:
    """False when a run-level test says nothing: one run, or every run of both sides gave the same numbers."""
    if runs < 2 or main.empty:
        return False
    spread = pd.concat([main["rtp_std"], main["ptr_std"]]).astype(float).fillna(0.0)
    return bool((spread > 1e-12).any())


def run_level_display(df: pd.DataFrame) -> pd.DataFrame:
    """The main table without its run-level test, for runs that cannot vary: means only."""
    ordered = df_sorted(df)
    return main_table_display(df).assign(RtP=[fmt_mean_std(m, None) for m in ordered["rtp_mean"]],
                                         PtR=[fmt_mean_std(m, None) for m in ordered["ptr_mean"]]
                                         ).drop(columns=["p-value", "test"])


def df_sorted(df: pd.DataFrame) -> pd.DataFrame:
    """The main table's rows with subsets in the study's order, then metrics (recall, precision, others)."""
    order = {s: i for i, s in enumerate(subset_order(df["subset"]))}
    return df.assign(_o=df["subset"].map(order), _m=df["metric"].map(metric_rank)).sort_values(
        ["_o", "_m"], kind="stable").drop(columns=["_o", "_m"])


PLANNER_DEFINITIONS = {
    "fidelity": ("share of the APIs the planner named that were in the retrieved list it was given "
                 "(1.0 = it invented none)"),
    "selection_rate": "APIs the planner selected ÷ k: how much of the retrieved list it used",
    "steps": "plan steps per query",
    "apis_named": "APIs the planner named per query",
    "refusal_rate": "share of queries where the planner said no retrieved API can do the task",
    "parse_error_rate": "share of planner replies that were not usable JSON",
    "complete_miss_rate": "share of queries whose retrieved list held no gold API (recall 0)",
    "wrong_tool_rate": ("on complete misses: share where the planner still selected something "
                        "(necessarily the wrong tool)"),
    "refusal_on_miss": "on complete misses: share where the planner refused (the honest answer)",
    "planner_jaccard": "mean Jaccard overlap of RtP's and PtR's selected APIs per query (same on both rows)",
}
