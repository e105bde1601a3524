"""The I/O side of kgroup: kafka-python's network client behind the ``Transport`` seam.

Importing this package imports nothing heavy: the ports (:mod:`kgroup._io.transport`) are
kgroup's own types, so the consumer's machinery names them without loading kafka-python.
``from kgroup import Consumer`` stays cheap; the adapter (:mod:`kgroup._io.kafka_python`, with
kafka-python and aiokafka's C record decoder) is imported by the consumer's first
``subscribe()``, ``assign()`` or offset look-up, which needs the network client anyway.

kafka-python is imported once, quietly, through :mod:`kgroup._io.quiet_kafka`, which every
module here that imports ``kafka`` imports first: kafka-python 3.0 loads its message schemas at
import time with ``importlib.resources.read_text``/``open_text``, which Python 3.11 and 3.12
deprecate, so a plain ``import kafka`` fails under ``python -W error`` and in any pytest run
configured with ``filterwarnings = error``. :func:`import_kafka_python` ignores exactly that
warning, for the duration of the import only (the filters are restored afterwards; whatever the
application configured still applies to everything else).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from types import ModuleType

__all__ = ["import_kafka_python", "quiet_schema_loading"]

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


@contextlib.contextmanager
def quiet_schema_loading() -> Iterator[None]:
    """Ignore the schema loader's DeprecationWarning while kgroup defines a kafka-python message class.

    A class ``class X(ApiMessage, load_json=...)`` loads its JSON schema when it is defined, with
    the same deprecated ``importlib.resources`` calls as ``import kafka``.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_SCHEMA_LOADER_WARNINGS, category=DeprecationWarning)
        yield
