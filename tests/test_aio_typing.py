"""``kgroup.aio`` typing: mypy --strict accepts the asyncio example and a typed program, and
rejects a record value read as the wrong type (``async for record in consumer`` gives
``ConsumerRecord[K, V]``: ``bytes | None`` values without a deserializer)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

def _mypy(*paths: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--python-version", "3.11", *map(str, paths)],
        capture_output=True, text=True, timeout=300, check=False, cwd=ROOT,
    )


def test_the_asyncio_example_and_a_typed_program_pass_mypy_strict() -> None:
    result = _mypy(ROOT / "examples" / "asyncio_service.py", ROOT / "tests" / "typing" / "typed_aio.py")
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_mistyped_value_is_caught() -> None:
    result = _mypy(ROOT / "tests" / "typing" / "wrong_aio.py")
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'Incompatible types in assignment (expression has type "bytes | None", variable has type "str")' in (
        result.stdout
    ), result.stdout
