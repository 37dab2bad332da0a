"""Every table ResultsReader returns has the columns core.analysis.table_schemas declares, in order and of the
declared kinds, on a copy of the committed database; and keeps them on a store with nothing in it."""
from __future__ import annotations

import datetime as dt
import gzip
import inspect
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core.analysis.compare import Side
from core.analysis.reader import ResultsReader
from core.analysis.router import FOLDS
from core.analysis.router_fit import RouterFit
from core.analysis.table_schemas import SCHEMAS, Kind, TableSchema
from core.settings import PROJECT_ROOT

COMMITTED = PROJECT_ROOT / "data" / "results.sqlite.gz"
STUDY = "offline"  # the committed study that holds every kind of run: each table then has rows
# the tables that need more than their defaults
ARGS = {"study_table": {"kind": "ksweep"}, "side_recall": {"system": STUDY, "arch": "hybrid"},
        "compare_systems": {"a": Side(STUDY, "ptr"), "b": Side(STUDY, "rtp")}}
KINDS: dict[Kind, tuple[type, ...]] = {"text": (str,), "int": (int, np.integer), "float": (float, np.floating),
                                       "bool": (bool, np.bool_), "list": (list,), "dict": (dict,),
                                       "time": (dt.datetime,)}


@pytest.fixture(scope="module")
def committed(tmp_path_factory: pytest.TempPathFactory) -> ResultsReader:
    path = tmp_path_factory.mktemp("committed") / "results.sqlite"
    with gzip.open(COMMITTED) as packed, path.open("wb") as out:
        shutil.copyfileobj(packed, out)
    return ResultsReader(f"sqlite:///{path}")


def table(reader: ResultsReader, schema: TableSchema, backend: str | None) -> pd.DataFrame:
    method = getattr(reader, schema.name)
    kwargs = dict(ARGS.get(schema.name, {}))
    if "backend" in inspect.signature(method).parameters:
        kwargs["backend"] = backend
    return method(**kwargs)


def of_kind(value: object, kind: Kind) -> bool:
    return isinstance(value, KINDS[kind]) and not (kind == "int" and isinstance(value, (bool, np.bool_)))


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: s.name)
def test_a_table_holds_the_declared_columns_of_the_declared_kinds(committed: ResultsReader,
                                                                  schema: TableSchema) -> None:
    frame = table(committed, schema, STUDY)
    assert list(frame.columns) == schema.names
    assert len(frame), f"{schema.name} is empty on the committed {STUDY} study: its kinds go unchecked"
    for column in schema.columns:
        wrong = [v for v in frame[column.name].dropna() if not of_kind(v, column.kind)]
        assert not wrong, f"{schema.name}.{column.name} is declared {column.kind}, holds {type(wrong[0]).__name__}"


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: s.name)
def test_the_default_study_keeps_the_declared_columns(committed: ResultsReader, schema: TableSchema) -> None:
    """The latest main study, which has no scaling runs: its empty tables keep their columns too."""
    assert list(table(committed, schema, None).columns) == schema.names


def test_a_store_with_nothing_in_it_keeps_every_declared_column(tmp_path: Path) -> None:
    reader = ResultsReader(f"sqlite:///{tmp_path / 'missing.sqlite'}")
    for schema in SCHEMAS:
        assert list(table(reader, schema, None).columns) == schema.names, schema.name
    assert reader.router_fit() is None


def test_the_router_fit_is_typed(committed: ResultsReader) -> None:
    fit = committed.router_fit(backend=STUDY)
    answered = committed.per_query(backend=STUDY).dropna(subset=["rtp_top1", "rtp_recall", "ptr_recall"])
    assert isinstance(fit, RouterFit) and fit.n == len(answered) and fit.folds == FOLDS
    assert list(fit.fold_thresholds) == sorted(set(fit.fold_thresholds))
