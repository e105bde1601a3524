"""Imported first by every module of ``kgroup._io`` that imports ``kafka``: kafka-python, quietly.

Importing this module imports kafka-python with :func:`kgroup._io.import_kafka_python` (its
import-time DeprecationWarning ignored, see :mod:`kgroup._io`), so the ``kafka`` imports that
follow it find the package loaded. Its importers keep it in an import block of its own
(``# isort: split``), ahead of their third-party imports.
"""

from __future__ import annotations

from kgroup._io import import_kafka_python

__all__: list[str] = []

import_kafka_python()
