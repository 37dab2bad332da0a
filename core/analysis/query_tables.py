"""The reader's tables with one row per stored query (or stub), and what is read off them query by query: the
paired tests, the win counts, the brand-name losses, two stored systems set side by side, one query's stored outputs.
"""
from __future__ import annotations

from typing import Any

import pandas as pd
from sqlalchemy import select
from sqlalchemy.orm import Session

from core.analysis import tables as analysis
from core.analysis.compare import Side, compare_rows, in_query_order
from core.analysis.provenance import provenance
from core.analysis.run_reader import RunReader, iso_time, plain, read_cached
from core.analysis.table_schemas import PER_QUERY, REPLIES, RUNS_TABLE, SIDE_RECALL
from core.data.toolbench import gold_definition
from core.retrieval.archs import PAPER_ARCHS
from core.store.schema import QueryResult
from core.study.query_result import ArchResult, QueryOutcome

GOLD_SCORES = ("recall_api_list", "precision_api_list", "recall_relevant", "precision_relevant")
PER_QUERY_SOURCE = ("subset", "query_id", *GOLD_SCORES, "same_as_rtp")
STUB_SOURCE = ("subset", "query_id", "stub_fallback", "stubs")
REPLY_SOURCE = ("subset", "query_id", "stub_fallback", "stubs", "plan")
PROVENANCE = ("kind", "registry_name", "registry_size", "registry_hash", "embedding_model", "llm_backend", "llm_model",
              "backend_label", "discovery_prompt_version", "planner_prompt_version", "git_commit")


class QueryTables(RunReader):
    """Per-query tables of the selected runs (table_schemas: PER_QUERY and the tables built on it)."""

    def _runs_at_k(self, k: int, backend: str | None) -> pd.DataFrame:
        if k == self._main_k(backend):
            return self._selected("main", backend)
        sweep = self._selected("ksweep", backend)
        return sweep[sweep["k"] == k]

    @read_cached
    def per_query(self, subset: str | None = None, gold: str = "api_list", k: int = 5,
                  backend: str | None = None) -> pd.DataFrame:
        runs = self._runs_at_k(k, backend)
        if subset is not None:
            runs = runs[runs["subset"] == subset]
        pq = analysis.per_query(self._rows(runs, PER_QUERY_SOURCE), gold)
        if pq.empty:
            return pd.DataFrame(columns=PER_QUERY.names)
        run0 = runs[runs["run_index"] == 0]
        rtp0 = self._rows(run0[run0["arch"] == "rtp"], ("subset", "query_id", "top1_score"))
        ptr0 = self._rows(run0[run0["arch"] == "ptr"], STUB_SOURCE)
        rtp0, ptr0 = rtp0.set_index(["subset", "query_id"]), ptr0.set_index(["subset", "query_id"])
        idx = list(zip(pq["subset"], pq["query_id"]))
        pq["rtp_top1"] = rtp0["top1_score"].reindex(idx).to_numpy(dtype=float)
        pq["n_stubs"] = ptr0["n_stubs"].reindex(idx).to_numpy(dtype=float)
        names = ptr0["stub_names"].reindex(idx).tolist()
        pq["stub_names"] = [", ".join(n) if isinstance(n, list) else "" for n in names]
        pq["stub_fallback"] = ptr0["stub_fallback"].reindex(idx).tolist()
        return pq[PER_QUERY.names].reset_index(drop=True)

    @read_cached
    def paired_tests(self, gold: str = "api_list", k: int = 5, backend: str | None = None) -> pd.DataFrame:
        """Paired per-query tests of RtP vs PtR per subset (see analysis.paired_tests)."""
        return analysis.paired_tests(self.per_query(None, gold, k, backend))

    @read_cached
    def win_counts(self, gold: str = "api_list", backend: str | None = None) -> pd.DataFrame:
        k = self._main_k(backend) or 5
        return analysis.win_counts(self.per_query(None, gold, k, backend))

    @read_cached
    def brand_name_losses(self, subset: str | None = None, backend: str | None = None) -> pd.DataFrame:
        k = self._main_k(backend) or 5
        return analysis.brand_name_losses(self.per_query(subset, "relevant", k, backend)).reset_index(drop=True)

    @read_cached
    def decomposition_wins(self, subset: str | None = None, gold: str = "api_list",
                           backend: str | None = None) -> pd.DataFrame:
        k = self._main_k(backend) or 5
        pq = self.per_query(subset, gold, k, backend)
        return analysis.decomposition_wins(pq, pq["n_stubs"]).reset_index(drop=True)

    @read_cached
    def stub_cosines(self, backend: str | None = None) -> pd.DataFrame:
        return analysis.stub_cosines(self._main(backend, STUB_SOURCE))

    @read_cached
    def replies(self, backend: str | None = None) -> pd.DataFrame:
        """Run 0's LLM replies in the main study (table_schemas.REPLIES)."""
        rows = self._main(backend, REPLY_SOURCE)
        return rows.loc[rows["run_index"] == 0, REPLIES.names].reset_index(drop=True)

    @read_cached
    def hybrid_per_query(self, gold: str = "api_list", backend: str | None = None) -> pd.DataFrame:
        """Each query's mean over the hybrid's runs (table_schemas.HYBRID_PER_QUERY)."""
        rows = self._rows(self._selected("hybrid", backend), ("subset", "query_id", *GOLD_SCORES))
        return analysis.hybrid_per_query(rows, gold)

    def _side_runs(self, system: str, arch: str, k: int | None, subset: str | tuple[str, ...] | None) -> pd.DataFrame:
        """The runs one side's recall is read from: its architecture's at k (None: the main k), the main study's at
        the main k and the k sweep's at another; the hybrid's at the main k only, as it searches the main study's
        stubs; none for a system with no complete main study. `subset`: one, several or (None) every one."""
        main_k = self._main_k(system) if system in self.backends() else None
        if main_k is None or (arch == "hybrid" and k not in (None, main_k)):
            return pd.DataFrame(columns=RUNS_TABLE.names)
        runs = self._selected("hybrid", system) if arch == "hybrid" else self._runs_at_k(k or main_k, system)
        runs = runs[runs["arch"] == arch]
        return runs if subset is None else runs[runs["subset"].isin((subset,) if isinstance(subset, str) else subset)]

    @read_cached
    def side_recall(self, system: str, arch: str, gold: str = "api_list", k: int | None = None,
                    subset: str | None = None) -> pd.DataFrame:
        """One side's recall per query (table_schemas.SIDE_RECALL), each query's mean over runs as the report takes
        it: RtP and PtR from per_query (the queries both define), the hybrid from hybrid_per_query. `system` is a
        key of backends(); k None is its main k. Empty when nothing of that side is stored."""
        Side(system, arch)  # an architecture the store holds no per-query recall of is refused
        gold_definition(gold)
        runs = self._side_runs(system, arch, k, subset)
        if runs.empty:
            return pd.DataFrame(columns=SIDE_RECALL.names)
        if arch == "hybrid":
            frame = self.hybrid_per_query(gold, system).rename(columns={"hybrid_recall": "recall"})
        else:
            frame = self.per_query(None, gold, int(runs["k"].iloc[0]), system)
            frame = frame.rename(columns={f"{arch}_recall": "recall"})
        frame = frame.dropna(subset=["recall"])
        frame = frame if subset is None else frame[frame["subset"] == subset]
        return in_query_order(frame[SIDE_RECALL.names])

    @read_cached
    def side_provenance(self, system: str, arch: str, gold: str = "api_list", k: int | None = None,
                        subset: str | tuple[str, ...] | None = None) -> dict[str, Any]:
        """Where one side's recall comes from: core.analysis.provenance's fields of its system's study, with the
        commits that wrote its own runs (the hybrid may have run on later code than the main study) and their ids;
        `subset`: one, several (those a comparison's rows hold) or every one."""
        runs = self._side_runs(system, arch, k, subset)
        fields = provenance(self.setup(system) if len(runs) else None, gold,
                            int(runs["k"].iloc[0]) if len(runs) else k)
        commits = sorted({str(c)[:10] for c in runs["git_commit"] if c})
        return {**fields, "commit": ", ".join(commits) or None, "run_ids": [int(i) for i in runs["id"]]}

    @read_cached
    def compare_systems(self, a: Side, b: Side, subset: str | None = None, gold: str = "api_list",
                        k: int | None = None) -> pd.DataFrame:
        """Side a against side b query by query (core.analysis.compare.compare_rows; core.analysis.compare.summarise
        adds them up). k None is each system's main k: ValueError when those differ, as recall at two k is no
        comparison."""
        ks = {self._main_k(s.system) for s in (a, b)} - {None}
        if k is None and len(ks) > 1:
            raise ValueError(f"{a.label} and {b.label} have different main k ({', '.join(map(str, sorted(ks)))}): "
                             "name one k")
        return compare_rows(self.side_recall(a.system, a.arch, gold, k, subset),
                            self.side_recall(b.system, b.arch, gold, k, subset))

    @read_cached
    def query_detail(self, subset: str, query_id: int, k: int = 5, backend: str | None = None) -> QueryOutcome | None:
        """Run 0's stored outputs as core.study.query_result's type, with subset, query_id and provenance; each block
        marked under the default gold (api_list) and keeping the store's marks under the others, its plan's pass
        and no retrieval time (the studies retrieve in batches). None when neither RtP nor PtR is stored; `plan`
        is None for k-sweep rows (the planner runs in the main study only). When the stub writer failed, PtR
        searched with the raw query: that stub is stored as core.study.rows.FALLBACK_STUB, since the store never
        holds query texts (show the query from the data directory instead)."""
        if k == self._main_k(backend):  # the main runs, and the hybrid's when it ran on them
            runs = pd.concat([self._selected("main", backend), self._selected("hybrid", backend)])
            runs = runs[(runs["subset"] == subset) & (runs["run_index"] == 0)]
            widest = runs
        else:  # the k sweep stores hits at its largest k only; a smaller k's hits are their prefix
            sweep = self._selected("ksweep", backend)
            sweep = sweep[(sweep["subset"] == subset) & (sweep["run_index"] == 0)]
            runs = sweep[sweep["k"] == k]
            widest = sweep[sweep["k"] == sweep["k"].max()] if len(sweep) else sweep
        engine = self._connect()
        if engine is None or runs.empty:
            return None
        ids = sorted(set(runs["id"].tolist()) | set(widest["id"].tolist()))
        with Session(engine) as session:
            found = session.scalars(select(QueryResult).where(QueryResult.run_id.in_(ids),
                                                              QueryResult.query_uid == f"{subset}:{int(query_id)}")
                                    ).all()
        by_run = {r.run_id: r for r in found}
        hits_by_arch = {arch: by_run[i].hits for arch, i in zip(widest["arch"], widest["id"])
                        if i in by_run and by_run[i].hits is not None}
        blocks = []
        for _, run in runs.iterrows():
            row = by_run.get(run["id"])
            if row is None or row.error is not None:
                continue
            hits = row.hits if row.hits is not None else (hits_by_arch.get(run["arch"]) or [])[:k]
            blocks.append(ArchResult.stored(row, run, hits))
        if not any(b.arch in PAPER_ARCHS for b in blocks):
            return None
        first = runs.iloc[0]
        out = QueryOutcome(k, subset=subset, query_id=int(query_id), provenance={
            **{c: plain(first[c]) for c in PROVENANCE},
            "run_ids": {a: int(i) for a, i in zip(runs["arch"], runs["id"])},
            "started_at": iso_time(runs["started_at"].min()), "finished_at": iso_time(runs["finished_at"].max())})
        for block in blocks:
            out = out.with_block(block)
        return out
