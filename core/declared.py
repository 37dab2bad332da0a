"""The functions that declarations name as "module:function" strings (the backends' clients, the architectures'
retrieval, the studies' runners), imported on first use: the declarations sit in the lowest layer and name code
of the layers above, which they must not import."""
from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def declared_function(spec: str) -> Callable[..., Any]:
    """The function `spec` ("package.module:function") names; ImportError or AttributeError when it names none."""
    module, _, function = spec.partition(":")
    return getattr(importlib.import_module(module), function)
