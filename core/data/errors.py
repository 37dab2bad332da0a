"""The error every data reader raises for input that is there but cannot be used."""
from __future__ import annotations

from core.settings import DataNotFoundError


class DataUnreadable(DataNotFoundError):
    """A data file is there but cannot be used (not gzip, truncated, not JSON, rows without their fields, no
    APIs); the one-line message names the file and what to do. A DataNotFoundError, so every page and
    command that reports missing data reports this too."""
