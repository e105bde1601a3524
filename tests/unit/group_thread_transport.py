"""A transport for a ``GroupThread`` under test that answers at once (not a test module).

``ImmediateTransport`` answers FindCoordinator with node 1 and every topic-id lookup with
``{ORDERS: "orders"}``, each as an already completed future; a test's subclass adds the
requests it scripts (ConsumerGroupHeartbeat, DescribeConfigs ...), answering with ``done``.
"""

from __future__ import annotations

import concurrent.futures
import uuid
from typing import Any

from kgroup._error_codes import NONE
from kgroup.membership import events as ev
from kgroup.membership.commands import SendFindCoordinator

#: the one topic's id
ORDERS = uuid.UUID(int=1)


class ImmediateTransport:
    """FindCoordinator and topic ids answered at once."""

    @staticmethod
    def done(value: object) -> concurrent.futures.Future[Any]:
        """A completed future: failed with ``value`` if it is an exception, else holding it."""
        f: concurrent.futures.Future[Any] = concurrent.futures.Future()
        if isinstance(value, BaseException):
            f.set_exception(value)
        else:
            f.set_result(value)
        return f

    def send(self, command: object, group_id: str) -> concurrent.futures.Future[Any]:
        assert isinstance(command, SendFindCoordinator)
        return self.done(ev.FindCoordinatorResponded(request_id=command.request_id, error_code=NONE, node_id=1,
                                                     host="h", port=9092))

    def topic_ids(self, timeout_ms: int) -> concurrent.futures.Future[Any]:
        return self.done({ORDERS: "orders"})
