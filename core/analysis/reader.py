"""App-side read API over the results store: what the dashboard pages, the report and the CLI call, and nothing else.

`ResultsReader(url)` is composed of one class per concept, each in its own module:
- core.analysis.run_reader: the runs (`runs`, `status`, `setup`, `backends`, `study_with`) and the cache that keeps
  every table per set of complete runs; core.analysis.run_selection picks the runs a table is computed from, and
  core.analysis.stored_rows reads their rows and run means from the store;
- core.analysis.query_tables: one row per query (`per_query` and the tables read off it, `query_detail`);
- core.analysis.study_tables: per-subset summaries of a study (`main_table`, `ksweep`, `scaling`, `cost`, ...);
- core.analysis.router_tables: the adaptive router (`router_table`, `router_curve`, `router_fit`, `router_signal`).
Every table's columns are declared in core.analysis.table_schemas.
"""
from __future__ import annotations

from core.analysis.router_tables import RouterTables
from core.analysis.study_tables import StudyTables


class ResultsReader(StudyTables, RouterTables):
    """Read-only view of one results database for the pages, the report and the CLI."""
