"""A team's own registry: imported atomically with its manifest, found by every reader, refused in one line when
it cannot be used (leaving nothing behind), and removed; then the CLI end to end on a real OpenAPI spec."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from core.cli.main import main
from core.data import imports
from core.data.loaders import queries_for, registry_for
from core.data.toolbench import DataUnreadable
from core.registries import registries, registry_decl
from core.settings import PROJECT_ROOT, Settings

FIXTURES = Path(__file__).parent / "fixtures" / "registries"
SPEC = FIXTURES / "petstore.yaml"


def write_queries(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def queries(tmp_path: Path) -> Path:
    return write_queries(tmp_path / "q.jsonl", [
        {"id": 1, "query": "List all the pets", "gold": ["listPets"]},
        {"id": 2, "query": "Show me pet 7 and list the pets", "gold": ["GET /pets/{petId}", "listPets", "nosuch"]}])


def staging_left(root: Path) -> list[str]:
    folder = imports.imported_dir(root)
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_an_import_appears_whole_with_its_manifest(tmp_path: Path, queries: Path) -> None:
    root = tmp_path / "lab"
    staged = imports.stage(root, "petstore", "openapi", SPEC, queries)
    assert registries(root)[-1].name != "petstore"  # staged, not yet visible
    folder = imports.commit(staged)
    assert staging_left(root) == ["petstore"]
    manifest = json.loads((folder / "manifest.json").read_text())
    assert (manifest["format"], manifest["apis"], manifest["queries_count"]) == ("openapi", len(staged.registry), 2)
    assert manifest["unresolved"] == [{"query": "single:2", "name": "nosuch", "candidates": []}]  # one tool: single
    for item in manifest["inputs"]:
        assert hashlib.sha256((folder / item["file"]).read_bytes()).hexdigest() == item["sha256"]
    declared = registry_decl("petstore", root)
    assert declared.imported and declared.source == "openapi"
    settings = Settings.from_env(env={"REGISTRY": "petstore", "CACHE_DIR": str(tmp_path / "cache")}, root=root)
    registry = registry_for(settings)
    assert registry.name == "petstore" and len(registry) == manifest["apis"]
    assert [q.query_id for q in queries_for(settings)] == [1, 2]
    imports.remove(root, "petstore")
    assert staging_left(root) == [] and "petstore" not in {r.name for r in registries(root)}


@pytest.mark.parametrize("case", ["not-a-spec", "gold-names-nothing", "missing-file", "over-50-mb"])
def test_a_failed_import_says_why_in_one_line_and_leaves_nothing(case: str, tmp_path: Path) -> None:
    root = tmp_path / "lab"
    path, fmt, queries = SPEC, "openapi", None
    if case == "not-a-spec":
        path = FIXTURES / "weather.json"
    elif case == "gold-names-nothing":
        queries = write_queries(tmp_path / "q.jsonl", [{"id": 1, "query": "anything", "gold": ["nothing_at_all"]}])
    elif case == "missing-file":
        path = tmp_path / "nope.yaml"
    else:
        path = tmp_path / "huge.json"
        with path.open("wb") as fh:
            fh.truncate(imports.MAX_INPUT_BYTES + 1)
    with pytest.raises(DataUnreadable) as caught:
        imports.stage(root, "team", fmt, path, queries)
    message = str(caught.value)
    assert "\n" not in message and (queries or path).name in message
    assert staging_left(root) == []


def test_names_are_slugs_and_never_taken_twice(tmp_path: Path) -> None:
    for bad in ("", "Has Caps", "a/b", "x" * 41, "ü"):
        with pytest.raises(ValueError, match="lowercase letters"):
            imports.check_name(bad, tmp_path)
    with pytest.raises(ValueError, match="exists already"):
        imports.check_name("sealtools", tmp_path)
    with pytest.raises(ValueError, match="ships with the lab"):
        imports.remove(tmp_path, "full")
    with pytest.raises(ValueError, match="no imported registry"):
        imports.remove(tmp_path, "ghost")


@pytest.mark.slow
def test_the_cli_adds_queries_and_removes_a_spec(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path, queries: Path) -> None:
    name = f"pytest-pets-{os.getpid()}"
    monkeypatch.setenv("CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("LLM_BACKEND", "offline")

    def no_torch(name: str) -> None:
        raise AssertionError("a small import is embedded by the ONNX query encoder, without loading torch")

    monkeypatch.setattr("core.retrieval.assemble.load_reference_encoder", no_torch)
    try:
        assert main(["registry", "add", name, "openapi", str(SPEC), "--queries", str(queries), "--json"]) == 0
        added = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert added["name"] == name and added["apis"] == 6
        assert main(["query", "--registry", name, "--json", "show me pet 7"]) == 0
        hits = json.loads(capsys.readouterr().out)["rtp"]["hits"]
        assert {h["tool_name"] for h in hits} == {"Petstore"} and len(hits) == 5
        assert main(["registry", "list", "--json"]) == 0
        assert name in {r["name"] for r in json.loads(capsys.readouterr().out)["registries"]}
        assert main(["registry", "add", name, "openapi", str(SPEC)]) == 2
        assert "exists already" in capsys.readouterr().err
    finally:
        assert main(["registry", "remove", name]) == 0
    assert not (PROJECT_ROOT / "data" / "imported" / name).exists()
