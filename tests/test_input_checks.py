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
from core.data.toolbench import DataUnreadable, load_queries, load_registry
from core.retrieval.discovery import MAX_K, MAX_QUERY_CHARS, QueryError, check_k, clean_query, undecodable_at
from core.retrieval.embedding import ModelUnavailable, looks_like_path, resolve_model_path
from core.settings import BOUNDS, DataNotFoundError, Settings, bounded_setting, folder_problem
from core.store.dburl import DatabaseUnavailable
from tests.helpers import write_tiny_data
from ui.inspector_view import K_MAX

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


def test_k_is_bounded_by_max_k_everywhere() -> None:
    assert check_k(1) == 1 and check_k(MAX_K) == MAX_K
    for bad in (0, -1, MAX_K + 1, 100_000):
        with pytest.raises(QueryError, match=f"1 to {MAX_K}"):
            check_k(bad)
    assert k_value("7") == 7 and k_values("20,1,5") == [1, 5, 20]
    for bad in ("100000", "0", "x"):
        with pytest.raises(argparse.ArgumentTypeError):
            k_value(bad)
    with pytest.raises(argparse.ArgumentTypeError, match="100000"):
        k_values("5,100000")
    assert K_MAX <= MAX_K  # the Inspector's slider and ?k= stay inside it


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
        conn.executemany("INSERT INTO t VALUES (?)", [("row %d " % i * 40,) for i in range(3000)])
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
    (gzip.compress(b'{"api_name": "b"}\n'), "row 1 lacks a usable field (KeyError: 'tool_name')"),
    (gzip.compress(b'{"tool_name": 3, "api_name": "b"}\n'), "row 1 lacks a usable field (TypeError"),
    (gzip.compress(b"\n\n"), "holds no APIs"),
    (gzip.compress(b'{"tool_name": "caf\xe9", "api_name": "b"}\n'), "cannot be read (UnicodeDecodeError"),
], ids=["not-gzip", "truncated", "bad-json", "not-an-object", "no-name", "name-not-text", "empty", "latin-1"])
def test_a_registry_file_that_cannot_be_used_says_which_and_why(tmp_path: Path, registry: bytes, says: str) -> None:
    folder = _data(tmp_path, registry=registry)
    with pytest.raises(DataUnreadable) as caught:
        load_registry(folder, "full")
    assert says in str(caught.value) and "registry.jsonl.gz" in str(caught.value) and "\n" not in str(caught.value)
    assert isinstance(caught.value, DataNotFoundError)  # pages and commands that report missing data report it


def test_a_queries_file_that_cannot_be_used_says_which(tmp_path: Path) -> None:
    with pytest.raises(DataUnreadable, match="queries.jsonl.gz row 1 lacks a usable field"):
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
