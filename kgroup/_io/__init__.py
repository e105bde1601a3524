"""The I/O side of kgroup: kafka-python's network client behind the ``Transport`` seam.

Importing this package imports kafka-python once, quietly: kafka-python 3.0 loads its message
schemas at import time with ``importlib.resources.read_text``/``open_text``, which Python 3.11
and 3.12 deprecate, so a plain ``import kafka`` fails under ``python -W error`` and in any
pytest run configured with ``filterwarnings = error``. The import below ignores exactly that
warning, for the duration of the import only (the filters are restored afterwards; whatever the
application configured still applies to everything else). Every module of kgroup that imports
kafka-python goes through this package first.
"""

from __future__ import annotations

import warnings
from types import ModuleType

__all__ = ["import_kafka_python"]

#: the messages of the warnings kafka-python's schema loader triggers (Python 3.11, 3.12)
_SCHEMA_LOADER_WARNINGS = r"(read|open)_text is deprecated"


def import_kafka_python() -> ModuleType:
    """Import and return the ``kafka`` package without its import-time DeprecationWarning.

    Idempotent; after the first call this is a dictionary lookup.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_SCHEMA_LOADER_WARNINGS, category=DeprecationWarning)
        import kafka

    module: ModuleType = kafka  # kafka-python ships no type information
    return module


import_kafka_python()
