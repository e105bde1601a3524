"""``python -m kgroup``: the ``kgroup`` command line (:mod:`kgroup.cli`)."""

import sys

from kgroup.cli import run

sys.exit(run())
