"""The checks behind the one-line refusals (issue 15, item 5), tested where they live: query cleaning, k,
numeric settings, the results database URL, the data files and the embedding model's path."""
from __future__ import annotations

import argparse
import gzip
import os
import sqlite3
from pathlib import Path

import pytest

from core.cli.common import k_value, k_values, sqlite_damage, validate_results_url
from core.cli.main import build_parser
from core.data.toolbench import DataUnreadable, load_queries, load_registry
from core.retrieval.discovery import MAX_QUERY_CHARS, QueryError, check_k, clean_query, undecodable_at
from core.retrieval.embedding import ModelUnavailable, looks_like_path, resolve_model_path
from core.settings import BOUNDS, Bounds, DataNotFoundError, Settings, bounded_setting, folder_problem
from core.store.dburl import DatabaseUnavailable
from core.study.catalog import KSWEEP_KS, MAIN_K
from tests.helpers import write_tiny_data
from ui.inspector_view import View, parse_qid, parse_view

SECRET = "s3cret-pw"


# ---------------------------------------------------------------- the query

@pytest.mark.parametrize("text", [os.fsdecode(b"\xff\xfe"), "hotels \ud800 in Paris", "hotels \udcff",
                                  "caf\ufffd in Paris"], ids=["argv-bytes", "lone-surrogate", "byte-after-words",
                                                              "replacement-mark"])
def test_undecodable_text_is_refused_and_the_message_can_be_printed(text: str) -> None:
    with pytest.raises(QueryError, match="not valid UTF-8") as caught:
        clean_query(text)
    message = str(caught.value)
    message.encode("utf-8")  # no surrogate in the message itself: it reaches stderr and pages as is
    assert f"character {undecodable_at(text.strip()) + 1} " in message


@pytest.mark.parametrize("text", ["🎉🌦️", "?!... ;", "\x00", "\x00\x01\x1b", "\u200b\u200d\ufeff", "— … ¿¡",
                                  "\u0301\u0302"], ids=["emoji", "punctuation", "nul", "controls", "zero-width",
                                                        "typographic", "combining-marks"])
def test_text_without_a_letter_or_digit_is_refused(text: str) -> None:
    with pytest.raises(QueryError, match="no searchable text"):
        clean_query(text)


@pytest.mark.parametrize("text", ["Wetter 🌦️ für Zürich", "天气预报", "12345", "hotels\x00paris", "\u200bhotels",
                                  "x" * MAX_QUERY_CHARS])
def test_text_with_a_letter_or_digit_is_kept_as_typed(text: str) -> None:
    assert clean_query(f"  {text}\n") == text


def test_undecodable_at_finds_the_first_bad_character() -> None:
    assert undecodable_at("clean text") is None
    assert undecodable_at("ab\udcffc\ufffd") == 2
    assert undecodable_at("ab\ufffdc\udcff") == 2


# ---------------------------------------------------------------- k and the other shared ranges (BOUNDS)
# Each reader is asked at both ends of its declared range and one past them, so that an edit of a declaration
# that one reader does not follow fails here (k once had five ranges: 1..1000, 1..100 twice, 1..20 twice).

K = BOUNDS["k"]


def parsed(argv: list[str]) -> argparse.Namespace:
    return build_parser()[0].parse_args(argv)


def refusal(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one line `python -m core` prints for argv, which its parser must refuse."""
    with pytest.raises(SystemExit) as caught:
        parsed(argv)
    err = capsys.readouterr().err
    assert caught.value.code == 2 and err.count("\n") == 1, err
    return err


def test_check_k_takes_the_declared_range() -> None:
    assert check_k(K.low) == K.low and check_k(K.high) == K.high
    for bad in (K.low - 1, K.high + 1, 100_000):
        with pytest.raises(QueryError, match=f"^k must be from {K.low:g} to {K.high:g}, not {bad}$"):
            check_k(bad)
    assert k_value(str(K.high)) == K.high and k_values(f"{K.high},{K.low}") == [K.low, K.high]
    for bad in (str(K.high + 1), str(K.low - 1), "x", "9" * 5000):
        with pytest.raises(argparse.ArgumentTypeError, match=f"from {K.low:g} to {K.high:g}"):
            k_value(bad)
    with pytest.raises(argparse.ArgumentTypeError, match=f"from {K.low:g} to {K.high:g}, not {K.high + 1}"):
        k_values(f"{K.low},{K.high + 1}")


@pytest.mark.parametrize("argv", [["query", "hotels", "--k"], ["eval", "--k"], ["bench", "main", "--k"],
                                  ["bench", "scaling", "--k"], ["bench", "ksweep", "--ks"]],
                         ids=["query", "eval", "bench-main", "bench-scaling", "bench-ksweep"])
def test_every_k_flag_takes_the_declared_range(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    for good in (K.low, K.high):
        value = getattr(parsed([*argv, str(good)]), argv[-1][2:])
        assert value in (good, [good])
    assert f"from {K.low:g} to {K.high:g}, not {K.high + 1}" in refusal([*argv, str(K.high + 1)], capsys)
    refusal([*argv, str(K.low - 1)], capsys)


def test_the_pages_and_the_url_take_the_shown_part_of_k() -> None:
    """The sliders (app.py's sidebar, the Inspector; tests/test_app_pages.py checks their ends) and ?k= offer
    BOUNDS["k"].shown, which lies inside k's range and holds every k the studies store by default."""
    shown = K.shown
    assert shown is not None and K.low <= shown.low <= shown.high <= K.high
    assert {MAIN_K, *KSWEEP_KS} <= set(range(shown.low, shown.high + 1))  # the Examples page's links open
    for good in (shown.low, shown.high):
        assert parse_view({"k": str(good)}, MAIN_K, ()) == (View(k=good), [])
    for bad in (str(shown.low - 1), str(shown.high + 1), "9" * 5000, "five"):
        view, messages = parse_view({"k": bad}, MAIN_K, ())
        assert view.k == MAIN_K and messages == [f"The link's k {bad[:20]!r} is not a whole number from "
                                                 f"{shown.low} to {shown.high}; using k={MAIN_K}."]
    with pytest.raises(ValueError, match="not inside"):
        Bounds(1, 10, "a whole number", shown=Bounds(1, 20, "a whole number"))


@pytest.mark.parametrize("name", ["runs", "concurrency", "plan_sample", "seeds", "limit"])
def test_every_other_bench_flag_takes_its_declared_range(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    bounds, flag = BOUNDS[name], f"--{name.replace('_', '-')}"
    for good in (bounds.low, bounds.high):
        assert getattr(parsed(["bench", "all", flag, str(good)]), name) == good
    for bad in (bounds.low - 1, bounds.high + 1):
        err = refusal(["bench", "all", flag, str(bad)], capsys)
        assert f"{flag} must be {bounds.unit} from {bounds.low:g} to {bounds.high:g}, not '{bad}'" in err


def test_a_links_query_id_takes_its_declared_range() -> None:
    bounds = BOUNDS["query_id"]
    assert parse_qid(f"G1_instruction:{bounds.low}") == ("G1_instruction", bounds.low)
    assert parse_qid(f"G1_instruction:{bounds.high}") == ("G1_instruction", bounds.high)
    assert parse_qid(f"G1_instruction:{bounds.high + 1}") is None


# ---------------------------------------------------------------- numeric settings

@pytest.mark.parametrize("name", ["LLM_TIMEOUT_S", "LLM_QUERY_BUDGET_S", "LOCAL_THREADS", "LOCAL_INSTANCES"])
@pytest.mark.parametrize("raw", ["abc", "0", "-3", "nan", "inf", ""])
def test_every_numeric_setting_names_itself_and_the_bad_value(name: str, raw: str, tmp_path: Path) -> None:
    if raw == "":  # an empty value means "not set": the default
        Settings.from_env(env={name: raw, "CACHE_DIR": str(tmp_path)})
        return
    with pytest.raises(ValueError) as caught:
        Settings.from_env(env={name: raw, "CACHE_DIR": str(tmp_path)})
    message = str(caught.value)
    assert message.startswith(f"{name} must be ") and f", not {raw!r}" in message and "\n" not in message


@pytest.mark.parametrize("name, raw", [("HNSW_EF_SEARCH", "1000000000000"), ("LOCAL_THREADS", "1000000000"),
                                       ("LOCAL_INSTANCES", "100000"), ("IVF_NPROBE", "9" * 5000),
                                       ("LLM_TIMEOUT_S", "1e300")])
def test_settings_past_their_declared_range_are_refused_in_one_line(name: str, raw: str, tmp_path: Path) -> None:
    """Issue 23: these gave an OverflowError, a native abort (std::bad_alloc), 4 GB of model copies, and Python's
    4,300-digit limit; each is now one line naming the setting and its range, before anything runs."""
    with pytest.raises(ValueError) as caught:
        Settings.from_env(env={name: raw, "CACHE_DIR": str(tmp_path)})
    bounds = BOUNDS[name]
    message = str(caught.value)
    assert message.startswith(f"{name} must be {bounds.unit} from {bounds.low:g} to {bounds.high:g}, not ")
    assert len(message) < 200 and "\n" not in message


def test_bounded_settings_read_good_values() -> None:
    assert bounded_setting({"LLM_TIMEOUT_S": " 2.5 "}, "LLM_TIMEOUT_S", "60") == 2.5
    assert bounded_setting({}, "LOCAL_THREADS", "3") == 3
    with pytest.raises(ValueError, match="LOCAL_THREADS must be a whole number of threads from 1 to 256, not '2.5'"):
        bounded_setting({"LOCAL_THREADS": "2.5"}, "LOCAL_THREADS", "2")


# ---------------------------------------------------------------- the results database URL

@pytest.mark.parametrize("url, says", [
    ("garbage", "DATABASE_URL (or --db): the results database URL does not parse"),
    (f"mysql://lab:{SECRET}@db/results", "mysql://lab:***@db/results is mysql, which is not supported"),
    (f"http://lab:{SECRET}@db/results", "http://lab:***@db/results is http"),
    ("sqlite://", "in memory"),
])
def test_results_urls_that_cannot_work_are_refused_without_the_password(url: str, says: str) -> None:
    with pytest.raises(DatabaseUnavailable) as caught:
        validate_results_url(url, writer=True)
    assert says in str(caught.value) and SECRET not in str(caught.value) and "\n" not in str(caught.value)


def test_a_reader_may_name_a_database_that_is_not_there_yet(tmp_path: Path) -> None:
    validate_results_url(f"sqlite:///{tmp_path / 'nothing-yet.sqlite'}", writer=False)
    validate_results_url("sqlite://", writer=False)
    validate_results_url(f"postgresql://lab:{SECRET}@127.0.0.1:1/results", writer=True)  # the store says if it is down


def test_a_sqlite_file_needs_a_folder_it_can_live_in(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(DatabaseUnavailable, match="a-file is a file"):
        validate_results_url(f"sqlite:///{tmp_path / 'a-file' / 'deeper' / 'r.sqlite'}", writer=True)
    with pytest.raises(DatabaseUnavailable, match="is a folder"):
        validate_results_url(f"sqlite:///{tmp_path}", writer=False)
    validate_results_url(f"sqlite:///{tmp_path / 'new' / 'deeper' / 'r.sqlite'}", writer=True)  # folders get made
    assert folder_problem(tmp_path / "a-file", writable=False) == "is a file, not a folder"
    assert folder_problem(tmp_path / "new" / "x", writable=True) is None


def test_a_sqlite_file_damaged_in_the_middle_is_found_without_changing_it(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (body TEXT)")
        conn.executemany("INSERT INTO t VALUES (?)", [(f"row {i} " * 40,) for i in range(3000)])
    conn.close()
    assert sqlite_damage(path) is None
    blob = bytearray(path.read_bytes())
    blob[len(blob) // 2:len(blob) // 2 + 8192] = b"\xab" * 8192
    path.write_bytes(bytes(blob))
    before = path.read_bytes()
    assert sqlite_damage(path)
    with pytest.raises(DatabaseUnavailable, match="is damaged"):
        validate_results_url(f"sqlite:///{path}", writer=False)
    assert path.read_bytes() == before and not path.with_name("r.sqlite-wal").exists()
    (tmp_path / "not-sqlite").write_bytes(b"this is not a database file at all" * 200)
    assert "not a database" in sqlite_damage(tmp_path / "not-sqlite")


def test_report_turns_a_database_error_met_while_reading_into_one_line(tiny_env, monkeypatch, capsys) -> None:
    """What quick_check cannot see (a PostgreSQL server lost mid-report, say) still ends in one line."""
    from sqlalchemy.exc import OperationalError

    from core.cli.main import main

    def lost(*args, **kwargs):
        raise OperationalError("SELECT 1", {}, Exception("server closed the connection"))

    monkeypatch.setattr("core.analysis.reader.ResultsReader.available", lambda self: True)
    monkeypatch.setattr("core.analysis.report.build_report", lost)
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{Path(tiny_env['CACHE_DIR']).parent / 'r.sqlite'}")
    assert main(["report"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "server closed the connection" in err and "Traceback" not in err


# ---------------------------------------------------------------- the data files and the model path

def _data(tmp_path: Path, registry: bytes | None = None, queries: bytes | None = None) -> Path:
    folder = write_tiny_data(tmp_path / "data")
    if registry is not None:
        (folder / "registry.jsonl.gz").write_bytes(registry)
    if queries is not None:
        (folder / "queries.jsonl.gz").write_bytes(queries)
    return folder


@pytest.mark.parametrize("registry, says", [
    (b"not gzip", "cannot be read (BadGzipFile"),
    (gzip.compress(b'{"tool_name": "a", "api_name": "b"}\n' * 50)[:-12], "cannot be read"),
    (gzip.compress(b'{"tool_name": "a", "api_name": "b"}\nnot json\n'), "line 2 is not valid JSON"),
    (gzip.compress(b'["a", "b"]\n'), "line 1 is not a JSON object"),
    (gzip.compress(b'{"api_name": "b"}\n'), "line 1 lacks a usable field (KeyError: 'tool_name')"),
    (gzip.compress(b'{"tool_name": 3, "api_name": "b"}\n'), "line 1 lacks a usable field (TypeError"),
    (gzip.compress(b"\n\n"), "holds no APIs"),
    (gzip.compress(b'{"tool_name": "caf\xe9", "api_name": "b"}\n'), "cannot be read (UnicodeDecodeError"),
], ids=["not-gzip", "truncated", "bad-json", "not-an-object", "no-name", "name-not-text", "empty", "latin-1"])
def test_a_registry_file_that_cannot_be_used_says_which_and_why(tmp_path: Path, registry: bytes, says: str) -> None:
    folder = _data(tmp_path, registry=registry)
    with pytest.raises(DataUnreadable) as caught:
        load_registry(folder, "documented")
    assert says in str(caught.value) and "registry.jsonl.gz" in str(caught.value) and "\n" not in str(caught.value)
    assert isinstance(caught.value, DataNotFoundError)  # pages and commands that report missing data report it


def test_a_queries_file_that_cannot_be_used_says_which(tmp_path: Path) -> None:
    with pytest.raises(DataUnreadable, match="queries.jsonl.gz line 1 lacks a usable field"):
        load_queries(_data(tmp_path, queries=gzip.compress(b'{"subset": "G1_instruction"}\n')))


def test_an_official_layout_without_apis_is_refused(tmp_path: Path) -> None:
    (tmp_path / "toolenv" / "tools" / "Travel").mkdir(parents=True)
    with pytest.raises(DataUnreadable, match="holds no APIs"):
        load_registry(tmp_path, "full")


def test_a_model_path_that_does_not_exist_names_the_setting_before_any_import(tmp_path: Path) -> None:
    for name in ("/nonexistent/model", "./no/such/model", "~/no-such-model-here", str(tmp_path / "gone")):
        with pytest.raises(ModelUnavailable, match="EMBEDDING_MODEL is .* a path that does not exist"):
            resolve_model_path(name)
    assert resolve_model_path(str(tmp_path)) == str(tmp_path)  # it exists: sentence-transformers decides
    assert resolve_model_path("thenlper/gte-base") == "thenlper/gte-base"  # a hub id, not a path
    assert not looks_like_path("thenlper/gte-base") and looks_like_path("models/org/name")
