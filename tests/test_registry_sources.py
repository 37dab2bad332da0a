"""The registry readers (core/data/openapi.py, mcp.py, jsonl_tools.py and their shared schema_params.py): each
format's fixture becomes the right Apis, every bad input is one clear line naming the file, the sniffs tell the
formats apart, and LiveMCPBench's tools.json gives the counts its SOURCES.md states."""
from __future__ import annotations

import gzip
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from core.data import jsonl_tools, mcp, openapi
from core.data.schema_params import MAX_BYTES, Refs, params_of, schema_params
from core.data.toolbench import Api, DataUnreadable, Param
from core.settings import PROJECT_ROOT

FIXTURES = PROJECT_ROOT / "tests" / "fixtures" / "registries"
SHIPPED_LIVEMCPBENCH = PROJECT_ROOT / "data" / "registries" / "livemcpbench" / "tools.json"
SHARED_LIVEMCPBENCH = PROJECT_ROOT.parent / "shared" / "registries" / "livemcpbench" / "tools.json"
LIVEMCPBENCH = SHIPPED_LIVEMCPBENCH if SHIPPED_LIVEMCPBENCH.is_file() else SHARED_LIVEMCPBENCH
CHINESE = re.compile(r"[\u4e00-\u9fff]")

Reader = Callable[[Path, str], list[Api]]


def by_name(apis: list[Api]) -> dict[str, Api]:
    return {api.api_name: api for api in apis}


def refused(read: Reader, path: Path, *words: str) -> str:
    """The one-line message read(path) is refused with; it names the file and says each of `words`."""
    with pytest.raises(DataUnreadable) as caught:
        read(path, "fallback")
    message = str(caught.value)
    assert "\n" not in message and path.name in message, message
    assert all(word in message for word in words), message
    return message


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def spec(paths: object, **extra: object) -> str:
    return json.dumps({"openapi": "3.1.0", "info": {"title": "T"}, "paths": paths, **extra})


# ------------------------------------------------------------------------------------------------ OpenAPI

def test_openapi3_yaml_operations_become_apis_with_aliases_and_parameters():
    apis = by_name(openapi.read(FIXTURES / "petstore.yaml", "fallback"))
    assert list(apis) == ["listPets", "createPet", "GET /pets/{petId}", "pets/remove one", "ペットを更新", "loop"]
    assert {api.tool_name for api in apis.values()} == {"Petstore"}
    assert {api.source for api in apis.values()} == {"openapi"}
    listing = apis["listPets"]
    assert (listing.aliases, listing.category, listing.doc_source) == (("GET /pets",), "pets", "full")
    assert listing.description == "List all pets. Returns every pet, page by page."
    # the operation's own `limit` overrides the path's; the path's header parameter is kept
    assert listing.parameters == (Param("limit", "How many pets at most (the operation's own).", "integer", True),
                                  Param("trace", "A trace id.", "string", False))
    assert listing.document == ("Petstore/listPets: List all pets. Returns every pet, page by page. Parameters: "
                                "limit: How many pets at most (the operation's own).; trace: A trace id.")


def test_openapi_request_body_refs_are_resolved_and_cycles_cut():
    apis = by_name(openapi.read(FIXTURES / "petstore.yaml", "fallback"))
    body = {p.name: p for p in apis["createPet"].parameters}
    assert body["limit"] == Param("limit", "How many pets at most (the path's).", "integer", False)
    assert body["name"] == Param("name", "The pet's name.", "string", True)
    assert body["tag"] == Param("tag", "A free tag.", "string", False)         # "tag~0name" -> "tag~name"
    assert body["parent"] == Param("parent")  # Pet inside Pet: the ref on the stack resolves to an empty schema
    assert body["owner"] == Param("owner")    # an external ref is left unresolved, not fetched
    # allOf of itself, and Loop1 -> Loop2 -> Loop1: cut, not followed forever; JSON is preferred over text/plain
    assert apis["ペットを更新"].parameters == (Param("label", "The node's label.", "string|null"), Param("next"))
    assert apis["loop"].parameters == ()


def test_openapi_names_without_operation_id_and_odd_names_are_kept():
    apis = by_name(openapi.read(FIXTURES / "petstore.yaml", "fallback"))
    by_path = apis["GET /pets/{petId}"]
    assert by_path.aliases == ("GET /pets/{petId}",) and by_path.category == ""
    assert by_path.parameters == (Param("petId", "The pet's id.", "string", True),)  # its schema via "Id~1Type"
    odd = apis["pets/remove one"]
    assert (odd.aliases, odd.description, odd.doc_source) == (("DELETE /pets/{petId}",), "", "name_only")
    assert odd.document == "Petstore/pets/remove one:  Parameters: petId"
    assert apis["ペットを更新"].aliases == ("PUT /nodes",)


def test_swagger2_json_reads_path_parameters_form_data_and_the_body_schema():
    apis = by_name(openapi.read(FIXTURES / "swagger.json", "fallback"))
    assert list(apis) == ["getOrder", "updateOrder", "HEAD /health"]
    assert {api.tool_name for api in apis.values()} == {"Legacy Shop"}
    assert apis["getOrder"].parameters == (Param("id", "The order.", "string", True),)
    assert apis["updateOrder"].parameters == (Param("id", "The order.", "string", True),
                                              Param("note", "A note.", "string", False),
                                              Param("qty", "How many.", "integer", True), Param("item", "", "string"))
    assert apis["updateOrder"].aliases == ("PUT /orders/{id}",)
    assert apis["HEAD /health"].doc_source == "name_only"


def test_openapi_without_a_title_uses_the_name_given_and_a_folder_is_read_sorted(tmp_path):
    write(tmp_path / "b.json", spec({"/b": {"get": {"operationId": "b"}}}, info={}))
    write(tmp_path / "a.yaml", "swagger: '2.0'\npaths:\n  /a:\n    post: {operationId: a}\n")
    apis = openapi.read(tmp_path, "internal")
    assert [(api.tool_name, api.api_name, api.aliases) for api in apis] == [
        ("internal", "a", ("POST /a",)), ("internal", "b", ("GET /b",))]


@pytest.mark.parametrize("name, text, words", [
    ("broken.json", '{"openapi": "3.0.0",\n "paths": {,}}', ("not valid JSON", "line 2")),
    ("broken.yaml", "openapi: 3.0.0\npaths:\n  /a: [unclosed\n", ("not valid YAML", "line ")),
    ("list.yaml", "- openapi: 3.0.0\n", ("not a mapping",)),
    ("noversion.json", json.dumps({"info": {"title": "T"}, "paths": {"/a": {"get": {}}}}), ("`openapi` or `swagger`",)),
    ("nopaths.json", json.dumps({"openapi": "3.0.0", "info": {"title": "T"}}), ("no paths",)),
    ("emptypaths.json", spec({}), ("no paths",)),
    ("noops.json", spec({"/a": {"parameters": [], "summary": "x"}}), ("no operations",)),
    ("dangling.json", spec({"/a": {"get": {"parameters": [{"$ref": "#/components/parameters/gone"}]}}}),
     ("#/components/parameters/gone", "points at nothing")),
    ("dup.json", spec({"/a": {"get": {"operationId": "same"}}, "/b": {"post": {"operationId": "same"}}}),
     ("'same'", "operationId", "twice")),
])
def test_bad_openapi_input_is_one_line_naming_the_file(tmp_path, name, text, words):
    refused(openapi.read, write(tmp_path / name, text), *words)


def test_duplicate_operation_ids_across_a_folders_specs_of_one_tool_are_refused(tmp_path):
    write(tmp_path / "one.json", spec({"/a": {"get": {"operationId": "op"}}}))
    write(tmp_path / "two.json", spec({"/b": {"get": {"operationId": "op"}}}))
    refused(openapi.read, tmp_path, "'op'")
    write(tmp_path / "two.json", spec({"/b": {"get": {"operationId": "op"}}}, info={"title": "Other"}))
    assert [api.key for api in openapi.read(tmp_path, "x")] == [("T", "op"), ("Other", "op")]


@pytest.mark.parametrize("reader, name", [(openapi, "huge.json"), (mcp, "huge.json"), (jsonl_tools, "huge.jsonl")])
def test_a_file_over_50_mb_is_refused_before_it_is_read(tmp_path, monkeypatch, reader, name):
    big = tmp_path / name
    with big.open("wb") as fh:
        fh.truncate(50 * 1024 * 1024 + 1)  # sparse: no disk, and NULs that would not parse if read
    assert MAX_BYTES == 50 * 1024 * 1024
    monkeypatch.setattr(Path, "read_text", lambda *a, **k: pytest.fail("the file was read"))
    monkeypatch.setattr(Path, "open", lambda *a, **k: pytest.fail("the file was opened"))
    refused(reader.read, big, "52,428,801 bytes", "over the 50 MB")


@pytest.mark.parametrize("reader, name", [(openapi, "gone.yaml"), (mcp, "gone.json"), (jsonl_tools, "gone.jsonl")])
def test_a_missing_file_is_one_line_too(tmp_path, reader, name):
    refused(reader.read, tmp_path / name, "cannot be read")


def test_an_empty_folder_and_non_utf8_are_refused(tmp_path):
    refused(openapi.read, tmp_path, "no OpenAPI spec")
    (tmp_path / "latin1.yaml").write_bytes(b"openapi: 3.0.0\ninfo: {title: caf\xe9}\n")
    refused(openapi.read, tmp_path / "latin1.yaml", "UTF-8")


# ------------------------------------------------------------------------------------------------ MCP

def test_an_mcp_tools_list_file_becomes_apis_named_by_its_server():
    apis = mcp.read(FIXTURES / "weather.json", "fallback")
    assert [api.key for api in apis] == [("weather-server", "get_forecast"), ("weather-server", "天气 警报/all")]
    forecast, alert = apis
    assert forecast.description == "Get the weather forecast for a city."  # whitespace collapsed
    assert forecast.parameters == (Param("city", "City name", "string", True), Param("days", "", "integer|null"))
    assert forecast.document == ("weather-server/get_forecast: Get the weather forecast for a city. "
                                 "Parameters: city: City name; days")
    assert (alert.description, alert.doc_source, alert.source, alert.parameters) == ("", "name_only", "mcp", ())


def test_mcp_server_names_come_from_name_server_info_or_the_stem(tmp_path):
    tool = {"name": "t", "description": "d", "inputSchema": {"type": "object"}}
    write(tmp_path / "by_stem.json", json.dumps({"tools": [tool]}))
    write(tmp_path / "named.json", json.dumps({"name": "Named", "serverInfo": {"name": "x"}, "tools": [tool]}))
    write(tmp_path / "rpc.json", json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": [tool]}}))
    assert [api.tool_name for api in mcp.read(tmp_path, "fallback")] == ["by_stem", "Named", "rpc"]


def test_a_list_of_servers_takes_names_categories_and_nested_tool_lists(tmp_path):
    servers = [{"name": "S1", "category": "Finance", "tools": {"s1-key": {"server_name": "s1", "tools": [
                   {"name": "quote", "description": "A quote.", "inputSchema": {
                       "type": "object", "properties": {"ticker": {"$ref": "#/$defs/T"}}, "$defs": {"T": {
                           "type": "string", "description": "The symbol"}}}}]}}},
               {"name": "S2", "tools": [{"name": "quote", "description": None}]}]
    apis = mcp.read(write(tmp_path / "servers.json", json.dumps(servers)), "fallback")
    assert [(a.tool_name, a.api_name, a.category) for a in apis] == [("S1", "quote", "Finance"), ("S2", "quote", "")]
    assert apis[0].parameters == (Param("ticker", "The symbol", "string"),)


def test_mcp_duplicates_are_kept_once_when_identical_and_refused_when_not(tmp_path):
    tool = {"name": "t", "description": "d"}
    same = write(tmp_path / "same.json", json.dumps([{"name": "S", "tools": [tool, tool]}]))
    assert len(mcp.read(same, "x")) == 1
    differ = write(tmp_path / "differ.json", json.dumps([{"name": "S", "tools": [tool, {**tool, "description": "e"}]}]))
    refused(mcp.read, differ, "'t'", "'S'", "twice")


@pytest.mark.parametrize("text, words", [
    ('{"tools": [\n{"name": }]}', ("not valid JSON", "line 2")),
    ("3", ("not an MCP server",)),
    ('{"name": "S"}', ("'S'", "no `tools` list")),
    ('{"name": "S", "tools": [{"description": "no name"}]}', ("'S' tool #1", "no name")),
    ('[{"tools": []}]', ("server #1", "no name")),
    ('{"tools": [{"name": "t", "inputSchema": {"properties": {"a": {"$ref": "#/$defs/gone"}}}}]}',
     ("'t'", "#/$defs/gone")),
])
def test_bad_mcp_input_is_one_line_naming_the_file(tmp_path, text, words):
    refused(mcp.read, write(tmp_path / "server.json", text), *words)


@pytest.mark.slow
@pytest.mark.skipif(not LIVEMCPBENCH.is_file(), reason=f"LiveMCPBench's tools.json is not at {LIVEMCPBENCH}")
def test_livemcpbench_tools_json_gives_the_counts_its_sources_state():
    apis = mcp.read(LIVEMCPBENCH, "livemcpbench")
    assert len(apis) == 527
    assert len({api.api_name for api in apis}) == 510
    assert len({api.tool_name for api in apis}) == 70
    assert sum(bool(CHINESE.search(api.description)) for api in apis) == 61
    assert sum(not api.description for api in apis) == 19
    assert {api.source for api in apis} == {"mcp"} and all(api.category for api in apis)
    assert mcp.recognises(LIVEMCPBENCH) and not openapi.recognises(LIVEMCPBENCH)


# ------------------------------------------------------------------------------------------------ JSONL

def test_jsonl_lines_take_each_parameter_shape():
    apis = by_name(jsonl_tools.read(FIXTURES / "tools.jsonl", "Seal"))
    assert list(apis) == ["createEvent", "listEvents", "analyzeEvidence", "ping"]
    assert apis["createEvent"].parameters == (Param("title", "Its title", "string", True), Param("when", "", "string"))
    assert apis["createEvent"].category == "Office"
    assert apis["listEvents"].parameters == (Param("day", "Which day", "string", True), Param("limit"))
    seal = apis["analyzeEvidence"]  # no `tool`: the registry's name; Seal-Tools' mapping with a line-level required
    assert seal.key == ("Seal", "analyzeEvidence")
    assert seal.parameters == (Param("evidence_type", "The type of evidence", "str", True),
                               Param("method", "The method", "str", False))
    assert (apis["ping"].doc_source, apis["ping"].source) == ("name_only", "jsonl")


def test_jsonl_gz_reads_the_same(tmp_path):
    packed = tmp_path / "tools.jsonl.gz"
    packed.write_bytes(gzip.compress((FIXTURES / "tools.jsonl").read_bytes()))
    assert jsonl_tools.read(packed, "Seal") == jsonl_tools.read(FIXTURES / "tools.jsonl", "Seal")


@pytest.mark.parametrize("lines, words", [
    (['{"api": "a"}', '{"api": '], ("line 2", "not valid JSON")),
    (['{"api": "a"}', "", '["api"]'], ("line 3", "not an object")),
    (['{"tool": "T", "description": "x"}'], ("line 1", "no `api`")),
    (['{"api": ""}'], ("line 1", "`api` must be a non-empty string")),
    (['{"api": "a", "parameters": 5}'], ("line 1", "parameters must be")),
    (['{"api": "a", "parameters": [{"description": "nameless"}]}'], ("line 1", "without a name")),
    (['{"api": "a", "parameters": {"type": "object", "properties": {"x": {"$ref": "#/gone"}}}}'], ("line 1", "#/gone")),
    (['{"api": "a", "description": "x"}', '{"api": "a", "description": "y"}'], ("'a'", "twice")),
    ([""], ("no APIs",)),
])
def test_bad_jsonl_input_is_one_line_naming_the_file(tmp_path, lines, words):
    refused(jsonl_tools.read, write(tmp_path / "tools.jsonl", "\n".join(lines) + "\n"), *words)


def test_jsonl_that_is_not_jsonl_or_not_gzip_is_refused(tmp_path):
    refused(jsonl_tools.read, write(tmp_path / "tools.json", '{"api": "a"}\n'), "not a JSONL file")
    refused(jsonl_tools.read, write(tmp_path / "tools.jsonl.gz", '{"api": "a"}\n'), "cannot be read")


def test_identical_jsonl_lines_are_kept_once(tmp_path):
    line = '{"tool": "T", "api": "a", "description": "x"}'
    assert len(jsonl_tools.read(write(tmp_path / "t.jsonl", f"{line}\n{line}\n"), "x")) == 1


# ------------------------------------------------------------------------------------------------ the sniffs

def test_recognises_tells_the_formats_apart(tmp_path):
    files = {"petstore.yaml": openapi, "swagger.json": openapi, "weather.json": mcp, "tools.jsonl": jsonl_tools}
    for name, reader in files.items():
        assert [m.__name__ for m in (openapi, mcp, jsonl_tools) if m.recognises(FIXTURES / name)] == [reader.__name__]
    for module in (openapi, mcp, jsonl_tools):
        assert not module.recognises(FIXTURES)  # a folder of mixed formats is none of them
        assert not module.recognises(tmp_path / "missing.json")
    write(tmp_path / "a.yaml", "openapi: 3.0.0\n")
    write(tmp_path / "b.json", '{"info": {}, "swagger": "2.0"}')
    assert openapi.recognises(tmp_path) and not mcp.recognises(tmp_path)
    packed = tmp_path / "t.jsonl.gz"
    packed.write_bytes(gzip.compress(b'{"api": "a"}\n'))
    assert jsonl_tools.recognises(packed) and not jsonl_tools.recognises(write(tmp_path / "x.jsonl", "[1]\n"))


# ------------------------------------------------------------------------------------------------ the shared helper

def test_schema_params_cut_cycles_through_yaml_aliases_and_refs():
    node: dict = {"type": "object", "properties": {"a": {"type": "string"}}}
    node["allOf"] = [node]  # a YAML alias can nest a schema in itself with no $ref at all
    assert schema_params(node, Refs(node)) == (Param("a", "", "string"),)
    loop = {"$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}, "$ref": "#/$defs/A"}
    assert schema_params(loop, Refs.checked(loop)) == ()


def test_params_of_reads_a_schema_a_list_and_a_mapping_alike():
    as_schema = params_of({"type": "object", "properties": {"x": {"type": "int", "description": "X"}},
                           "required": ["x"]})
    as_list = params_of([{"name": "x", "type": "int", "description": "X", "required": True}])
    as_mapping = params_of({"x": {"type": "int", "description": "X"}}, ["x"])
    assert as_schema == as_list == as_mapping == (Param("x", "X", "int", True),)
    assert params_of(None) == () and params_of({"type": "object"}) == ()
