"""kafka-python's ``KafkaAdminClient`` behind :class:`kgroup.admin.AdminClientPort`.

``GroupAdmin`` sends the group APIs it needs for describing groups itself (over the
``Transport``); ListGroups, DeleteGroups and the admin's OffsetCommit come from kafka-python's
``KafkaAdminClient`` as they are (``list_groups``, ``delete_groups``, ``alter_group_offsets``),
no wire code of kgroup's own.

Rules:

1. Public ``KafkaAdminClient`` methods only.
2. Broker error codes are values in the result; what they mean is decided in ``kgroup.admin``.
   Client-side failures (no connection, no answer) are the future's exception.
3. kafka-python's calls block; each runs on a daemon thread of its own and returns a
   ``concurrent.futures.Future``, so the caller's deadline bounds the wait, and an abandoned
   call never holds the process at exit.
4. The client connects on first use (its own connections, bootstrapped within that call's
   timeout), not when built; :meth:`KafkaAdminClientPort.close` closes it.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from kgroup._io import quiet_kafka  # noqa: F401  (first: kafka-python, without its import-time warning)

# isort: split
import kafka.errors as KErrors
from kafka import KafkaAdminClient
from kafka.net.compat import KafkaNetClient
from kafka.structs import OffsetAndMetadata as KOffsetAndMetadata
from kafka.structs import TopicPartition as KTopicPartition

from kgroup import _error_codes as codes
from kgroup._io.kafka_python import _PASS_THROUGH
from kgroup.admin import GroupListing
from kgroup.config import ConsumerConfig
from kgroup.types import OffsetAndMetadata, TopicPartition

__all__ = ["KafkaAdminClientPort"]

T = TypeVar("T")


def _code(error: Any) -> int:
    """The Kafka error code of a kafka-python error class or instance (0 for ``NoError``)."""
    errno = getattr(error, "errno", None)
    return errno if isinstance(errno, int) else codes.UNKNOWN_SERVER_ERROR


def _code_of_name(name: str) -> int:
    """The code of a kafka-python error class named ``name`` ("OK" is 0): ``delete_groups`` answers names."""
    if name == "OK":
        return codes.NONE
    return _code(getattr(KErrors, name, None))


def _broker_code(exc: BaseException) -> int | None:
    """The broker's error code carried by a kafka-python exception, or None for a client-side failure."""
    if isinstance(exc, KErrors.BrokerResponseError):
        errno = exc.errno
        return errno if isinstance(errno, int) else None
    return None


class KafkaAdminClientPort:
    """``AdminClientPort`` over one lazily connected ``KafkaAdminClient``.

    Args:
        config: the network and security settings (``bootstrap_servers``, ``client_id``,
            ``request_timeout_ms``, ``security_protocol``, ``ssl_*``, ``sasl_*``, ...).

    """

    def __init__(self, config: ConsumerConfig) -> None:
        accepted = KafkaAdminClient.DEFAULT_CONFIG
        self._settings: dict[str, Any] = {
            key: getattr(config, key) for key in _PASS_THROUGH if key in accepted and hasattr(config, key)
        }
        self._lock = threading.Lock()  # guards _client and _closed
        self._building = threading.Lock()  # one connection attempt at a time
        self._client: Any = None
        self._closed = False

    def _admin(self, timeout_ms: int) -> Any:
        """The client, connected on first use within ``timeout_ms`` (one connection attempt at a time)."""
        with self._building:
            with self._lock:
                if self._closed:
                    raise ConnectionError("admin client closed")
                if self._client is not None:
                    return self._client
            built: list[Any] = []

            def network_client(**settings: Any) -> Any:
                built.append(KafkaNetClient(**settings))
                return built[-1]

            try:
                client = KafkaAdminClient(
                    **self._settings, bootstrap_timeout_ms=max(timeout_ms, 1), kafka_client=network_client
                )
            except Exception:
                for half_built in built:  # its IO thread runs already: stop it
                    half_built.close()
                raise
            with self._lock:
                if not self._closed:
                    self._client = client
                    return client
            client.close()
            raise ConnectionError("admin client closed")

    def _run(self, api: str, timeout_ms: int, call: Callable[[Any], T]) -> concurrent.futures.Future[T]:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def work() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                value = call(self._admin(timeout_ms))
            except Exception as exc:
                future.set_exception(exc)
            else:
                future.set_result(value)

        threading.Thread(target=work, name=f"kgroup-admin-{api}", daemon=True).start()
        return future

    def list_groups(self, timeout_ms: int) -> concurrent.futures.Future[tuple[int, tuple[GroupListing, ...]]]:
        """``KafkaAdminClient.list_groups()``: ListGroups at every broker; ``(error_code, groups)``."""

        def call(admin: Any) -> tuple[int, tuple[GroupListing, ...]]:
            try:
                answered = admin.list_groups()
            except KErrors.KafkaError as exc:
                code = _broker_code(exc)
                if code is None:
                    raise
                return code, ()
            return codes.NONE, tuple(
                GroupListing(
                    group_id=g["group_id"],
                    protocol_type=g.get("protocol_type") or "",
                    state=g.get("group_state") or None,
                    group_type=g.get("group_type") or None,
                )
                for g in answered
            )

        return self._run("ListGroups", timeout_ms, call)

    def delete_groups(
        self, group_ids: Iterable[str], node_id: int, timeout_ms: int
    ) -> concurrent.futures.Future[dict[str, int]]:
        """``KafkaAdminClient.delete_groups()`` at ``node_id``: each group's error code."""
        ids = list(group_ids)

        def call(admin: Any) -> dict[str, int]:
            try:
                answered = admin.delete_groups(ids, group_coordinator_id=node_id)
            except KErrors.KafkaError as exc:
                code = _broker_code(exc)
                if code is None:
                    raise
                return dict.fromkeys(ids, code)
            return {group_id: _code_of_name(str(result)) for group_id, result in answered.items()}

        return self._run("DeleteGroups", timeout_ms, call)

    def alter_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata], node_id: int, timeout_ms: int
    ) -> concurrent.futures.Future[dict[TopicPartition, int]]:
        """``KafkaAdminClient.alter_group_offsets()`` at ``node_id``: each partition's error code."""
        wanted = {
            KTopicPartition(tp.topic, tp.partition): KOffsetAndMetadata(om.offset, om.metadata, om.leader_epoch)
            for tp, om in offsets.items()
        }

        def call(admin: Any) -> dict[TopicPartition, int]:
            try:
                answered = admin.alter_group_offsets(group_id, wanted, group_coordinator_id=node_id)
            except KErrors.KafkaError as exc:
                code = _broker_code(exc)
                if code is None:
                    raise
                return dict.fromkeys(offsets, code)
            return {TopicPartition(tp.topic, tp.partition): _code(error) for tp, error in answered.items()}

        return self._run("OffsetCommit", timeout_ms, call)

    def close(self) -> None:
        """Close the client (if it connected). Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):  # best effort on shutdown
                client.close()
