"""``MachineConfig``: the consumer settings the classic ``GroupMachine`` reads, picked from a ``ConsumerConfig``."""

from __future__ import annotations

import attrs

from kgroup.assignors.base import Assignor
from kgroup.config import ConsumerConfig
from kgroup.types import RebalanceProtocol

__all__ = ["MachineConfig", "machine_config"]


@attrs.frozen(kw_only=True)
class MachineConfig:
    """The consumer settings the machine uses (``machine_config`` picks them from a ``ConsumerConfig``)."""

    group_id: str
    group_instance_id: str | None
    #: the rebalance protocol every assignor supports (``ConsumerConfig.protocol``)
    protocol: RebalanceProtocol
    assignors: tuple[Assignor, ...]
    client_rack: str | None
    session_timeout_ms: int
    heartbeat_interval_ms: int
    max_poll_interval_ms: int
    #: JoinGroup's rebalance timeout (``ConsumerConfig.effective_rebalance_timeout_ms``)
    rebalance_timeout_ms: int
    request_timeout_ms: int
    retry_backoff_ms: int
    retry_backoff_max_ms: int


def machine_config(config: ConsumerConfig) -> MachineConfig:
    """The fields of ``config`` the machine uses: each of the same name, the rebalance timeout in effect."""
    same_name = {f.name: getattr(config, f.name) for f in attrs.fields(MachineConfig)}
    same_name["rebalance_timeout_ms"] = config.effective_rebalance_timeout_ms
    return MachineConfig(**same_name)
