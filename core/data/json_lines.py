"""JSON Lines files (plain or gzip-compressed), read line by line with one wording for what is wrong and where:
ToolBench's compact files, a JSONL registry and a query set all read them here."""
from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from core.data.errors import DataUnreadable


def _open(path: Path) -> IO[str]:
    return gzip.open(path, "rt", encoding="utf-8") if path.name.endswith(".gz") else path.open(encoding="utf-8")


def text_lines(path: Path, fix: str = "") -> Iterator[tuple[int, str]]:
    """(line number, text) of every non-blank line; a file that cannot be read (or decompressed, or decoded) is a
    DataUnreadable naming it and the last good line, ending with `fix` (what to do) when given."""
    number = 0
    try:
        with _open(path) as fh:
            for number, line in enumerate(fh, 1):
                if line.strip():
                    yield number, line
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as exc:  # BadGzipFile is an OSError
        where = f" after line {number}" if number else ""
        raise DataUnreadable(f"{path} cannot be read{where} ({type(exc).__name__}: {exc}){_then(fix)}") from None


def json_lines(path: Path, fix: str = "") -> Iterator[tuple[int, dict]]:
    """(line number, object) of every non-blank line; a line that is not a JSON object is a DataUnreadable naming
    the file and the line."""
    for number, line in text_lines(path, fix):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataUnreadable(f"{path} line {number} is not valid JSON ({exc.msg}){_then(fix)}") from None
        if not isinstance(row, dict):
            raise DataUnreadable(f"{path} line {number} is not a JSON object{_then(fix)}")
        yield number, row


def _then(fix: str) -> str:
    return f"; {fix}." if fix else "."
