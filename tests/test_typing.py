"""Typed records: mypy --strict accepts a typed user program and rejects a mistyped one.

``Consumer[K, V]`` takes K and V from its deserializers (raw ``bytes`` without them), so a
record's ``key``/``value`` are typed where the user reads them.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent / "typing"


def _mypy(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--python-version", "3.11", str(path)],
        capture_output=True, text=True, timeout=300, check=False, cwd=HERE.parents[1],
    )


def test_a_typed_program_passes_mypy_strict() -> None:
    result = _mypy(HERE / "typed_consumer.py")
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_mistyped_value_is_caught() -> None:
    result = _mypy(HERE / "wrong.py")
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'Incompatible types in assignment (expression has type "dict[str, Any] | None"' in result.stdout, (
        result.stdout
    )


def test_the_package_passes_mypy_strict() -> None:
    """``mypy --strict kgroup`` (tox's ``type`` environment): every fake and test double of a port too."""
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "kgroup"],
        capture_output=True, text=True, timeout=300, check=False, cwd=HERE.parents[1],
    )
    assert result.returncode == 0, result.stdout + result.stderr
