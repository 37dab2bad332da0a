"""Bad query text on the pages that take it (issue 15, item 5): the Inspector and the Registry search say why
they refuse it, with no traceback and no arbitrary hits.

A lone surrogate cannot reach a page: the browser sends widget values as protobuf UTF-8 strings and Streamlit
parses the URL's query string with urllib's parse_qs, which decodes undecodable bytes to U+FFFD (AppTest,
which encodes what it is given the same way, refuses a surrogate itself). So the page cases are U+FFFD, which
`?q=%FF%FE` becomes, and text with no letter or digit; the surrogates themselves are refused by clean_query
(tests/test_input_checks.py) and on the command line (tests/test_bad_input.py).
"""
from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs

import pytest
from streamlit.testing.v1 import AppTest

from core.settings import Settings
from tests.helpers import APP, SCRUBBED, TIMEOUT_S, build_app_env

pytestmark = pytest.mark.pages

FROM_BAD_BYTES = parse_qs("q=%FF%FE%20hotels")["q"][0]  # what Streamlit hands the page for ?q=%FF%FE%20hotels


@pytest.fixture(scope="module")
def app_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The tiny app environment with its index ready; the registry's vectors are cached by the numpy
    encoder first, so no torch build runs."""
    from core.data.loaders import registry_for
    from core.retrieval.assemble import load_encoder
    from core.retrieval.embedding import corpus_embeddings
    from ui.index_job import index_job

    env = build_app_env(tmp_path_factory.mktemp("bad-pages"))
    with pytest.MonkeyPatch.context() as mp:
        for key in SCRUBBED:
            mp.delenv(key, raising=False)
        for key, value in env.items():
            mp.setenv(key, value)
        settings = Settings.from_env()
        corpus_embeddings(load_encoder(settings.embedding_model, "numpy"), registry_for(settings), settings.cache_dir)
        job = index_job(settings)
        assert job.wait(120) and job.ready, job.error
        yield env


def page(path: str, params: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)
    at.run()
    at.switch_page(path)
    at.query_params.update(params or {})
    return at.run()


def warnings(at: AppTest) -> list[str]:
    assert not at.exception, [e.value for e in at.exception]
    return [str(w.value).replace("\\", "") for w in at.warning]


def test_streamlit_turns_undecodable_url_bytes_into_the_replacement_mark() -> None:
    assert FROM_BAD_BYTES == "\ufffd\ufffd hotels"


@pytest.mark.parametrize("text, says", [
    (FROM_BAD_BYTES, "not valid UTF-8"),
    ("🎉🌦️", "no searchable text"),
    ("?!... ;", "no searchable text"),
    ("\u200b\u200d", "no searchable text"),
    ("\x00", "no searchable text"),
], ids=["bad-bytes", "emoji", "punctuation", "zero-width", "nul"])
def test_the_inspector_refuses_a_linked_query_before_searching(app_env, text: str, says: str) -> None:
    at = page("app_pages/inspector.py", {"q": text})
    assert any(says in w for w in warnings(at)), warnings(at)
    assert not at.expander  # no hits, no plans: nothing was searched


def test_the_inspector_refuses_a_typed_query_and_keeps_undecodable_text_out_of_the_link(app_env) -> None:
    at = page("app_pages/inspector.py")
    at.text_area[0].input("🎉").run()
    assert any("no searchable text" in w for w in warnings(at)) and not at.expander
    at.text_area[0].input(FROM_BAD_BYTES).run()
    assert any("not valid UTF-8" in w for w in warnings(at)) and not at.expander
    assert "q" not in at.query_params


def test_the_registry_search_by_meaning_says_why_it_refuses(app_env) -> None:
    at = page("app_pages/registry.py")
    at.radio(key="reg_mode").set_value("meaning").run()
    at.text_input(key="reg_search").input("🎉🌦️").run()
    assert any("no searchable text" in w for w in warnings(at)), warnings(at)
    assert "cosine" not in at.dataframe[0].value.columns  # no semantic hits: the words search instead


@pytest.mark.parametrize("text, says", [(FROM_BAD_BYTES, "not valid UTF-8"), ("?!", "no searchable text")],
                         ids=["bad-bytes", "punctuation"])
def test_the_registry_map_says_why_it_places_no_query(app_env, text: str, says: str) -> None:
    at = page("app_pages/registry.py", {"q": text})
    assert any(says in w for w in warnings(at)), warnings(at)
    assert len(at.dataframe) == 1  # the search table only: no table of the query's hits under the map


def test_a_good_query_still_runs(app_env) -> None:
    """The refusals above are about the text, not the pages: the same pages answer a real request."""
    at = page("app_pages/inspector.py", {"q": "Find hotels in Paris"})
    assert not any("not valid" in w or "no searchable" in w for w in warnings(at))
    assert len(at.expander) >= 5  # RtP's hits at k=5, at least


def test_damaged_packed_results_get_one_line_on_the_pages_and_rtp_still_answers(
        app_env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh clone whose results.sqlite.gz is cut short: app.py's early unpack (its own thread) and the pages'
    calls each meet it; the pages say so in one line, the archive stays byte-identical, no partial file is left,
    and the Inspector still answers with RtP."""
    stored = Path(app_env["DATABASE_URL"].removeprefix("sqlite:///"))
    packed = tmp_path / "results.sqlite.gz"
    whole = gzip.compress(stored.read_bytes())
    packed.write_bytes(whole[:len(whole) // 2])
    before = packed.read_bytes()
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'results.sqlite'}")
    at = page("app_pages/results.py")
    assert not at.exception, [e.value for e in at.exception]
    said = [str(e.value).replace("\\", "") for e in at.error] + warnings(at)
    assert any("results.sqlite.gz are damaged" in line for line in said), said
    at = page("app_pages/inspector.py", {"q": "Find hotels in Paris"})
    assert not at.exception and len(at.expander) >= 5
    assert packed.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.sqlite.gz"]


def test_a_fresh_clone_answers_before_its_results_are_unpacked(app_env, monkeypatch: pytest.MonkeyPatch) -> None:
    """While the committed results are still packed, the sidebar does not wait for their study list and the
    Inspector's live answer does not wait for the router's stored fit; a linked study stays chosen meanwhile."""
    import ui.resources
    import ui.widgets

    monkeypatch.setattr(ui.resources, "still_packed", lambda url: True)
    monkeypatch.setattr(ui.widgets, "still_packed", lambda url: True)
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)  # the link is the session's first request
    at.switch_page("app_pages/inspector.py")
    at.query_params.update({"q": "Find hotels in Paris", "study": "offline"})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    study = at.sidebar.selectbox(key="study")
    assert study.options == ["default", "offline"] and study.value == "offline"
    assert len(at.expander) >= 5  # RtP's hits
    assert not any("Adaptive router" in str(i.value) for i in at.info)  # its fit is read once the store is
    monkeypatch.undo()
    at = page("app_pages/inspector.py", {"q": "Find hotels in Paris", "study": "offline"})
    assert "offline" in at.sidebar.selectbox(key="study").options
