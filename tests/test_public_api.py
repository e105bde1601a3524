"""kgroup's public names: ``__all__`` is sorted and equals what the package exports."""

from __future__ import annotations

import inspect
import types

import kgroup


def test_public_api_all_is_sorted_and_complete():
    # submodules and subpackages (imported by whatever ran before) are attributes, not re-exports
    public = {
        name
        for name in dir(kgroup)
        if not name.startswith(("_", "@")) and not isinstance(getattr(kgroup, name), types.ModuleType)
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


def test_public_api_lazy_names_match_the_type_checking_imports():
    """``kgroup`` imports its names on first use; type checkers read the TYPE_CHECKING imports.

    Both lists, and ``__all__``, must name the same things from the same modules.
    """
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(kgroup))
    block = next(
        node for node in tree.body
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
    )
    typed = {
        alias.name: node.module for node in block.body if isinstance(node, ast.ImportFrom) for alias in node.names
    }
    assert typed == kgroup._MODULE_OF
    assert set(typed) == set(kgroup.__all__) - {"__version__"}
    for name, module in typed.items():
        assert getattr(kgroup, name) is getattr(__import__(module, fromlist=[name]), name)


def test_public_api_share_consumer_names():
    """Share groups (KIP-932): the consumer, its record type and Java's acknowledgement types."""
    from kgroup.share_consumer import ShareConsumer
    from kgroup.types import AcknowledgeType, ShareConsumerRecord

    assert kgroup.ShareConsumer is ShareConsumer
    assert kgroup.AcknowledgeType is AcknowledgeType
    assert kgroup.ShareConsumerRecord is ShareConsumerRecord
    assert issubclass(kgroup.InvalidRecordStateError, kgroup.BrokerError)
    assert ShareConsumerRecord._fields[-1] == "delivery_count"


def test_public_api_aio_share_consumer_names():
    import kgroup.aio
    from kgroup._aio.share import ShareConsumer

    assert kgroup.aio.ShareConsumer is ShareConsumer
    assert "ShareConsumer" in kgroup.aio.__all__
    for name in ("subscribe", "unsubscribe", "poll", "commit_sync", "commit_async", "close", "__aenter__"):
        assert inspect.iscoroutinefunction(getattr(ShareConsumer, name)), name
    for name in ("acknowledge", "subscription", "acquisition_lock_timeout_ms", "metrics", "health", "wakeup",
                 "set_acknowledgement_commit_callback"):
        assert not inspect.iscoroutinefunction(getattr(ShareConsumer, name)), name
