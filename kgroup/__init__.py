"""kgroup: the client half of Kafka's classic consumer-group protocol, in Python.

Built on kafka-python's network client (3.0 line). See the README for the quickstart and the
listener contract; ``kgroup.membership`` is the sans-IO protocol core; ``kgroup.testing``
provides a real broker for tests.
"""

from kgroup._version import __version__
from kgroup.assignors import (
    Assignor,
    CooperativeStickyAssignor,
    MemberSubscription,
    RangeAssignor,
    RoundRobinAssignor,
    StickyAssignor,
)
from kgroup.config import ConsumerConfig
from kgroup.consumer import Consumer
from kgroup.errors import (
    AssignmentError,
    BrokerError,
    CommitFailedError,
    ConfigError,
    ConsumerClosedError,
    CoordinatorUnavailable,
    FatalGroupError,
    FencedInstanceIdError,
    FetchError,
    GroupThreadCrashed,
    IllegalStateError,
    KGroupError,
    ListenerError,
    MalformedMetadata,
    NoOffsetForPartitionError,
    OffsetOutOfRangeError,
    ProtocolViolation,
    RebalanceInProgressError,
    RetriableCommitFailedError,
    UnknownTopicOrPartitionError,
    WakeupError,
)
from kgroup.health import HealthReport
from kgroup.instance_id import UnstableInstanceIdWarning, instance_id_from_env
from kgroup.listener import RebalanceListener
from kgroup.membership.states import MemberState
from kgroup.types import (
    ConsumerRecord,
    GroupMetadata,
    OffsetAndMetadata,
    PartitionInfo,
    RebalanceProtocol,
    TopicPartition,
)

__all__ = [
    "AssignmentError",
    "Assignor",
    "BrokerError",
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
    "GroupMetadata",
    "GroupThreadCrashed",
    "HealthReport",
    "IllegalStateError",
    "KGroupError",
    "ListenerError",
    "MalformedMetadata",
    "MemberState",
    "MemberSubscription",
    "NoOffsetForPartitionError",
    "OffsetAndMetadata",
    "OffsetOutOfRangeError",
    "PartitionInfo",
    "ProtocolViolation",
    "RangeAssignor",
    "RebalanceInProgressError",
    "RebalanceListener",
    "RebalanceProtocol",
    "RetriableCommitFailedError",
    "RoundRobinAssignor",
    "StickyAssignor",
    "TopicPartition",
    "UnknownTopicOrPartitionError",
    "UnstableInstanceIdWarning",
    "WakeupError",
    "__version__",
    "instance_id_from_env",
]
