"""The studies and the backends are each declared once, and everything else reads the declarations:
a new study or a new backend is one entry plus its own module."""
from __future__ import annotations

import argparse
import importlib
import inspect
import json
from dataclasses import dataclass

import pytest

from core import backends
from core.agents.factory import make_agents
from core.agents.llm import LLMResponse, Usage
from core.analysis.reader import ResultsReader
from core.analysis.report import SECTIONS, build_report
from core.backends import OFFLINE_LABEL, Backend, backend_label
from core.cli.main import build_parser, main
from core.settings import Settings
from core.study import catalog
from core.study.catalog import Param, Study, positive


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    return {opt for a in parser._actions for opt in a.option_strings}


def test_bench_has_one_subcommand_per_declared_study_with_exactly_its_flags() -> None:
    bench = _subparsers(_subparsers(build_parser()[0])["bench"])
    assert list(bench) == [*(s.name for s in catalog.STUDIES), "all"]
    common = _flags(bench["hybrid"])  # the hybrid declares no parameter of its own
    for study in catalog.STUDIES:
        assert _flags(bench[study.name]) - common == {p.flag for p in study.params}
    assert _flags(bench["all"]) - common == {p.flag for s in catalog.STUDIES if s.in_all for p in s.params}
    assert "--retrievers" not in _flags(bench["all"])  # the retriever axis needs `make embed` first: not in all


def test_every_runner_takes_the_context_and_its_declared_parameters() -> None:
    """The catalog calls `function(context, **params)`: nothing else is unpacked into a runner, and any keyword
    it takes beyond its declared parameters (main's agents_for) has a default."""
    for study in catalog.STUDIES:
        module, _, function = study.runner.partition(":")
        params = list(inspect.signature(getattr(importlib.import_module(module), function)).parameters.values())
        assert [p.name for p in params[:1]] == ["context"], study.name
        keywords = {p.name: p for p in params[1:] if p.kind is inspect.Parameter.KEYWORD_ONLY}
        assert len(keywords) == len(params) - 1, study.name
        assert {p.name for p in study.params} <= set(keywords), study.name
        assert all(keywords[name].default is not inspect.Parameter.empty
                   for name in set(keywords) - {p.name for p in study.params}), study.name


def test_every_report_section_belongs_to_exactly_one_study() -> None:
    declared = [name for study in catalog.STUDIES for name in study.sections]
    assert len(declared) == len(set(declared))
    assert set(declared) == set(SECTIONS)


@pytest.mark.slow
def test_a_new_study_is_one_declaration_plus_its_module(tiny_env: dict[str, str], monkeypatch, capsys) -> None:
    fake = Study("fake", "RtP at k alone (a test study)", (Param("k", positive, 2, "APIs retrieved"),),
                 "tests.fake_study:run_fake", ("fake",), calls_llm=False)
    monkeypatch.setattr(catalog, "STUDIES", (*catalog.STUDIES, fake))
    assert main(["bench", "fake", "--k", "3", "--subsets", "G1_instruction,G2_instruction", "--no-progress",
                 "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["fake"]["runs"] == 2
    reader = ResultsReader(tiny_env["DATABASE_URL"])
    runs = reader.runs()
    assert runs["kind"].tolist() == ["fake", "fake"] and runs["k"].tolist() == [3, 3]
    assert runs["backend_label"].tolist() == [OFFLINE_LABEL] * 2
    table = reader.study_table("fake")
    assert table[["subset", "arch", "k", "runs", "n_queries"]].values.tolist() == [
        ["G1_instruction", "rtp", 3, 1, 1], ["G2_instruction", "rtp", 3, 1, 1]]
    # The report shows it without a builder of its own (no main study is stored, so the rest is empty).
    section = build_report(reader, "api_list", paper={})["sections"]["fake"]
    assert section["title"] == "RtP at k alone (a test study)"
    assert [row["subset"] for row in section["ours"]] == ["G1_instruction", "G2_instruction"]


def test_every_backend_declares_its_label_model_and_client() -> None:
    for declared in backends.BACKEND_LIST:
        settings = Settings.from_env(env={"LLM_BACKEND": declared.name, "OPENAI_MODEL": "m"})
        assert settings.backend is declared
        assert settings.llm_model == declared.default_model({"OPENAI_MODEL": "m"})
        assert settings.backend_label == (f"{declared.name} {settings.llm_model}" if declared.is_llm
                                          else OFFLINE_LABEL)
        assert (declared.client is None) == (not declared.is_llm)
    assert backend_label("offline", "offline-heuristic") == OFFLINE_LABEL
    assert backend_label("retired", "m1") == "retired m1"  # a stored run of a backend no longer declared
    with pytest.raises(ValueError, match="LLM_BACKEND must be one of offline, gemini, openai, local"):
        Settings.from_env(env={"LLM_BACKEND": "nope"})


@dataclass
class EchoClient:
    """The client of the test backend below: answers every prompt with one fixed stub or an empty plan."""

    model: str
    backend: str = "echo"
    prompt_style: str = "instruction"

    def generate(self, prompt: str, *, schema=None, temperature: float = 0.0) -> LLMResponse:
        text = ('{"stubs": [{"name": "search_hotels", "reasoning": "hotels in a city"}]}' if "stubs" in prompt
                else '{"selected_apis": [], "steps": [], "refusal": "none fits"}')
        return LLMResponse(text, Usage(3, 2, 0), 0.0, self.backend, self.model)


def echo_client(settings: Settings) -> EchoClient:
    return EchoClient(settings.llm_model)


def test_a_new_backend_is_one_declaration_plus_its_client(monkeypatch, small_retriever, tmp_path) -> None:
    echo = Backend("echo", True, "a test backend", lambda env: "echo-1", f"{__name__}:echo_client")
    monkeypatch.setitem(backends.BACKENDS_BY_NAME, "echo", echo)
    settings = Settings.from_env(env={"LLM_BACKEND": "echo", "CACHE_DIR": str(tmp_path)})
    assert (settings.llm_model, settings.backend_label) == ("echo-1", "echo echo-1")
    agents = make_agents(settings, small_retriever, use_cache=False)
    outcome = agents.stub_writer.write("Find hotels in Paris")
    assert [s.name for s in outcome.stubs] == ["search_hotels"] and outcome.label == "echo echo-1"
    plan = agents.planner.plan("Find hotels in Paris", [])
    assert plan.refusal == "none fits" and plan.label == "echo echo-1"
