"""Display tables: formatting of the study's DataFrames for st.dataframe, testable without Streamlit."""
from __future__ import annotations

import math

import pandas as pd
from pandas.io.formats.style import Styler

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


def metric_rank(metric: str) -> tuple[int, str]:
    """Recall first, then precision (the paper's headline metrics), then any other metric by name."""
    return (METRIC_ORDER.index(metric) if metric in METRIC_ORDER else len(METRIC_ORDER), metric)


def main_table_display(df: pd.DataFrame) -> pd.DataFrame:
    """ResultsReader.main_table -> one readable row per (subset, metric), in the study's subset order."""
    columns = ["subset", "metric", "RtP", "PtR", "p-value", "test", "better", "queries", "runs"]
    if df.empty:
        return pd.DataFrame(columns=columns)
    order = {s: i for i, s in enumerate(subset_order(df["subset"]))}
    df = df.assign(_o=df["subset"].map(order), _m=df["metric"].map(metric_rank)).sort_values(["_o", "_m"], kind="stable")
    return pd.DataFrame({
        "subset": df["subset"], "metric": df["metric"],
        "RtP": [fmt_mean_std(m, s) for m, s in zip(df["rtp_mean"], df["rtp_std"])],
        "PtR": [fmt_mean_std(m, s) for m, s in zip(df["ptr_mean"], df["ptr_std"])],
        "p-value": [fmt_p(p) for p in df["p_value"]], "test": df["test"].fillna(""),
        "better": df["better"].fillna(""), "queries": df["n_queries"], "runs": df["runs"],
    }).reset_index(drop=True)


def main_table_styler(df: pd.DataFrame) -> Styler:
    """The display table with the better architecture's cell in bold (only where `better` names one)."""
    display = main_table_display(df)

    def bold(row: pd.Series) -> list[str]:
        side = {"rtp": "RtP", "ptr": "PtR"}.get(str(row["better"]).lower())
        return ["font-weight: bold" if col == side else "" for col in row.index]

    return display.style.apply(bold, axis=1)


def paper_table(points: pd.DataFrame) -> pd.DataFrame:
    """ui.paper.main_points -> [subset, metric, RtP, PtR, p-value] as the paper reports them."""
    columns = ["subset", "metric", "RtP", "PtR", "p-value"]
    if points.empty:
        return pd.DataFrame(columns=columns)
    rows = []
    for (subset, metric), part in points.groupby(["subset", "metric"], sort=False):
        by_arch = {r.arch: r for r in part.itertuples()}
        rows.append({"subset": subset, "metric": metric,
                     "RtP": fmt_mean_std(by_arch["rtp"].mean, by_arch["rtp"].std) if "rtp" in by_arch else "–",
                     "PtR": fmt_mean_std(by_arch["ptr"].mean, by_arch["ptr"].std) if "ptr" in by_arch else "–",
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


def search_registry(frame: pd.DataFrame, text: str) -> pd.DataFrame:
    """Rows whose tool, API name or description contains `text` (any case); all rows for empty text."""
    needle = text.strip().lower()
    hits = frame[frame["_haystack"].str.contains(needle, regex=False)] if needle else frame
    return hits.drop(columns=["_haystack"])
