"""Run means of values in [0, 1] that are the same bits on every store: the exact sum, computed in SQL.

AVG is not: SQLite (before 3.43) and PostgreSQL add a run's values in whatever order their plan reads
them, and SQLite 3.43+ with compensated summation, so the same recall values gave means that differed in
the last digits between the stores (75 values of the committed results' report) and between SQLite
versions. Here each value x is cut into LIMBS whole numbers of LIMB_BITS bits, x = sum(limb_i *
2^(-30 (i + 1))), each taken the same way on every store (scaling by a power of two and cutting off the
whole part are exact in floating point), every store sums whole numbers exactly, and Python divides the
total by the count. Every value from 2^-7 up is taken whole, so the mean is the correctly rounded mean
of the stored values; a smaller value loses its bits under 2^-60 (less than 1e-18), the same on every store.
(Means of 0/1 shares and of whole numbers need none of this: both stores add those exactly.)
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import BigInteger, func
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.functions import FunctionElement

LIMB_BITS = 30
LIMBS = 2


class Whole(FunctionElement):
    """The whole-number part of a value (cut toward zero), as an integer, the same on every store."""

    type = BigInteger()
    inherit_cache = True
    name = "whole"


@compiles(Whole)
def _whole_sqlite(element: Whole, compiler: SQLCompiler, **kw: Any) -> str:
    return f"CAST(({compiler.process(element.clauses, **kw)}) AS INTEGER)"  # SQLite cuts toward zero


@compiles(Whole, "postgresql")
def _whole_postgresql(element: Whole, compiler: SQLCompiler, **kw: Any) -> str:
    return f"CAST(trunc(({compiler.process(element.clauses, **kw)})) AS BIGINT)"  # a plain cast would round


def exact_sums(value: ColumnElement) -> list[ColumnElement]:
    """SUMs of the value's limbs: with COUNT(value), what `exact_mean` needs (NULLs are left out, as AVG does)."""
    limbs: list[ColumnElement] = []
    scaled = value * float(2 ** LIMB_BITS)
    for _ in range(LIMBS):
        whole = Whole(scaled)
        limbs.append(func.sum(whole))
        scaled = (scaled - whole) * float(2 ** LIMB_BITS)
    return limbs


def exact_mean(sums: Sequence[Any], n: int) -> float:
    """The mean from `exact_sums` (ints, or Decimals from PostgreSQL) and the count; NaN for no value."""
    if not n:
        return float("nan")
    total = sum(int(s) << (LIMB_BITS * (LIMBS - 1 - i)) for i, s in enumerate(sums))
    return total / (n << (LIMB_BITS * LIMBS))
