"""`python -m core db copy SRC DST`: move stored runs between results stores (SQLite, PostgreSQL)."""
from __future__ import annotations

import argparse
import json
import sys

from core.settings import Settings

COPY_HELP = ("Copy every finished run (complete or skipped) of SRC, with its rows, into DST (created if empty). A run "
             "already in DST (same spec and start time) is not copied again, so a copy can be repeated; running or "
             "failed runs are left out. Each run's row count is read back from DST before it commits. SRC and DST "
             "are SQLAlchemy URLs, e.g. sqlite:///data/results.sqlite and postgresql://user:password@host/db.")


def cmd_db(args: argparse.Namespace, settings: Settings) -> int:
    from core.store.db_copy import CopyMismatch, copy_runs

    try:
        report = copy_runs(args.src, args.dst)
    except CopyMismatch as exc:
        print(f"error: the copy stopped: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(report.as_dict()))
        return 0
    print(f"copied {len(report.copied)} run(s) with {report.rows:,} query rows from {report.source} to {report.target} "
          f"(each run's rows counted in both); {len(report.already_there)} already there, "
          f"{len(report.left_out)} unfinished left out")
    return 0


def register(subparsers: argparse._SubParsersAction, handlers: dict) -> None:
    """Add `db` (with its one action, `copy`) to the `python -m core` parser."""
    p = subparsers.add_parser("db", help="copy stored runs between results stores (SQLite, PostgreSQL)",
                              description="Results store maintenance.")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    c = actions.add_parser("copy", help="copy finished runs from SRC to DST, never twice", description=COPY_HELP)
    c.add_argument("src", help="results database URL to copy from")
    c.add_argument("dst", help="results database URL to copy into")
    c.add_argument("--json", action="store_true", help="print machine-readable JSON")
    handlers["db"] = cmd_db
