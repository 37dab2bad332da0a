"""`python -m core embed` (`make embed MODEL=...`): install a declared embedding model, hash-pinned and verified,
and build its index of every shipped registry, smallest first.

Each index is built in chunks that survive a kill (core.retrieval.chunked_build), under the build lock, with a
progress bar and its ETA; a finished index is loaded from the cache in seconds, so running it again only checks.
"""
from __future__ import annotations

import argparse
import json
import time

from core.cli.common import retriever_for
from core.embedding_models import EMBEDDING_MODELS, embedding_model_spec
from core.registries import REGISTRIES
from core.settings import Settings


def embed(settings: Settings, model: str, registries: list[str]) -> list[dict]:
    """One row per registry: the model, its install, where the index came from and how long it took."""
    from core.data.loaders import registry_for
    from core.retrieval.embed_install import install

    spec = embedding_model_spec(model)
    start = time.perf_counter()
    folder = install(spec, settings.cache_dir)
    installed_s = time.perf_counter() - start
    print(f"{spec.name}: installed and verified in {folder} ({installed_s:.1f} s)", flush=True)
    rows = []
    sized = sorted(registries, key=lambda name: len(registry_for(settings.with_(registry=name))))
    for name in sized:
        one = settings.with_(embedding_model=spec.name, registry=name)
        _, info = retriever_for(one)
        rows.append({"model": spec.name, "model_id": spec.model_id, "registry": name, "apis": info.size,
                     "dim": info.dim, "runtime": info.runtime, "source": info.source,
                     "seconds": round(info.seconds, 1), "install_s": round(installed_s, 1)})
        print(f"  {name}: {info.size:,} APIs, {info.source} in {info.seconds:.1f} s ({info.runtime})", flush=True)
    return rows


def cmd_embed(args: argparse.Namespace, settings: Settings) -> int:
    models = list(EMBEDDING_MODELS) if args.model == "all" else [args.model or settings.embedding_model]
    registries = list(REGISTRIES) if args.registries == "all" else args.registries.split(",")
    unknown = [name for name in registries if name not in REGISTRIES]
    if unknown:
        raise ValueError(f"--registries: {', '.join(unknown)} is not a shipped registry ({', '.join(REGISTRIES)})")
    rows = [row for model in models for row in embed(settings, model, registries)]
    if args.json:
        print(json.dumps(rows))
    return 0


def register_embed(sub: argparse._SubParsersAction, handlers: dict) -> None:
    p = sub.add_parser("embed", help="install a declared embedding model and build its indexes (make embed)",
                       description="Install a declared embedding model (hash-pinned download, assembled, verified) and "
                                   "build its index of every shipped registry; a killed build resumes.")
    p.add_argument("--model", default="", help=f"a declared model ({', '.join(EMBEDDING_MODELS)}) or 'all' "
                                               "(default: EMBEDDING_MODEL)")
    p.add_argument("--registries", default="all", help=f"comma-separated, of {', '.join(REGISTRIES)}; or 'all' "
                                                       "(default)")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    handlers["embed"] = cmd_embed
