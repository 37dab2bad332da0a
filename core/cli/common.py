"""What every `python -m core` command shares: its parser, options, settings, input checks and retriever.

Every check here runs before anything slow loads, so bad input costs a second, not an index load.
"""
from __future__ import annotations

import argparse
import os
import sqlite3
import sys
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TypeVar

from core.progress import progress_callback
from core.backends import BACKENDS
from core.embedding_models import EMBEDDING_MODELS, LEXICAL, declared_embedding_model
from core.retrieval.discovery import QueryError, check_k
from core.registries import REGISTRY_LIST, registries
from core.settings import BOUNDS, PROJECT_ROOT, Settings, folder_problem
from core.study.catalog import parse_ks
from core.store.dburl import DatabaseUnavailable, StoreNotWritable, normalise, shown, sqlite_disk_trouble

if TYPE_CHECKING:
    from core.analysis.reader import ResultsReader
    from core.data.registry import Registry
    from core.retrieval.assemble import IndexInfo
    from core.retrieval.discovery import Retriever

Handler = Callable[[argparse.Namespace, Settings], int]
T = TypeVar("T")


class UsageError(ValueError):
    """Bad arguments that argparse cannot see (e.g. an unknown subset); exit 2."""


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports a bad argument in one line (no usage block), as every other error here is."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {self.prog}: {message} (see --help)\n")


SUPPORTED_STORES = ("sqlite", "postgresql")
STORE_FORMS = "sqlite:///path/to/results.sqlite or postgresql://user:password@host/database"


def k_value(text: str) -> int:
    """argparse type of a single k: a whole number within BOUNDS["k"] (check_k)."""
    try:
        return check_k(int(text))
    except ValueError as exc:  # QueryError is one
        bounds = BOUNDS["k"]
        raise argparse.ArgumentTypeError(str(exc) if isinstance(exc, QueryError) else
                                         f"k must be a whole number from {bounds.low:g} to {bounds.high:g}, "
                                         f"not {text!r}") from None


def k_values(text: str) -> list[int]:
    """argparse type of a k list (1,3,5): parse_ks, its smallest and largest value checked by check_k."""
    ks = parse_ks(text)
    try:
        for k in (ks[0], ks[-1]):
            check_k(k)
    except QueryError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return ks


def read_store(args: argparse.Namespace, settings: Settings, read: Callable[[ResultsReader], T]) -> T | None:
    """`read` on the results reader of --db and --registry (else DATABASE_URL and REGISTRY; neither: the store's
    default, so a store of one registry reads whole). None after one error line when no complete run is stored; a
    store damaged in the middle ("database disk image is malformed") is raised in one line (open_error)."""
    from sqlalchemy.exc import SQLAlchemyError

    from core.analysis.reader import ResultsReader
    from core.store.dburl import open_error

    url = args.db or settings.results_url
    validate_results_url(url, writer=False)
    try:
        reader = ResultsReader(url, registry=args.registry or os.environ.get("REGISTRY") or None)
        if not reader.available():
            print(f"error: {reader.status()['error'] or 'no complete run stored yet'}", file=sys.stderr)
            return None
        return read(reader)
    except SQLAlchemyError as exc:
        raise open_error(url, exc) from None


def validate_results_url(url: str, *, writer: bool) -> None:
    """Refuse, in one line without the password, a results database URL that cannot work, before anything
    slow loads: one that does not parse, a database other than SQLite or PostgreSQL, and for a writer an
    in-memory SQLite (it keeps nothing) or a SQLite file whose folder cannot be written. Reaching a
    PostgreSQL server is left to the store, which says why it cannot."""
    try:
        parsed = normalise(url)
    except DatabaseUnavailable as exc:
        raise DatabaseUnavailable(f"DATABASE_URL (or --db): {exc}") from None
    kind = parsed.get_backend_name()
    if kind not in SUPPORTED_STORES:
        raise DatabaseUnavailable(f"the results database {shown(url)} is {kind}, which is not supported: "
                                  f"set DATABASE_URL (or --db) to {STORE_FORMS}")
    if kind != "sqlite":
        return
    if not parsed.database or parsed.database == ":memory:":
        if writer:
            raise DatabaseUnavailable("the results database is SQLite in memory, which keeps nothing: "
                                      f"set DATABASE_URL (or --db) to {STORE_FORMS}")
        return
    problem = sqlite_file_problem(Path(parsed.database), writer)
    if problem:
        raise DatabaseUnavailable(f"the results database {shown(url)} {problem}")


def sqlite_file_problem(path: Path, writer: bool) -> str | None:
    """Why a SQLite results file cannot be used (a folder, a damaged file; for a writer, an unwritable file or
    folder) and what to do, or None. A writer needs its folder too: SQLite keeps its WAL and lock files there."""
    elsewhere = "set DATABASE_URL (or --db) elsewhere"
    if path.is_dir():
        return f"is a folder, not a file: {elsewhere}"
    damage = sqlite_damage(path) if path.is_file() else None
    if damage:
        return f"is damaged (SQLite's quick_check: {damage[:200]}): move it aside, or {elsewhere}"
    if not writer:
        return None
    if path.exists() and not os.access(path, os.W_OK):
        return f"is not writable: {elsewhere}"
    problem = folder_problem(path.parent, writable=True)
    return f"{problem}: {elsewhere}" if problem else None


def sqlite_damage(path: Path) -> str | None:
    """SQLite's own quick check of a file, opened read-only so that nothing in it changes; None when intact.
    A file damaged in the middle opens and even takes writes; only reading the damaged pages fails, later.
    A check that a full or read-only disk fails (SQLite writes a WAL database's -shm file even to read it) raises
    StoreNotWritable naming the disk: the file is not called damaged for its disk's sake."""
    try:
        with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as conn:
            verdict = str(conn.execute("PRAGMA quick_check(1)").fetchone()[0])
    except sqlite3.Error as exc:
        disk = sqlite_disk_trouble(path, exc)
        if disk:
            raise StoreNotWritable(f"cannot read the results database {path}: {disk}") from None
        return str(exc)
    return None if verdict == "ok" else " ".join(verdict.replace("*** in database main ***", "").split())


def add_common(parser: argparse.ArgumentParser, backend: bool = False, retriever: bool = False) -> None:
    parser.add_argument("--registry", help="registry: " + "; ".join(f"{r.name} ({r.caption})" for r in REGISTRY_LIST)
                        + "; or one imported with `registry add` (registry list)")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    if backend:
        parser.add_argument("--backend", choices=BACKENDS, help="LLM backend (default: LLM_BACKEND or offline)")
        parser.add_argument("--no-cache", action="store_true", help="bypass the LLM call cache")
    if retriever:
        parser.add_argument("--retriever", help="what searches: a declared embedding model ("
                            + ", ".join(EMBEDDING_MODELS) + f") or {LEXICAL} (default: EMBEDDING_MODEL; `make embed "
                            "MODEL=<name>` installs a model)")


def settings_for(args: argparse.Namespace) -> Settings:
    """The environment's settings with --registry, --backend and --retriever applied (a backend's default model
    too)."""
    env = dict(os.environ)
    if getattr(args, "retriever", None):
        if args.retriever != LEXICAL and declared_embedding_model(args.retriever) is None:
            raise UsageError(f"--retriever must be one of {', '.join([*EMBEDDING_MODELS, LEXICAL])}, not "
                             f"{args.retriever[:60]!r}")
        env["EMBEDDING_MODEL"] = args.retriever
    if getattr(args, "backend", None):
        env["LLM_BACKEND"] = args.backend
    if getattr(args, "registry", None):
        known = [r.name for r in registries(PROJECT_ROOT)]
        if args.registry not in known:
            raise UsageError(f"--registry must be one of {', '.join(known)}, not {args.registry!r}")
        env["REGISTRY"] = args.registry
    return Settings.from_env(env=env)


def notice(message: str) -> None:
    print(message, file=sys.stderr)


def retriever_for(settings: Settings, use_artifact: bool = True,
                  registry: Registry | None = None) -> tuple[Retriever, IndexInfo]:
    """The configured retriever (or one over `registry`), with an embedding progress bar; imported here, as FAISS
    is slow to import. A CACHE_DIR that cannot be a folder is refused first (a read-only one only costs speed)."""
    from core.retrieval.assemble import build_retriever

    problem = folder_problem(settings.cache_dir, writable=False)
    if problem:
        raise UsageError(f"CACHE_DIR {settings.cache_dir} {problem}; set CACHE_DIR to a folder")

    return build_retriever(settings, registry=registry, progress=progress_callback("embedding registry"),
                           notify=notice, use_artifact=use_artifact)
