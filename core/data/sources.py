"""The registry sources, each declared once: a name, how to recognise its input, how to read it into APIs.

A registry (core.registries) names its source; `python -m core registry add` and the Registry page's upload sniff
one with `recognise`. Every reader builds an Api whose document is Api.document: "{tool}/{api}: {description}",
then its parameters' names and descriptions; what goes into the description is the source's (an OpenAPI
operation's summary and description, an MCP tool's description).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from core.data import jsonl_tools, mcp, openapi
from core.data.toolbench import Api, DataUnreadable, is_official_layout, load_registry


@dataclass(frozen=True)
class Source:
    """One input format. `read(path, name)`: the APIs in a file or folder (`name`, the registry's, names the tool
    where the input gives none); DataUnreadable, one line, for input it cannot use."""

    name: str
    description: str
    recognises: Callable[[Path], bool]
    read: Callable[[Path, str], list[Api]]


def _toolbench_recognises(path: Path) -> bool:
    """ToolBench's compact files (registry_full.jsonl.gz, ...) or its official download layout."""
    return path.is_dir() and (is_official_layout(path) or any(path.glob("registry*.jsonl*")))


SOURCE_LIST = (
    Source("toolbench", "ToolBench: its compact files or its official download layout (toolenv/tools)",
           _toolbench_recognises, load_registry),
    Source("openapi", "OpenAPI 3.0/3.1 or Swagger 2.0, JSON or YAML, one file or a folder: an operation an API",
           openapi.recognises, openapi.read),
    Source("mcp", "MCP tools/list results: a file per server, a folder of them, or a list of servers",
           mcp.recognises, mcp.read),
    Source("jsonl", 'JSONL, one API a line: {"tool", "api", "description", "category"?, "parameters"?}',
           jsonl_tools.recognises, jsonl_tools.read),
)
SOURCES = {s.name: s for s in SOURCE_LIST}


def source(name: str) -> Source:
    try:
        return SOURCES[name]
    except KeyError:
        raise ValueError(f"format must be one of {', '.join(SOURCES)}, not {name!r}") from None


def recognise(path: Path) -> Source:
    """The one source that recognises `path`; DataUnreadable naming the formats when none or several do."""
    found = [s for s in SOURCE_LIST if s.recognises(path)]
    if len(found) != 1:
        what = "no known format" if not found else f"several formats ({', '.join(s.name for s in found)})"
        raise DataUnreadable(f"{path.name} is in {what}; name one of {', '.join(SOURCES)}")
    return found[0]
