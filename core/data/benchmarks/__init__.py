"""Converters of the benchmarks that ship with the lab (Seal-Tools, LiveMCPBench): their raw files to the lab's
registry and query-set formats, so that a clone has three registries with gold and says how each was made.

Each converter module gives `convert(raw_dir) -> Converted`; `build` writes them into data/registries/ and checks
every one by reading it back the way an import does (core.data.query_sets).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from core.data.toolbench import Api


@dataclass(frozen=True)
class Converted:
    """One benchmark in the lab's formats, before it is written."""

    tools_file: str                                # its file name in the output folder
    tools: bytes                                   # that file's exact bytes
    read_tools: Callable[[Path, str], list[Api]]   # the registry reader that reads it back (path, registry name)
    queries: tuple[dict, ...]                      # query-set rows (core.data.query_sets), in file order
    inputs: tuple[Path, ...]                       # the raw files it was made from
    notes: dict = field(default_factory=dict)      # what the conversion did, for conversion.json
