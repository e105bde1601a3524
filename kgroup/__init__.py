"""kgroup: the client half of Kafka's group protocols (classic, KIP-848, KIP-932 share groups), in Python.

Built on kafka-python's network client (3.0 line). See the README for the quickstart and the
listener contract; ``kgroup.membership`` is the sans-IO protocol core; ``kgroup.testing``
provides a real broker for tests.

The public names are imported on first use (PEP 562), so ``import kgroup`` (and the pytest
plugin, which lives in this package) loads neither kafka-python nor the consumer's machinery
until a name such as ``kgroup.Consumer`` is looked up.
"""

from types import ModuleType
from typing import TYPE_CHECKING

from kgroup._lazy import lazy_getattr
from kgroup._version import __version__

if TYPE_CHECKING:
    from kgroup.assignors import (
        Assignor,
        CooperativeStickyAssignor,
        MemberSubscription,
        RangeAssignor,
        RoundRobinAssignor,
        StickyAssignor,
    )
    from kgroup.columns import RecordColumns
    from kgroup.config import ConsumerConfig
    from kgroup.consumer import Consumer
    from kgroup.errors import (
        AssignmentError,
        AuthenticationFailedError,
        BrokerError,
        ClusterUnreachableError,
        CommitFailedError,
        ConfigError,
        ConsumerClosedError,
        CoordinatorUnavailable,
        FatalGroupError,
        FencedInstanceIdError,
        FetchError,
        GroupAuthorizationFailedError,
        GroupThreadCrashed,
        IllegalStateError,
        InvalidRecordStateError,
        KafkaTimeoutError,
        KGroupError,
        ListenerError,
        MalformedMetadata,
        NoOffsetForPartitionError,
        OffsetOutOfRangeError,
        ProtocolViolation,
        RebalanceInProgressError,
        RecordDeserializationError,
        RetriableCommitFailedError,
        TopicAuthorizationFailedError,
        UnknownTopicOrPartitionError,
        WakeupError,
    )
    from kgroup.health import HealthReport
    from kgroup.instance_id import UnstableInstanceIdWarning, instance_id_from_env
    from kgroup.listener import RebalanceListener
    from kgroup.membership.states import MemberState
    from kgroup.parallel import ParallelProcessor, ProcessingError
    from kgroup.share_consumer import ShareConsumer
    from kgroup.types import (
        AcknowledgeType,
        ConsumerRecord,
        GroupMetadata,
        OffsetAndMetadata,
        OffsetAndTimestamp,
        PartitionInfo,
        RebalanceProtocol,
        ShareConsumerRecord,
        TopicPartition,
    )

#: module -> the public names it defines; imported on first attribute access
_EXPORTS: dict[str, tuple[str, ...]] = {
    "kgroup.assignors": (
        "Assignor",
        "CooperativeStickyAssignor",
        "MemberSubscription",
        "RangeAssignor",
        "RoundRobinAssignor",
        "StickyAssignor",
    ),
    "kgroup.columns": ("RecordColumns",),
    "kgroup.config": ("ConsumerConfig",),
    "kgroup.consumer": ("Consumer",),
    "kgroup.errors": (
        "AssignmentError",
        "AuthenticationFailedError",
        "BrokerError",
        "ClusterUnreachableError",
        "CommitFailedError",
        "ConfigError",
        "ConsumerClosedError",
        "CoordinatorUnavailable",
        "FatalGroupError",
        "FencedInstanceIdError",
        "FetchError",
        "GroupAuthorizationFailedError",
        "GroupThreadCrashed",
        "IllegalStateError",
        "InvalidRecordStateError",
        "KGroupError",
        "KafkaTimeoutError",
        "ListenerError",
        "MalformedMetadata",
        "NoOffsetForPartitionError",
        "OffsetOutOfRangeError",
        "ProtocolViolation",
        "RebalanceInProgressError",
        "RecordDeserializationError",
        "RetriableCommitFailedError",
        "TopicAuthorizationFailedError",
        "UnknownTopicOrPartitionError",
        "WakeupError",
    ),
    "kgroup.health": ("HealthReport",),
    "kgroup.instance_id": ("UnstableInstanceIdWarning", "instance_id_from_env"),
    "kgroup.listener": ("RebalanceListener",),
    "kgroup.membership.states": ("MemberState",),
    "kgroup.parallel": ("ParallelProcessor", "ProcessingError"),
    "kgroup.share_consumer": ("ShareConsumer",),
    "kgroup.types": (
        "AcknowledgeType",
        "ConsumerRecord",
        "GroupMetadata",
        "OffsetAndMetadata",
        "OffsetAndTimestamp",
        "PartitionInfo",
        "RebalanceProtocol",
        "ShareConsumerRecord",
        "TopicPartition",
    ),
}
_MODULE_OF: dict[str, str] = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = [
    "AcknowledgeType",
    "AssignmentError",
    "Assignor",
    "AuthenticationFailedError",
    "BrokerError",
    "ClusterUnreachableError",
    "CommitFailedError",
    "ConfigError",
    "Consumer",
    "ConsumerClosedError",
    "ConsumerConfig",
    "ConsumerRecord",
    "CooperativeStickyAssignor",
    "CoordinatorUnavailable",
    "FatalGroupError",
    "FencedInstanceIdError",
    "FetchError",
    "GroupAuthorizationFailedError",
    "GroupMetadata",
    "GroupThreadCrashed",
    "HealthReport",
    "IllegalStateError",
    "InvalidRecordStateError",
    "KGroupError",
    "KafkaTimeoutError",
    "ListenerError",
    "MalformedMetadata",
    "MemberState",
    "MemberSubscription",
    "NoOffsetForPartitionError",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "OffsetOutOfRangeError",
    "ParallelProcessor",
    "PartitionInfo",
    "ProcessingError",
    "ProtocolViolation",
    "RangeAssignor",
    "RebalanceInProgressError",
    "RebalanceListener",
    "RebalanceProtocol",
    "RecordColumns",
    "RecordDeserializationError",
    "RetriableCommitFailedError",
    "RoundRobinAssignor",
    "ShareConsumer",
    "ShareConsumerRecord",
    "StickyAssignor",
    "TopicAuthorizationFailedError",
    "TopicPartition",
    "UnknownTopicOrPartitionError",
    "UnstableInstanceIdWarning",
    "WakeupError",
    "__version__",
    "instance_id_from_env",
]


if not TYPE_CHECKING:  # type checkers see the imports above; a module __getattr__ would hide typos
    __getattr__ = lazy_getattr(__name__, _MODULE_OF)


def __dir__() -> list[str]:
    """The public names and the submodules imported so far (not this module's own imports)."""
    submodules = {
        name
        for name, value in globals().items()
        if isinstance(value, ModuleType) and value.__name__.startswith("kgroup.")
    }
    return sorted(set(__all__) | submodules)
