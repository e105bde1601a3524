"""kgroup's public names: ``__all__`` is sorted and equals what the package exports."""

from __future__ import annotations

import kgroup


def test_public_api_all_is_sorted_and_complete():
    public = {name for name in dir(kgroup) if not name.startswith(("_", "@"))} - {
        # submodules and subpackages are reachable as attributes but are not re-exports
        "assignors", "config", "consumer", "errors", "instance_id", "listener", "membership", "protocol", "types",
        "testing", "admin", "cli", "spark", "health", "metrics",
    }
    exported = set(kgroup.__all__) - {"__version__"}
    assert exported == public
    assert list(kgroup.__all__) == sorted(kgroup.__all__)


def test_public_api_exceptions_share_one_base():
    for name in kgroup.__all__:
        obj = getattr(kgroup, name)
        # warnings are categories for the warnings module, not errors to catch
        if isinstance(obj, type) and issubclass(obj, BaseException) and not issubclass(obj, Warning):
            assert issubclass(obj, kgroup.KGroupError), name
