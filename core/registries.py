"""The registries the lab ships, each declared once: name, benchmark, source format, files, what the picker says.

Settings (REGISTRY), the CLI's --registry, the sidebar's picker, the index files and every stored run's provenance
(registry_name) read these declarations. ToolBench's two ("full", "documented") are read from the ToolBench data
folder (TOOLBENCH_DATA); the others from their folder under data/registries/, built by core.data.benchmarks.build.
`source` names a registry source of core.data.sources, which reads the files; this module sits below every layer
and imports none of them.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RegistryDecl:
    """One registry and its test queries. `folder` is under data/registries/ (None: the ToolBench data folder)."""

    name: str        # stored in every run (registry_name): never rename one
    benchmark: str   # "ToolBench", "Seal-Tools", "LiveMCPBench": what the cross-registry charts group by
    source: str      # core.data.sources: toolbench, openapi, mcp, jsonl
    caption: str     # the sidebar picker's line
    folder: str | None = None
    tools: str = ""          # the tools file inside `folder`
    queries: str = "queries.jsonl"  # the query set inside `folder` (core.data.query_sets' format)

    @property
    def is_toolbench(self) -> bool:
        return self.folder is None


REGISTRY_LIST = (
    RegistryDecl("full", "ToolBench", "toolbench", "ToolBench, ~47k APIs: the paper's scale"),
    RegistryDecl("documented", "ToolBench", "toolbench", "ToolBench, 4,940 documented APIs"),
    RegistryDecl("sealtools", "Seal-Tools", "jsonl", "Seal-Tools, 4,076 synthetic APIs: queries close to the docs",
                 folder="sealtools", tools="tools.jsonl.gz"),
    RegistryDecl("livemcpbench", "LiveMCPBench", "mcp", "LiveMCPBench, 527 tools of 70 real MCP servers",
                 folder="livemcpbench", tools="tools.json"),
)
REGISTRIES_BY_NAME = {r.name: r for r in REGISTRY_LIST}
REGISTRIES = tuple(REGISTRIES_BY_NAME)
DEFAULT_REGISTRY = "full"


def registry_decl(name: str) -> RegistryDecl:
    """The declaration of `name`; ValueError naming the known ones otherwise."""
    try:
        return REGISTRIES_BY_NAME[name]
    except KeyError:
        raise ValueError(f"REGISTRY must be one of {', '.join(REGISTRIES)}, not {name!r}") from None
