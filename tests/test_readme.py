"""The README's headline results are the committed store's, as `report` gives them (core.analysis.readme_results)."""
from __future__ import annotations

import pytest

from core.analysis.readme_results import END, START, headline_table, with_block
from tests.helpers import PROJECT_ROOT

pytestmark = pytest.mark.slow  # the whole report over the committed store: about 10 s


def test_the_readmes_headline_table_is_what_the_committed_store_gives() -> None:
    from core.analysis.reader import ResultsReader
    from core.analysis.report import build_report
    from core.cli.bench import query_texts
    from core.settings import Settings

    settings = Settings.from_env(env={"LLM_BACKEND": "offline"})
    readme = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    report = build_report(ResultsReader(f"sqlite:///{PROJECT_ROOT / 'data' / 'results.sqlite'}"),
                          queries=query_texts(settings))
    assert with_block(readme, headline_table(report)) == readme, \
        "README.md's headline results differ from the stored study's: run `python -m core report --readme`"
    assert "Qwen2.5-Coder-1.5B-Instruct Q4_K_M, this lab" in readme  # the default study's model is in it


def test_a_readme_without_the_markers_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match="no generated block"):
        with_block("# A README\n", "| table |")
    assert with_block(f"a\n{START}\nold\n{END}\nb", "new") == f"a\n{START}\nnew\n{END}\nb"
