"""MCP servers' tool lists (a `tools/list` result per file, a folder of them, or a list of servers) read as APIs,
so a team can bring the MCP servers its agent uses. LiveMCPBench's tools.json is such a list.

tool = the server's name (a file's top-level "name" or "serverInfo.name", else the file's stem), api = the MCP
tool's name, parameters from its inputSchema. A list of servers holds {name, category, tools}, where `tools` is
either a tools/list result's list or, as in LiveMCPBench, a mapping of server keys to tools/list results.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from core.data.schema_params import DanglingRef, Refs, parse_json, read_text, schema_params, text, unique, unreadable
from core.data.toolbench import Api

SNIFF_BYTES = 64 * 1024


def _files(path: Path) -> list[Path]:
    return sorted(p for p in path.glob("*.json") if p.is_file()) if path.is_dir() else [path]


def _sniff(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            head = fh.read(SNIFF_BYTES)
    except OSError:
        return False
    return path.suffix.lower() == ".json" and b'"tools"' in head and b'"inputSchema"' in head


def recognises(path: Path) -> bool:
    """A .json file naming "tools" and "inputSchema" near its start, or a folder whose every .json file does."""
    files = _files(path) if path.exists() else []
    return bool(files) and all(_sniff(p) for p in files)


def read(path: Path, name: str) -> list[Api]:
    """Every tool of every server in the file (or the folder's files, sorted) as an Api. `name` is not needed: a
    server is named by its file. A (server, tool) pair listed twice is kept once if both are the same, else refused."""
    files = _files(path)
    if not files:
        raise unreadable(path, "holds no MCP tool list (.json file)")
    return unique((api for file in files for api in _read_file(file)), path, "MCP tool")


def _read_file(path: Path) -> Iterator[Api]:
    doc = parse_json(path, read_text(path))
    if isinstance(doc, list):
        for number, server in enumerate(doc, 1):
            yield from _server(path, server, f"server #{number}", None)
        return
    result = doc.get("result") if isinstance(doc, Mapping) else None  # a whole JSON-RPC response
    yield from _server(path, result if isinstance(result, Mapping) else doc, "the file", path.stem)


def _server_name(server: Mapping, fallback: str | None) -> Any:
    info = server.get("serverInfo")
    return server.get("name") or (info.get("name") if isinstance(info, Mapping) else None) or fallback


def _server(path: Path, server: Any, where: str, fallback: str | None) -> Iterator[Api]:
    if not isinstance(server, Mapping):
        raise unreadable(path, f"{where} is {type(server).__name__}, not an MCP server (a mapping with `tools`)")
    name = _server_name(server, fallback)
    if not isinstance(name, str):
        raise unreadable(path, f"{where} has no name")
    category = server.get("category") if isinstance(server.get("category"), str) else ""
    for number, tool in enumerate(_tool_list(path, server, name), 1):
        yield _api(path, name, category, tool, f"server {name!r} tool #{number}")


def _tool_list(path: Path, server: Mapping, name: str) -> list:
    """The server's tools: a tools/list list, or the lists of a mapping of server keys to tools/list results."""
    tools = server.get("tools")
    if isinstance(tools, list):
        return tools
    if isinstance(tools, Mapping) and all(isinstance(v, Mapping) and isinstance(v.get("tools"), list)
                                          for v in tools.values()):
        return [tool for result in tools.values() for tool in result["tools"]]
    raise unreadable(path, f"server {name!r} has no `tools` list (a tools/list result, or a mapping of them)")


def _api(path: Path, server: str, category: str, tool: Any, where: str) -> Api:
    if not isinstance(tool, Mapping) or not isinstance(tool.get("name"), str) or not tool["name"]:
        raise unreadable(path, f"{where} has no name")
    schema = tool.get("inputSchema")
    try:
        params = schema_params(schema, Refs.checked(schema))
    except DanglingRef as exc:
        raise unreadable(path, f"{where} ({tool['name']!r}): {exc}") from None
    description = text(tool.get("description"))
    return Api(server, tool["name"], category, description, "full" if description else "name_only", params, "mcp")
