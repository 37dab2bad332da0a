"""A team's own registry, imported atomically: read and checked in a staging folder, then renamed into
data/imported/<name>/ with its manifest (format, input files and their sha256, counts, unresolved gold, when).

The registry appears complete or not at all: a failure at any step (an unreadable file, a gold list that names
nothing, the embedding) removes the staging folder, and nothing under data/imported/ changes.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from core.data.query_sets import QuerySet, read_query_set
from core.data.registry import Registry
from core.data.sources import source
from core.data.toolbench import DataUnreadable
from core.files import cannot_write, ensure_folder, write_atomic
from core.registries import IMPORTED, MANIFEST, registries

NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")
MAX_INPUT_BYTES = 50 * 1024 * 1024  # one input file or folder, as the readers refuse beyond it


@dataclass(frozen=True)
class Staged:
    """An import read and checked, not yet visible: `folder` is its staging folder."""

    name: str
    folder: Path
    final: Path
    registry: Registry
    query_set: QuerySet | None
    manifest: dict


def imported_dir(root: Path) -> Path:
    return root / "data" / IMPORTED


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _files(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]


def check_name(name: str, root: Path) -> None:
    """ValueError, one line, for a name that is not a lowercase slug or is already taken."""
    if not NAME.fullmatch(name):
        raise ValueError(f"a registry name is 1-40 lowercase letters, digits, - or _, starting with a letter or digit; "
                         f"not {name!r}")
    if name in {r.name for r in registries(root)} or (imported_dir(root) / name).exists():
        raise ValueError(f"a registry named {name!r} exists already; `registry remove {name}` first, or pick another name")


def stage(root: Path, name: str, fmt: str, path: Path, queries: Path | None = None) -> Staged:
    """Read `path` as `fmt` (and `queries`, if given) into a staging folder; DataUnreadable or ValueError, one
    line, for anything it cannot use, with the staging folder removed."""
    check_name(name, root)
    reader = source(fmt)
    if not path.exists():
        raise DataUnreadable(f"{path} does not exist")
    size = sum(p.stat().st_size for p in _files(path))
    if size > MAX_INPUT_BYTES:
        raise DataUnreadable(f"{path.name} is {size / 2**20:.0f} MB; an import takes at most {MAX_INPUT_BYTES // 2**20} MB")
    base = imported_dir(root)
    ensure_folder(base)
    folder = base / f".{name}.staging-{os.getpid()}"
    shutil.rmtree(folder, ignore_errors=True)
    ensure_folder(folder)
    try:
        tools = "tools" + ("" if path.is_dir() else "".join(path.suffixes[-2:] if path.name.endswith(".gz") else path.suffixes[-1:]))
        apis = reader.read(path, name)  # the input itself, so that a message names the user's file
        registry = Registry(name, tuple(apis))
        query_set = read_query_set(queries, apis) if queries is not None else None
        try:
            (shutil.copytree if path.is_dir() else shutil.copyfile)(path, folder / tools)
            if queries is not None:
                shutil.copyfile(queries, folder / "queries.jsonl")
        except OSError as exc:
            raise cannot_write(exc, folder / tools) from None
        inputs = [{"file": str(p.relative_to(folder)), "bytes": p.stat().st_size, "sha256": _sha256(p)}
                  for p in _files(folder)]
        manifest = {"name": name, "format": fmt, "tools": tools, "queries": "queries.jsonl" if queries else "",
                    "apis": len(apis), "tools_count": len({a.tool_name for a in apis}),
                    "queries_count": len(query_set.queries) if query_set else 0,
                    "unresolved": [{"query": u.query_uid, "name": u.name, "candidates": [list(c) for c in u.candidates]}
                                   for u in (query_set.unresolved if query_set else ())],
                    "dropped_queries": list(query_set.dropped) if query_set else [],
                    "inputs": inputs, "source_paths": [str(path), *([str(queries)] if queries else [])],
                    "registry_hash": registry.content_hash, "created": datetime.now(timezone.utc).isoformat()}
        return Staged(name, folder, base / name, registry, query_set, manifest)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def commit(staged: Staged) -> Path:
    """Write the manifest and rename the staging folder into place: the registry appears whole (CannotWrite, in
    words, when the disk is full or read-only; the caller discards the staging folder)."""
    write_atomic(staged.folder / MANIFEST, json.dumps(staged.manifest, indent=1, ensure_ascii=False))
    try:
        os.rename(staged.folder, staged.final)
    except OSError as exc:
        raise cannot_write(exc, staged.final) from None
    return staged.final


def discard(staged: Staged) -> None:
    shutil.rmtree(staged.folder, ignore_errors=True)


def remove(root: Path, name: str) -> Path:
    """Delete an imported registry's folder; ValueError for a shipped one or a name not imported."""
    folder = imported_dir(root) / name
    if not NAME.fullmatch(name) or not (folder / MANIFEST).is_file():
        shipped = {r.name for r in registries(None)}
        raise ValueError(f"{name!r} ships with the lab and cannot be removed" if name in shipped else
                         f"no imported registry named {name!r} (see `registry list`)")
    staging = folder.with_name(f".{name}.removing-{os.getpid()}")
    os.rename(folder, staging)  # gone at once for every reader, then deleted
    shutil.rmtree(staging)
    return folder
