"""A pure model of Apache Kafka's classic group coordinator, for tests and for the test proxy.

:class:`GroupCoordinatorModel` answers JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
OffsetFetch, DescribeGroups, ListGroups and DeleteGroups as an Apache Kafka 3.x/4.x broker's classic group
coordinator does; :class:`ConsumerGroupModel` answers ConsumerGroupHeartbeat (KIP-848) and the offset APIs
of consumer groups as Apache Kafka 4.x does; :class:`ShareGroupModel` answers ShareGroupHeartbeat,
ShareFetch and ShareAcknowledge (KIP-932 share groups) as Apache Kafka 4.4 does. All run with time
taken from an injected clock (no IO, no threads). Parked
JoinGroup/SyncGroup requests return an undone :class:`Reply` that the model completes later.
See :mod:`kgroup.testing.coordinator._model` for the rules and their sources. The request and
response types are the client's own (:mod:`kgroup.protocol.group_api`), re-exported here.
"""

from kgroup.protocol.group_api import *  # noqa: F403 (the request and response types, re-exported)
from kgroup.protocol.group_api import __all__ as _group_api_names
from kgroup.testing.coordinator._config import CoordinatorConfig as CoordinatorConfig
from kgroup.testing.coordinator._consumer_group import ConsumerGroupConfig as ConsumerGroupConfig
from kgroup.testing.coordinator._consumer_group import ConsumerGroupModel as ConsumerGroupModel
from kgroup.testing.coordinator._events import CoordinatorEvent as CoordinatorEvent
from kgroup.testing.coordinator._model import GroupCoordinatorModel as GroupCoordinatorModel
from kgroup.testing.coordinator._reply import Reply as Reply
from kgroup.testing.coordinator._share_api import *  # noqa: F403 (ShareFetch and ShareAcknowledge values)
from kgroup.testing.coordinator._share_api import __all__ as _share_api_names
from kgroup.testing.coordinator._share_group import ShareGroupConfig as ShareGroupConfig
from kgroup.testing.coordinator._share_group import ShareGroupModel as ShareGroupModel

__all__ = sorted([
    "ConsumerGroupConfig", "ConsumerGroupModel", "CoordinatorConfig", "CoordinatorEvent", "GroupCoordinatorModel",
    "Reply", "ShareGroupConfig", "ShareGroupModel", *_group_api_names, *_share_api_names,
])
