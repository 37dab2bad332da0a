"""The functions that declarations name as "module:function" strings, imported on first use: the backends' clients
(so an optional SDK such as google-genai loads only when its backend runs) and the studies' runners (so `--help`
and the catalog's listing do not import every study, scipy.stats included: 0.4-0.8 s). Architectures are not
among them: each is declared with its own code (core.retrieval.archs)."""
from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def declared_function(spec: str) -> Callable[..., Any]:
    """The function `spec` ("package.module:function") names; ImportError or AttributeError when it names none."""
    module, _, function = spec.partition(":")
    return getattr(importlib.import_module(module), function)
