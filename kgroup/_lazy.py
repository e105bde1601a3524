"""PEP 562 lazy names: a module's ``__getattr__`` that imports a name on first access and keeps it.

A module lists ``{name: module}`` and assigns ``__getattr__ = lazy_getattr(__name__, that_map)``
under ``if not TYPE_CHECKING`` (type checkers read its TYPE_CHECKING imports instead; a module
``__getattr__`` would hide typos from them). Light on purpose: ``from kgroup import Consumer``
loads it.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_getattr"]


def lazy_getattr(module_name: str, module_of: Mapping[str, str]) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``module_name``: ``module_of[name]``'s ``name``, bound as a global once imported.

    Raises (from the returned function):
        AttributeError: ``name`` is not in ``module_of``.

    """
    namespace = sys.modules[module_name].__dict__

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
