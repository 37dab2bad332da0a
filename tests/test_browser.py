"""The dashboard in a real browser: `streamlit run` as a subprocess, driven by Debian's Chromium via Playwright.

Uses the tiny data and results database of test_app_pages. Skips only when Chromium is missing
outside CI; under CI=true a missing browser is a failure (.ci/run installs it).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import REPO_DATA
from tests.helpers import (APP, CHROMIUM_ARGS, MAIN_K, MODEL_CACHE, SCRUBBED, build_app_env, chromium, free_port,
                           llama_built)

pytestmark = pytest.mark.browser
expect = pytest.importorskip("playwright.sync_api").expect
# Tests must not rewrite tracked files: the screenshot goes to SCREENSHOT_DIR (default: the temp dir).
SCREENSHOTS = Path(os.environ.get("SCREENSHOT_DIR", tempfile.gettempdir()))
START_TIMEOUT_S = 60
RENDER_TIMEOUT_MS = 90_000  # the first query loads the real embedding model
REGISTRY_FIXTURES = Path(__file__).parent / "fixtures" / "registries"


@contextmanager
def streamlit_server(app_env: dict[str, str], log: Path, warm: bool = False) -> Iterator[str]:
    """A streamlit server on a free port with `app_env` over the environment; yields its base URL. `warm`: started
    as `make run` starts it (python -m ui.warm_start), else by `streamlit run app.py`."""
    chromium()
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
    env.update(app_env)
    port = free_port()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, *(["-m", "ui.warm_start"] if warm else ["-m", "streamlit", "run", str(APP)]),
             "--server.headless", "true",
             "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"],
            cwd=APP.parent, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"streamlit did not start:\n{log.read_text(errors='replace')[-3000:]}")
                time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, graph_cache: Path) -> Iterator[str]:
    """Tiny data and a filled results database; the encoder's graph already in the cache (committed_server
    builds it, from an empty cache)."""
    folder = tmp_path_factory.mktemp("browser")
    env = build_app_env(folder)
    shutil.copytree(graph_cache / "onnx", Path(env["CACHE_DIR"]) / "onnx")
    with streamlit_server(env, folder / "streamlit.log") as url:
        yield url


@pytest.fixture(scope="module")
def committed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """What a new user opens: the committed data, the shipped index of the full registry, the committed results
    (packed, unpacked on first use), an empty cache. One server for every test of the full registry: a cold start
    (streamlit, the 47,038-API index, the encoder's graph) was most of each test's time. Pages without a results
    database are test_app_pages' (AppTest). Started as `make run` starts it, with the warm start."""
    folder = tmp_path_factory.mktemp("committed")
    shutil.copyfile(APP.parent / "data" / "results.sqlite.gz", folder / "results.sqlite.gz")
    env = {"CACHE_DIR": str(folder / "cache"), "LLM_BACKEND": "offline", "REGISTRY": "full",
           "DATABASE_URL": f"sqlite:///{folder / 'results.sqlite'}", "TOOLBENCH_DATA": str(REPO_DATA)}
    with streamlit_server(env, folder / "streamlit.log", warm=True) as url:
        yield url


@pytest.fixture(scope="module")
def local_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The full registry with the local backend: gemma-3-270m on llama.cpp, as `make llm` left it."""
    if not llama_built() and not os.environ.get("CI"):
        pytest.skip("llama.cpp is not built here: run `make llm`")
    folder = tmp_path_factory.mktemp("local")
    env = {"CACHE_DIR": str(MODEL_CACHE), "LLM_BACKEND": "local", "REGISTRY": "full",
           "DATABASE_URL": f"sqlite:///{folder / 'results.sqlite'}", "TOOLBENCH_DATA": str(REPO_DATA)}
    with streamlit_server(env, folder / "streamlit.log") as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def browser_page(server: str, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    yield page
    page.close()


def test_typed_query_renders_both_columns(server: str, browser_page) -> None:
    page = browser_page
    page.goto(f"{server}/inspector")  # a deep link as the server's very first request
    box = page.get_by_role("textbox", name="Query")
    box.wait_for(timeout=RENDER_TIMEOUT_MS)
    # The app frame runs around the page: sidebar settings and the offline banner are there.
    page.get_by_text("Gold APIs").wait_for(timeout=RENDER_TIMEOUT_MS)
    assert page.get_by_text("offline heuristic, not an LLM").count() >= 1
    box.fill("Find hotels in Paris and convert 200 EUR to USD")
    box.press("Control+Enter")
    page.get_by_text("PtR · Plan-then-Retrieve").wait_for(timeout=RENDER_TIMEOUT_MS)
    page.get_by_text("RtP · Retrieve-then-Plan").wait_for(timeout=RENDER_TIMEOUT_MS)
    page.get_by_text("Planner", exact=False).first.wait_for(timeout=RENDER_TIMEOUT_MS)
    assert "q=Find+hotels" in page.url or "q=Find%20hotels" in page.url
    assert page.locator("[data-testid='stException']").count() == 0


def test_an_uploaded_spec_is_queried_in_the_inspector(server: str, browser_page) -> None:
    """A team's demo: an OpenAPI spec uploaded on the Registry page becomes a registry (validated, embedded, kept
    whole under data/imported/), and the Inspector answers a query on it."""
    from core.data.imports import remove

    page, name = browser_page, f"browser-pets-{os.getpid()}"
    try:
        page.goto(f"{server}/registry?reg_tab=Import")
        page.get_by_text("Query set (optional)").wait_for(timeout=RENDER_TIMEOUT_MS)
        page.locator("input[type=file]").first.set_input_files(str(REGISTRY_FIXTURES / "petstore.yaml"))
        page.get_by_text("petstore.yaml").wait_for(timeout=RENDER_TIMEOUT_MS)  # uploaded, before the form is sent
        page.get_by_role("textbox", name="Name").fill(name)
        page.get_by_role("button", name="Import").click()
        page.get_by_text("unresolved gold names", exact=False).first.wait_for(timeout=RENDER_TIMEOUT_MS)  # success
        assert page.locator("[data-testid='stException']").count() == 0
        page.goto(f"{server}/inspector?registry={name}&q=show+me+pet+7")
        page.get_by_text("RtP · Retrieve-then-Plan").wait_for(timeout=RENDER_TIMEOUT_MS)
        page.get_by_text("Petstore", exact=False).first.wait_for(timeout=RENDER_TIMEOUT_MS)
        assert page.locator("[data-testid='stException']").count() == 0
    finally:
        if (APP.parent / "data" / "imported" / name).exists():
            remove(APP.parent, name)
    assert not (APP.parent / "data" / "imported" / name).exists()


def test_benchmark_link_marks_gold_hits(server: str, browser_page) -> None:
    page = browser_page
    page.goto(f"{server}/inspector?qid=G1_instruction:1&k={MAIN_K}")
    page.get_by_text("Stored benchmark outputs").wait_for(timeout=RENDER_TIMEOUT_MS)
    gold = page.get_by_text("gold", exact=True)
    gold.first.wait_for(timeout=RENDER_TIMEOUT_MS)
    assert gold.count() >= 2  # the gold hotel search API in both columns
    assert page.locator("[data-testid='stException']").count() == 0
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "browser_test_inspector.png"), full_page=True)


def test_typed_query_on_the_full_registry(committed_server: str, browser) -> None:
    """A fresh server (this is its first test) over the real 47,038 APIs: the shipped index loads (nothing is
    embedded) and a typed query is answered with real registry hits."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{committed_server}/inspector")
    box = page.get_by_role("textbox", name="Query")
    box.wait_for(timeout=RENDER_TIMEOUT_MS)
    box.fill("Get the 5-day weather forecast for Tokyo")
    box.press("Control+Enter")
    page.get_by_text("PtR · Plan-then-Retrieve").wait_for(timeout=RENDER_TIMEOUT_MS)
    page.get_by_text("Top 5 APIs").first.wait_for(timeout=RENDER_TIMEOUT_MS)
    assert page.get_by_text("weather", exact=False).count() >= 2
    assert page.get_by_text("Embedding the").count() == 0
    assert page.locator("[data-testid='stException']").count() == 0
    page.goto(committed_server)  # the Overview's status table says which index answered
    page.get_by_text("loaded from the shipped index").first.wait_for(timeout=RENDER_TIMEOUT_MS)
    assert page.get_by_text("47,038 APIs").count() >= 1
    page.close()


def test_typed_query_shows_the_local_models_stubs_and_plans(local_server: str, browser) -> None:
    """`make llm`, then a typed query: real stubs and both plans from gemma-3-270m, labelled as such."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{local_server}/inspector")
    box = page.get_by_role("textbox", name="Query")
    box.wait_for(timeout=RENDER_TIMEOUT_MS)
    assert page.get_by_text("offline heuristic, not an LLM").count() == 0  # no offline banner: a real LLM
    box.fill("Find the top tracks of an artist on Spotify and then search YouTube for the official video")
    box.press("Control+Enter")
    label = "local gemma-3-270m-q4_k_m"
    page.get_by_text(f"Planner ({label})").nth(1).wait_for(timeout=RENDER_TIMEOUT_MS)  # both columns planned
    assert page.get_by_text(label).count() >= 3  # the stubs' line and both planners
    assert page.get_by_text("stubs", exact=False).count() >= 1
    assert page.locator("[data-testid='stException']").count() == 0
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "browser_test_inspector_local.png"), full_page=True)
    page.close()


# The run has finished (the app root's script state, which Streamlit sets for tests) and its output is drawn:
# no element of the previous run is left stale, no running indicator is shown.
SETTLED = """() => document.querySelector('[data-testid="stApp"]')?.dataset.testScriptState === 'notRunning'
    && !document.querySelector('[data-stale="true"], [data-testid="stStatusWidget"]')"""


def _settled(page) -> None:
    """Waits for the state, never a fixed time: a fixed pause was both too short on a busy machine and wasted."""
    page.wait_for_function(SETTLED, timeout=RENDER_TIMEOUT_MS)


def test_a_copied_url_of_a_filtered_view_opens_identically(server: str, browser) -> None:
    """Gold and the Examples filters go into the URL; the same URL in a fresh browser context shows the same."""
    first = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = first.new_page()
    page.goto(f"{server}/examples")
    page.get_by_text("relevant", exact=True).click()
    box = page.get_by_role("textbox", name="Text in query or stubs")
    box.wait_for(timeout=RENDER_TIMEOUT_MS)
    box.fill("hotels")
    box.press("Enter")
    page.wait_for_url("**ex_text=hotels**", timeout=RENDER_TIMEOUT_MS)
    _settled(page)
    url = page.url
    assert "gold=relevant" in url and "ex_text=hotels" in url
    # the filtered rerun, on a busy machine too
    page.get_by_text("2 of 6 queries · ").first.wait_for(timeout=RENDER_TIMEOUT_MS)
    caption = page.get_by_text(" queries · ").first.inner_text()
    assert caption.startswith("2 of 6 queries") and "gold relevant" in caption
    second = browser.new_context(viewport={"width": 1400, "height": 1000})  # no cookies, no session: only the URL
    fresh = second.new_page()
    fresh.goto(url)
    fresh.get_by_text("2 of 6 queries · ").first.wait_for(timeout=RENDER_TIMEOUT_MS)
    _settled(fresh)
    expect(fresh.get_by_text(" queries · ").first).to_have_text(caption, timeout=RENDER_TIMEOUT_MS)
    expect(fresh.get_by_role("textbox", name="Text in query or stubs")).to_have_value(
        "hotels", timeout=RENDER_TIMEOUT_MS)
    expect(fresh.get_by_role("radio", name=re.compile("^relevant"))).to_be_checked(timeout=RENDER_TIMEOUT_MS)
    assert fresh.locator("[data-testid='stException']").count() == 0
    first.close()
    second.close()


HOSTILE_STUB = "render_page: **bold** <b>not bold</b> [a link](http://example.com) :red[red]"


def _edited_view(page) -> tuple[list[str], list[str]]:
    """The edited view's recall lines and hit labels, once it has settled."""
    page.get_by_text("edited stubs (no LLM)", exact=False).first.wait_for(timeout=RENDER_TIMEOUT_MS)
    _settled(page)
    recalls = [t.strip() for t in page.get_by_text(re.compile(r"^recall@\d+ \d\.\d\d → ")).all_inner_texts()]
    hits = page.locator("[data-testid='stExpander'] summary").all_inner_texts()
    return recalls, [h.strip() for h in hits]


def test_a_shared_link_with_edited_stubs_opens_the_same_hits_and_recall(server: str, browser) -> None:
    """Issue 33: stubs edited in the Inspector go into the URL; the URL in a fresh context (no session, no cookies)
    shows the same stubs, hits and recall; hostile stub text is shown as typed, never rendered."""
    first = browser.new_context(viewport={"width": 1400, "height": 1400})
    page = first.new_page()
    page.goto(f"{server}/inspector?qid=G2_instruction:4&k={MAIN_K}&show=Edit+stubs")
    box = page.get_by_role("textbox", name=re.compile("^Stubs"))
    box.wait_for(timeout=RENDER_TIMEOUT_MS)
    box.fill(f"search_hotels: find a hotel in London\nexchange_rate: the GBP exchange rate\n{HOSTILE_STUB}")
    box.press("Control+Enter")
    # Every run writes its stubs into the URL: wait for the edited ones', not for the start's
    page.wait_for_url(lambda url: "search_hotels" in url.replace("%22", ""), timeout=RENDER_TIMEOUT_MS)
    recalls, hits = _edited_view(page)
    assert len(recalls) == 2 and len(hits) >= 2 * MAIN_K, (recalls, hits)
    assert page.locator("[data-testid='stException']").count() == 0
    url = page.url
    assert "show=Edit" in url and "search_hotels" in url.replace("%22", "")
    second = browser.new_context(viewport={"width": 1400, "height": 1400})
    fresh = second.new_page()
    fresh.goto(url)
    expect(fresh.get_by_role("textbox", name=re.compile("^Stubs"))).to_have_value(re.compile("^search_hotels"),
                                                                                 timeout=RENDER_TIMEOUT_MS)
    assert _edited_view(fresh) == (recalls, hits)
    assert "<b>not bold</b>" in fresh.get_by_role("textbox", name=re.compile("^Stubs")).input_value()
    assert (fresh.locator("b", has_text="not bold").count() == 0
            and fresh.locator("a[href='http://example.com']").count() == 0)
    assert fresh.locator("[data-testid='stException']").count() == 0
    first.close()
    second.close()


def test_every_stored_system_side_by_side(server: str, browser) -> None:
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    page.goto(f"{server}/inspector?qid=G2_instruction:4&k={MAIN_K}&show=Every+system")
    page.get_by_text("Gold APIs no system found", exact=False).wait_for(timeout=RENDER_TIMEOUT_MS)
    _settled(page)
    assert page.get_by_text("offline heuristic (no model)").count() >= 1
    assert page.get_by_text("Where the retrievals differ", exact=False).count() == 1
    assert page.locator("[data-testid='stException']").count() == 0
    page.close()


def test_the_inspector_explains_a_miss_with_ranks(server: str, browser) -> None:
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    page.goto(f"{server}/inspector?qid=G2_instruction:4&k={MAIN_K}&gold=relevant")
    page.get_by_text("Why each gold API was found or missed").wait_for(timeout=RENDER_TIMEOUT_MS)
    _settled(page)
    assert page.get_by_text(f"appear in no top {MAIN_K}", exact=False).count() == 1
    grids = page.locator("[data-testid='stDataFrame']")
    for header in ("RtP rank", f"nDCG@{MAIN_K}"):  # the trace and the per-query metrics
        grids.filter(has_text=header).wait_for(state="attached", timeout=RENDER_TIMEOUT_MS)
    assert page.get_by_text("Only PtR", exact=False).count() == 1
    assert page.locator("[data-testid='stException']").count() == 0
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "browser_test_miss_explanation.png"), full_page=True)
    page.close()


def test_the_overview_shows_the_leaderboard(server: str, browser) -> None:
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    page.goto(server)
    page.get_by_role("heading", name="Leaderboard").wait_for(timeout=RENDER_TIMEOUT_MS)
    _settled(page)
    # A grid draws on a canvas; its accessible copy of the cells (textContent) fills in once it has drawn.
    board = page.locator("[data-testid='stDataFrame']").filter(has_text="offline heuristic, not an LLM").filter(
        has_text="paper: Gemini 2.5 Flash")
    board.wait_for(state="attached", timeout=RENDER_TIMEOUT_MS)
    assert board.count() == 1
    assert page.get_by_text("click a header to sort", exact=False).count() == 1
    assert page.locator("[data-testid='stException']").count() == 0
    page.close()


def _query(page) -> dict[str, str]:
    from urllib.parse import parse_qsl, urlsplit

    return dict(parse_qsl(urlsplit(page.url).query))


def _open(browser, url: str):
    """A fresh context (no cookies, no session: only the URL), the page settled."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.goto(url)
    page.get_by_text("Gold APIs").wait_for(timeout=RENDER_TIMEOUT_MS)
    _settled(page)
    return context, page


def _radio(page, name: str):
    return page.get_by_role("radio", name=re.compile(f"^{re.escape(name)}"))


def _wait_for_param(page, key: str, value: str | None) -> None:
    page.wait_for_function("([k, v]) => new URLSearchParams(location.search).get(k) === v", arg=[key, value],
                           timeout=RENDER_TIMEOUT_MS)


def test_every_bound_choice_round_trips_on_the_committed_data(committed_server: str, browser) -> None:
    """Issue 22: on a fresh clone's data each shared URL opens as shared (widget set, parameter kept in the address
    bar), and changing the widget changes the URL; every sidebar choice, each page's pickers, the Results tab."""
    context, page = _open(browser, f"{committed_server}/?registry=documented&gold=relevant&k_default=7"
                                   "&study=offline&lb_metric=precision")
    for choice in ("documented", "relevant", "precision"):
        expect(_radio(page, choice)).to_be_checked(timeout=RENDER_TIMEOUT_MS)
    expect(page.get_by_test_id("stSliderThumbValue").first).to_have_text("7", timeout=RENDER_TIMEOUT_MS)
    expect(page.get_by_role("combobox", name="Study")).to_have_value("offline", timeout=RENDER_TIMEOUT_MS)
    assert _query(page) == {"registry": "documented", "gold": "relevant", "k_default": "7", "study": "offline",
                            "lb_metric": "precision"}
    page.get_by_text("api_list", exact=True).click()
    _wait_for_param(page, "gold", None)  # the default is not written
    page.get_by_text("recall", exact=True).first.click()
    _wait_for_param(page, "lb_metric", None)
    assert _query(page) == {"registry": "documented", "k_default": "7", "study": "offline"}
    context.close()

    context, page = _open(browser, f"{committed_server}/results?tab=k+sweep&gold=relevant&res_k_metric=precision")
    page.get_by_role("tab", name="k sweep", selected=True).wait_for(timeout=RENDER_TIMEOUT_MS)
    for choice in ("relevant", "precision"):
        expect(_radio(page, choice)).to_be_checked(timeout=RENDER_TIMEOUT_MS)
    assert _query(page) == {"tab": "k sweep", "gold": "relevant", "res_k_metric": "precision"}
    page.get_by_role("tab", name="Scaling").click()
    _wait_for_param(page, "tab", "Scaling")
    assert _query(page)["gold"] == "relevant"
    context.close()

    context, page = _open(browser, f"{committed_server}/results?tab=k-sweep&gold=relevant")  # a hand-written slug
    page.get_by_role("tab", name="k sweep", selected=True).wait_for(timeout=RENDER_TIMEOUT_MS)
    context.close()

    context, page = _open(browser, f"{committed_server}/examples?gold=relevant&ex_text=hotels&ex_outcome=ptr_wins"
                                   "&ex_subset=G2_instruction")
    expect(page.get_by_role("textbox", name="Text in query or stubs")).to_have_value(
        "hotels", timeout=RENDER_TIMEOUT_MS)
    expect(page.locator("[data-testid='stMultiSelect']").last).to_contain_text("ptr_wins", timeout=RENDER_TIMEOUT_MS)
    chips = page.locator("[data-testid='stMultiSelect']").all_inner_texts()
    assert any("ptr_wins" in c for c in chips) and any("G2_instruction" in c for c in chips)
    expect(_radio(page, "relevant")).to_be_checked(timeout=RENDER_TIMEOUT_MS)
    box = page.get_by_role("textbox", name="Text in query or stubs")
    box.fill("weather")
    box.press("Enter")
    _wait_for_param(page, "ex_text", "weather")
    assert _query(page)["gold"] == "relevant" and _query(page)["ex_outcome"] == "ptr_wins"
    context.close()

    context, page = _open(browser, f"{committed_server}/stubs?gold=relevant&stub_subset=G2_instruction")
    expect(_radio(page, "relevant")).to_be_checked(timeout=RENDER_TIMEOUT_MS)
    expect(page.get_by_role("combobox", name="Subset for the tables below")).to_have_value("G2_instruction",
                                                                                         timeout=RENDER_TIMEOUT_MS)
    assert _query(page) == {"gold": "relevant", "stub_subset": "G2_instruction"}
    assert page.locator("[data-testid='stException']").count() == 0
    context.close()
