"""What every `python -m core` command shares: its options, its settings and its retriever."""
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from core.progress import progress_callback
from core.backends import BACKENDS
from core.settings import REGISTRIES, Settings

if TYPE_CHECKING:
    from core.retrieval.assemble import IndexInfo
    from core.retrieval.discovery import Retriever

Handler = Callable[[argparse.Namespace, Settings], int]


class UsageError(ValueError):
    """Bad arguments that argparse cannot see (e.g. an unknown subset); exit 2."""


def add_common(parser: argparse.ArgumentParser, backend: bool = False) -> None:
    parser.add_argument("--registry", choices=REGISTRIES, help="registry: full (~47k, default) or documented (4,940)")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    if backend:
        parser.add_argument("--backend", choices=BACKENDS, help="LLM backend (default: LLM_BACKEND or offline)")
        parser.add_argument("--no-cache", action="store_true", help="bypass the LLM call cache")


def settings_for(args: argparse.Namespace) -> Settings:
    """The environment's settings with --registry and --backend applied (a backend's default model too)."""
    env = dict(os.environ)
    if getattr(args, "backend", None):
        env["LLM_BACKEND"] = args.backend
    if getattr(args, "registry", None):
        env["REGISTRY"] = args.registry
    return Settings.from_env(env=env)


def notice(message: str) -> None:
    print(message, file=sys.stderr)


def retriever_for(settings: Settings, use_artifact: bool = True) -> tuple[Retriever, IndexInfo]:
    """The configured retriever, with an embedding progress bar; imported here, as FAISS is slow to import."""
    from core.retrieval.assemble import build_retriever

    return build_retriever(settings, progress=progress_callback("embedding registry"), notify=notice,
                           use_artifact=use_artifact)
