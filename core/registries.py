"""The registries the lab ships, each declared once: name, benchmark, source format, files, what the picker says.

Settings (REGISTRY), the CLI's --registry, the sidebar's picker, the index files and every stored run's provenance
(registry_name) read these declarations. ToolBench's two ("full", "documented") are read from the ToolBench data
folder (TOOLBENCH_DATA); the others from their folder under data/registries/, built by core.data.benchmarks.build.
A team's own registries (`python -m core registry add`) are declared by the manifest.json of their folder under
data/imported/, read here. `source` names a registry source of core.data.sources, which reads the files; this
module sits below every layer and imports none of them.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RegistryDecl:
    """One registry and its test queries. `folder` is under data/ (None: the ToolBench data folder)."""

    name: str        # stored in every run (registry_name): never rename one
    benchmark: str   # "ToolBench", "Seal-Tools", "LiveMCPBench": what the cross-registry charts group by
    source: str      # core.data.sources: toolbench, openapi, mcp, jsonl
    caption: str     # the sidebar picker's line
    folder: str | None = None
    tools: str = ""          # the tools file (or folder) inside `folder`
    queries: str = "queries.jsonl"  # the query set inside `folder` (core.data.query_sets' format); "": none
    imported: bool = False   # a team's own (data/imported/): `registry remove` may delete it
    study: str | None = None  # the registry whose stored study the result pages show (None: its own)

    @property
    def is_toolbench(self) -> bool:
        return self.folder is None

    @property
    def study_registry(self) -> str:
        return self.study or self.name


REGISTRY_LIST = (
    RegistryDecl("full", "ToolBench", "toolbench", "ToolBench, ~47k APIs: the paper's scale"),
    RegistryDecl("documented", "ToolBench", "toolbench", "ToolBench, 4,940 documented APIs",
                 study="full"),  # the study runs on the paper-scale registry; its live index is the smaller one
    RegistryDecl("sealtools", "Seal-Tools", "jsonl", "Seal-Tools, 4,076 synthetic APIs: queries close to the docs",
                 folder="registries/sealtools", tools="tools.jsonl.gz"),
    RegistryDecl("livemcpbench", "LiveMCPBench", "mcp", "LiveMCPBench, 527 tools of 70 real MCP servers",
                 folder="registries/livemcpbench", tools="tools.json"),
)
REGISTRIES_BY_NAME = {r.name: r for r in REGISTRY_LIST}
REGISTRIES = tuple(REGISTRIES_BY_NAME)  # the shipped ones; registries(root) adds a checkout's imported ones
DEFAULT_REGISTRY = "full"
IMPORTED = "imported"  # data/imported/<name>/: a team's registries
MANIFEST = "manifest.json"


def imported(root: Path) -> tuple[RegistryDecl, ...]:
    """The registries imported into the checkout at `root`, by name; a folder whose manifest cannot be read is
    left out here (`registry list` says which)."""
    out = []
    for path in sorted((root / "data" / IMPORTED).glob(f"*/{MANIFEST}")):
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
            out.append(RegistryDecl(str(manifest["name"]), str(manifest["name"]), str(manifest["format"]),
                                    f"imported: {int(manifest['apis']):,} APIs ({manifest['format']})",
                                    folder=f"{IMPORTED}/{path.parent.name}", tools=str(manifest["tools"]),
                                    queries=str(manifest.get("queries") or ""), imported=True))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return tuple(r for r in out if r.name not in REGISTRIES_BY_NAME)


def registries(root: Path | None = None) -> tuple[RegistryDecl, ...]:
    """The shipped registries, then those imported at `root` (None: the shipped ones only)."""
    return REGISTRY_LIST + (imported(root) if root is not None else ())


def registry_decl(name: str, root: Path | None = None) -> RegistryDecl:
    """The declaration of `name` (shipped, or imported at `root`); ValueError naming the known ones otherwise."""
    known = {r.name: r for r in registries(root)}
    try:
        return known[name]
    except KeyError:
        raise ValueError(f"REGISTRY must be one of {', '.join(known)}, not {name!r}") from None
