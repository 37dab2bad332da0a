"""`python -m core registry add|list|remove`: bring a team's own tools (OpenAPI, MCP tool lists, JSONL), with
their queries, into the lab beside the shipped registries; embedded once, atomically (core.data.imports)."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from core.cli.common import notice, retriever_for
from core.data.sources import SOURCES
from core.registries import registries
from core.settings import Settings


def cmd_registry(args: argparse.Namespace, settings: Settings) -> int:
    from core.data import imports

    root = settings.root
    if args.action == "list":
        rows = [{"name": r.name, "benchmark": r.benchmark, "format": r.source, "imported": r.imported,
                 "caption": r.caption} for r in registries(root)]
        damaged = sorted(p.parent.name for p in imports.imported_dir(root).glob("*/") if not p.name.startswith(".")
                         and p.name not in {r["name"] for r in rows})
        if args.json:
            print(json.dumps({"registries": rows, "unreadable": damaged}))
        else:
            for r in rows:
                print(f"{r['name']:>14}  {r['format']:<9} {'imported' if r['imported'] else 'shipped ':8}  "
                      f"{r['caption']}")
            for name in damaged:
                print(f"{name:>14}  (its manifest cannot be read: `registry remove` cannot see it; delete "
                      f"data/{imports.IMPORTED}/{name} by hand)")
        return 0
    if args.action == "remove":
        folder = imports.remove(root, args.name)
        print(f"removed {args.name} ({folder})")
        return 0
    staged = imports.stage(root, args.name, args.format, Path(args.path), Path(args.queries) if args.queries else None)
    try:
        if staged.query_set is not None:
            from core.data.query_sets import summary

            notice(summary(staged.query_set))
        # Embedded before it appears, so a registry that shows is one that answers (the vectors are cached by content).
        _, info = retriever_for(settings, registry=staged.registry)
        final = imports.commit(staged)
    except BaseException:
        imports.discard(staged)
        raise
    manifest = staged.manifest
    if args.json:
        print(json.dumps({**manifest, "folder": str(final), "embedding_s": round(info.seconds, 2)}))
    else:
        print(f"added {args.name}: {manifest['apis']:,} APIs of {manifest['tools_count']:,} tools ({args.format}), "
              f"{manifest['queries_count']:,} queries, {len(manifest['unresolved'])} unresolved gold names; "
              f"embedded in {info.seconds:.1f} s. Use it with --registry {args.name} or the sidebar.")
    return 0


def register(subparsers: argparse._SubParsersAction, handlers: dict) -> None:
    p = subparsers.add_parser("registry", help="add, list or remove a registry of your own tools",
                              description="add NAME FORMAT PATH [--queries FILE]: read an OpenAPI spec, MCP tool lists "
                                          "or a JSONL of tools (and a query set: one JSON object a line, "
                                          '{"id", "query", "gold": [names], "subset"?}), embed it and store it under '
                                          "data/imported/NAME with its manifest, atomically. list: every registry. "
                                          "remove NAME: an imported one.")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = actions.add_parser("add", help="import a registry")
    add.add_argument("name", help="1-40 lowercase letters, digits, - or _")
    add.add_argument("format", choices=[s for s in SOURCES if s != "toolbench"])
    add.add_argument("path", help="the file or folder of tools")
    add.add_argument("--queries", help="a query-set JSONL scored against it")
    add.add_argument("--json", action="store_true", help="print machine-readable JSON")
    listing = actions.add_parser("list", help="every registry, shipped and imported")
    listing.add_argument("--json", action="store_true", help="print machine-readable JSON")
    gone = actions.add_parser("remove", help="delete an imported registry")
    gone.add_argument("name")
    handlers["registry"] = cmd_registry
