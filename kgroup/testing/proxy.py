"""``CoordinatorProxy``: Kafka's classic group coordinator, faithfully modelled, in front of a real broker.

The embedded test broker (Tansu) stores and serves records well, but its group coordinator
deviates from Apache Kafka (``docs/testing.md``, "Each Tansu deviation and the proxy"). The
proxy is a loopback TCP server
speaking the Kafka protocol that clients use instead of the broker:

* FindCoordinator (group keys), JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
  OffsetFetch, DescribeGroups and ListGroups are answered by a
  :class:`~kgroup.testing.coordinator.GroupCoordinatorModel` (pure Python, Kafka's rules).
* Everything else (ApiVersions, Metadata, Produce, Fetch, ListOffsets, CreateTopics,
  FindCoordinator for transaction keys, ...) is forwarded to the upstream broker byte for byte.
  Each client connection gets its own upstream connection; requests are pipelined and responses
  matched first in, first out.
* Two Tansu answers are rewritten into Apache Kafka's (:mod:`kgroup.testing._tansu_workarounds`):
  ListOffsets LATEST gets the log end offset (``fix_list_offsets``) and Fetch responses honour
  the request's byte limits (``fix_fetch_limits``, KIP-74). Such requests are recorded with
  ``handled_by == "upstream-fixed"``; against Apache Kafka nothing changes.
* Broker addresses never leak: the proxy opens one listener per upstream broker node (keyed by
  node id, created when a Metadata response first names the node) and rewrites Metadata,
  DescribeCluster and transaction FindCoordinator responses to point at its listeners.
* ApiVersions responses are rewritten so the group APIs advertise what the model serves
  (intersected with kafka-python's classes): FindCoordinator 0-6, JoinGroup 0-9, SyncGroup 0-5,
  Heartbeat 0-4, LeaveGroup 0-5, OffsetCommit 2-9, OffsetFetch 1-9, DescribeGroups 0-5,
  ListGroups 0-5. DeleteGroups, OffsetDelete and the KIP-848 APIs (ConsumerGroupHeartbeat,
  ConsumerGroupDescribe) are removed; Metadata and DescribeCluster are clamped to the versions
  kafka-python can decode (the proxy re-encodes them).

Per connection, as on a Kafka broker:

* Responses go out in request order, even when a JoinGroup is parked and a later request (a
  forwarded Metadata, say) finishes first. Requests that expect no response (Produce with
  ``acks=0``) take no place in that queue.
* Requests are dispatched in arrival order. Coordinator requests are also processed one at a time
  (Kafka mutes a connection until its response is sent): a Heartbeat sent behind a parked
  JoinGroup reaches the model only once the JoinGroup is answered. Forwarded requests are not held
  behind parked coordinator requests once dispatched; they are pipelined upstream.

The coordinator is one listener at a time (initially the bootstrap broker's). Group requests on
any other listener get NOT_COORDINATOR (ListGroups answers an empty list there, as a broker that
coordinates no group does). :meth:`CoordinatorProxy.move_coordinator` and
:meth:`CoordinatorProxy.restart_coordinator` move and restart it; :attr:`CoordinatorProxy.faults`
injects errors, delays, drops, closed connections and black holes (:mod:`kgroup.testing.faults`).

Threading: an asyncio loop runs in one daemon thread and owns the model. Model timers are driven
by ``loop.call_at`` on :meth:`GroupCoordinatorModel.next_deadline` after every model call.
:meth:`CoordinatorProxy.call` runs a function on that thread (``proxy.call(lambda m:
m.group_state(g))``). ``partition_exists`` (OffsetCommit's UNKNOWN_TOPIC_OR_PARTITION) answers
from the partition counts of Metadata responses seen, refreshed from the broker before an
OffsetCommit names a partition not known yet.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import logging
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from types import TracebackType
from typing import Any, Final, TypeVar

import attrs

from kgroup import _error_codes as codes
from kgroup._clock import Clock, MonotonicClock
from kgroup._io import kafka_frames as frames
from kgroup._io import kafka_messages
from kgroup.protocol import group_api
from kgroup.testing import _model_wire
from kgroup.testing import _tansu_workarounds as tansu
from kgroup.testing.coordinator import CoordinatorConfig, CoordinatorEvent, GroupCoordinatorModel, Reply
from kgroup.testing.faults import FaultDecision, Faults, RequestContext

__all__ = ["CoordinatorProxy", "ModelFactory", "RequestRecord"]

log = logging.getLogger(__name__)

T = TypeVar("T")

ModelFactory = Callable[[Clock, Callable[[str, int], bool]], Any]
"""``factory(clock, partition_exists) -> model``: builds the coordinator model the proxy serves."""

_API_VERSIONS: Final = 18
_METADATA: Final = 3
_DESCRIBE_CLUSTER: Final = 60
_FIND_COORDINATOR_VERSIONS: Final = (0, 6)
_SIDE_REQUEST_TIMEOUT_S: Final = 10.0
_HIDDEN_APIS: Final = frozenset({42, 47, 68, 69})  # DeleteGroups, OffsetDelete, KIP-848 heartbeat/describe
_CLAMPED_APIS: Final = (_METADATA, _DESCRIBE_CLUSTER)
_MAX_FRAME: Final = 200 * 1024 * 1024
_VIRTUAL_NODE_BASE: Final = 1000


@attrs.define(kw_only=True)
class RequestRecord:
    """One request the proxy read, for tests to assert on (times in ``time.monotonic`` seconds).

    ``handled_by`` is ``"model"``, ``"proxy"`` (FindCoordinator, NOT_COORDINATOR, injected errors),
    ``"upstream"`` or ``"upstream-fixed"`` (forwarded, then the response rewritten: ListOffsets
    LATEST answered with the log end offset); ``fault`` names a fault that fired (``"error 27"``,
    ``"drop"``, ``"close"``, ``"black_hole"``, ``"delay 500 ms"``). ``ready_at`` is when the
    response became available (the model answered, the broker replied), ``answered_at`` when it
    was written to the client
    (later than ``ready_at`` while an earlier response on the connection is outstanding); both
    stay None for a request that gets no response. ``error_code`` is the top-level error code of a
    response the proxy or the model gave (None for forwarded responses and for APIs whose errors
    are per partition or per group only). A coordinator request with a STRING field over 0x7fff
    bytes (possible in flexible versions, e.g. a KIP-800 reason) is not answered: the proxy closes
    the connection as Kafka does (``handled_by == "proxy"``, no response).
    """

    connection_id: int
    node_id: int
    client_id: str
    api_key: int
    api_name: str
    api_version: int
    correlation_id: int
    received_at: float
    handled_by: str = ""
    fault: str | None = None
    ready_at: float | None = None
    answered_at: float | None = None
    error_code: int | None = None


@attrs.define(eq=False)
class _Listener:
    node_id: int
    upstream_host: str
    upstream_port: int
    virtual: bool
    server: asyncio.base_events.Server | None = None
    port: int = 0


class _Upstream:
    """One connection to a broker: pipelined requests, responses matched first in, first out."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._pending: list[asyncio.Future[bytes]] = []
        self._read_task: asyncio.Task[None] | None = None
        self._opening: asyncio.Future[None] | None = None
        self.closed = False

    async def open(self) -> None:
        if self._opening is None:
            self._opening = asyncio.get_running_loop().create_future()
            try:
                self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
            except Exception as exc:
                self.closed = True
                self._opening.set_exception(exc)
                self._opening.exception()  # mark retrieved
                raise
            self._opening.set_result(None)
            self._read_task = asyncio.get_running_loop().create_task(self._read_loop())
        else:
            await asyncio.shield(self._opening)

    def send(self, data: bytes, expect_response: bool) -> asyncio.Future[bytes] | None:
        if self.closed or self._writer is None:
            raise ConnectionError(f"upstream {self.host}:{self.port} is closed")
        future: asyncio.Future[bytes] | None = None
        if expect_response:
            future = asyncio.get_running_loop().create_future()
            self._pending.append(future)
        self._writer.write(data)
        return future

    async def _read_loop(self) -> None:
        assert self._reader is not None
        error: BaseException = ConnectionError(f"upstream {self.host}:{self.port} closed the connection")
        try:
            while True:
                size = int.from_bytes(await self._reader.readexactly(4), "big", signed=True)
                frame = await self._reader.readexactly(size)
                if not self._pending:
                    error = ConnectionError("unexpected response from upstream")
                    break
                future = self._pending.pop(0)
                if not future.done():
                    future.set_result(size.to_bytes(4, "big", signed=True) + frame)
        except (asyncio.IncompleteReadError, ConnectionError, OSError) as exc:
            error = ConnectionError(f"upstream {self.host}:{self.port}: {exc!r}")
        except asyncio.CancelledError:
            pass
        finally:
            self._fail(error)

    def _fail(self, error: BaseException) -> None:
        self.closed = True
        pending, self._pending = self._pending, []
        for future in pending:
            if not future.done():
                future.set_exception(error)
                future.exception()  # retrieved by whoever awaits; never "never retrieved"
        if self._writer is not None:
            self._writer.transport.abort()

    def close(self) -> None:
        if self._read_task is not None and not self._read_task.done():
            self._read_task.cancel()
        self._fail(ConnectionError("upstream connection closed by the proxy"))


@attrs.define(eq=False)
class _Conn:
    id: int
    listener: _Listener
    writer: asyncio.StreamWriter
    host: str
    client_id: str = ""
    slots: asyncio.Queue[tuple[asyncio.Future[bytes], RequestRecord]] = attrs.field(factory=asyncio.Queue)
    tasks: set[asyncio.Task[None]] = attrs.field(factory=set)
    writer_task: asyncio.Task[None] | None = None
    upstream: _Upstream | None = None
    dispatch_tail: asyncio.Future[None] | None = None
    model_pending: asyncio.Future[None] | None = None
    silent: bool = False
    group: bool = False
    closed: bool = False


@attrs.frozen(eq=False)
class _Exchange:
    """One request being served, from its connection's dispatch to its answer.

    ``slot`` is where the answer goes (None: no answer expected); ``dispatched`` is set once the
    request is handed on (upstream or to the model), which lets the connection's next one go.
    """

    conn: _Conn
    info: frames.RequestHeaderInfo
    frame: bytes
    slot: asyncio.Future[bytes] | None
    record: RequestRecord
    dispatched: asyncio.Future[None]


def _default_model_factory(config: CoordinatorConfig | None) -> ModelFactory:
    def build(clock: Clock, partition_exists: Callable[[str, int], bool]) -> Any:
        return GroupCoordinatorModel(config, clock=clock, partition_exists=partition_exists)

    return build


def _split_host_port(address: str) -> tuple[str, int]:
    host, _, port = address.strip().rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port)


class CoordinatorProxy:
    """A Kafka-protocol proxy whose group coordinator is the model (see the module docstring).

    Use as a context manager, or :meth:`start` and :meth:`stop`.

    Args:
        upstream: the real broker's ``bootstrap_servers`` (the first address is used).
        config: the model's :class:`~kgroup.testing.coordinator.CoordinatorConfig` (Kafka's
            defaults when None; tests usually pass ``group_initial_rebalance_delay_ms=0``).
        clock: the model's clock (``MonotonicClock()`` by default). With a fake clock, advance it
            and call :meth:`tick`.
        model_factory: builds the model instead of ``GroupCoordinatorModel(config, clock=...,
            partition_exists=...)`` (``config`` is then ignored).
        host: the loopback address the listeners bind to.
        start_timeout_s: how long :meth:`start` waits for the upstream broker.
        fix_list_offsets: answer ListOffsets LATEST with the log end offset (Apache Kafka's
            semantics; see the module docstring). False forwards Tansu's answer unchanged.
        fix_fetch_limits: trim Fetch responses to the request's ``partition_max_bytes`` and
            ``max_bytes`` as Kafka does (KIP-74). False forwards Tansu's answer unchanged.
        advertised_versions: ``{"LeaveGroup": (0, 2), ...}``: ApiVersions responses advertise
            these ranges instead (an API with ``low > high`` is removed), to test a client
            against an older broker. Requests are served as before.
        coordinator: ``"model"`` (the default: the model answers the group APIs, as above), or
            ``"upstream"``: every request, the group APIs and the KIP-848 ones (ConsumerGroupHeartbeat,
            ConsumerGroupDescribe) included, goes to the broker, whose own group coordinator
            answers (FindCoordinator's answer is rewritten to the proxy's listeners like
            Metadata's); the ApiVersions answer keeps the broker's group API ranges. The faults
            apply all the same: for a fault between a client and Apache Kafka's coordinator
            (``faults.drop(api="ConsumerGroupHeartbeat")``: heartbeats that are never answered).
            :meth:`move_coordinator`, :meth:`restart_coordinator` and :meth:`call` need the model.

    """

    def __init__(
        self,
        upstream: str,
        *,
        config: CoordinatorConfig | None = None,
        clock: Clock | None = None,
        model_factory: ModelFactory | None = None,
        host: str = "127.0.0.1",
        start_timeout_s: float = 30.0,
        fix_list_offsets: bool = True,
        fix_fetch_limits: bool = True,
        advertised_versions: Mapping[str, tuple[int, int]] | None = None,
        coordinator: str = "model",
    ) -> None:
        if coordinator not in ("model", "upstream"):
            raise ValueError(f"coordinator must be 'model' or 'upstream', got {coordinator!r}")
        #: True: the broker's own coordinator answers the group APIs (``coordinator="upstream"``)
        self._upstream_coordinator = coordinator == "upstream"
        self._upstream_address = _split_host_port(upstream.split(",")[0])
        self._clock: Clock = clock if clock is not None else MonotonicClock()
        self._wall = MonotonicClock()
        self._model_factory = model_factory if model_factory is not None else _default_model_factory(config)
        self._host = host
        self._start_timeout_s = start_timeout_s
        self._fix_list_offsets = fix_list_offsets
        self._fix_fetch_limits = fix_fetch_limits
        self._advertised = {frames.api_key_of(name): r for name, r in (advertised_versions or {}).items()}
        self._upstream_versions: dict[int, tuple[int, int]] = {}
        self._side: dict[tuple[str, int], _Upstream] = {}
        self.faults = Faults(self._wall)
        """The fault rules (:class:`~kgroup.testing.faults.Faults`); thread-safe."""
        self._lock = threading.Lock()
        self._records: list[RequestRecord] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._model: Any = None
        self._listeners: dict[int, _Listener] = {}
        self._conns: dict[int, _Conn] = {}
        self._conn_ids = itertools.count(1)
        self._correlation_ids = itertools.count(1)
        self._control: _Upstream | None = None
        self._metadata_version = 1
        self._partitions: dict[str, int] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._bootstrap_node = -1
        self._coordinator_node = -1
        self._served = self._served_versions()
        self._started = False
        self._stopped = False

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> CoordinatorProxy:
        """Start the loop thread, discover the upstream brokers and open their listeners.

        Raises:
            RuntimeError: already started or stopped.
            Exception: the upstream broker could not be reached (the proxy is stopped again).

        """
        if self._started:
            raise RuntimeError("CoordinatorProxy already started")
        self._started = True
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=loop.run_forever, name="kgroup-coordinator-proxy", daemon=True)
        self._thread.start()
        try:
            self._run(self._startup(), self._start_timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Close every listener and connection and stop the loop thread. Idempotent."""
        if self._stopped or self._loop is None:
            self._stopped = True
            return
        self._stopped = True
        loop, thread = self._loop, self._thread
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(10)
        if not loop.is_running():
            loop.close()

    def __enter__(self) -> CoordinatorProxy:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # ------------------------------------------------------------------ public API
    @property
    def bootstrap_servers(self) -> str:
        """``"127.0.0.1:PORT"``: the listener of the upstream bootstrap broker."""
        listener = self._listeners.get(self._bootstrap_node)
        if listener is None:
            raise RuntimeError("CoordinatorProxy is not started")
        return f"{self._host}:{listener.port}"

    @property
    def coordinator_node_id(self) -> int:
        """The node id FindCoordinator currently names for groups."""
        return self._coordinator_node

    def listeners(self) -> dict[int, int]:
        """``node id -> listening port`` of every listener so far."""
        return self.call(lambda _m: {n: lst.port for n, lst in self._listeners.items()})

    def call(self, fn: Callable[[Any], T], timeout_s: float = 10.0) -> T:
        """Run ``fn(model)`` on the loop thread and return its result (thread-safe).

        Model timers are rescheduled afterwards, so ``fn`` may change the model.

        Raises:
            Exception: whatever ``fn`` raises; ``TimeoutError`` after ``timeout_s``.

        """

        def run() -> T:
            try:
                return fn(self._model)
            finally:
                self._reschedule()

        return self._call_soon(run, timeout_s)

    def tick(self) -> None:
        """Let the model fire due timers now (for an injected fake clock) and reschedule."""
        self.call(lambda m: m.tick())

    def model_events(self, group_id: str | None = None) -> list[CoordinatorEvent]:
        """The model's event log so far (optionally one group's), oldest first."""
        return self.call(lambda m: [e for e in m.events if group_id is None or e.group_id == group_id])

    def requests(self, api: str | int | None = None) -> list[RequestRecord]:
        """Copies of the request records so far, oldest first (optionally of one API)."""
        key = frames.api_key_of(api) if isinstance(api, str) else api
        with self._lock:
            return [attrs.evolve(r) for r in self._records if key is None or r.api_key == key]

    def move_coordinator(self, *, load_ms: int | None = None) -> int:
        """Move the group coordinator to a new listener with a new node id; return that id.

        Group requests on the old listener get NOT_COORDINATOR from now on; FindCoordinator names
        the new one. The model keeps its state (Kafka's new coordinator loads the groups from the
        log); with ``load_ms`` it restarts as well (``model.restart(load_ms=load_ms)``), answering
        COORDINATOR_LOAD_IN_PROGRESS meanwhile. Parked requests on the old listener stay parked
        unless the restart completes them.
        """

        async def move() -> int:
            new_id = max([*self._listeners, _VIRTUAL_NODE_BASE - 1]) + 1
            base = self._listeners[self._bootstrap_node]
            await self._ensure_listener(new_id, base.upstream_host, base.upstream_port, virtual=True)
            self._coordinator_node = new_id
            if load_ms is not None:
                self._model.restart(load_ms=load_ms)
                self._reschedule()
            return new_id

        return self._run(move(), 10.0)

    def restart_coordinator(self, load_ms: int = 0) -> None:
        """Restart the coordinator: close group connections, then ``model.restart(load_ms=load_ms)``.

        Committed offsets survive (the model's rule); "group connections" are client connections
        that sent any coordinator request (not counting FindCoordinator).
        """

        def restart(model: Any) -> None:
            for conn in list(self._conns.values()):
                if conn.group:
                    self._close_conn(conn)
            model.restart(load_ms=load_ms)

        self.call(restart)

    def close_connections(self, node_id: int | None = None) -> int:
        """Close client connections now (all, or those of listener ``node_id``); return how many."""

        def close(_model: Any) -> int:
            victims = [c for c in self._conns.values() if node_id is None or c.listener.node_id == node_id]
            for conn in victims:
                self._close_conn(conn)
            return len(victims)

        return self.call(close)

    # ------------------------------------------------------------------ loop plumbing
    def _run(self, coro: Coroutine[Any, Any, T], timeout_s: float) -> T:
        if self._loop is None:
            coro.close()
            raise RuntimeError("CoordinatorProxy is not started")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout_s)

    def _call_soon(self, fn: Callable[[], T], timeout_s: float) -> T:
        loop = self._loop
        if loop is None or self._stopped:
            raise RuntimeError("CoordinatorProxy is not running")
        if threading.current_thread() is self._thread:
            return fn()
        result: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            try:
                result.set_result(fn())
            except BaseException as exc:
                result.set_exception(exc)

        loop.call_soon_threadsafe(run)
        return result.result(timeout_s)

    def _served_versions(self) -> dict[int, tuple[int, int]]:
        served: dict[int, tuple[int, int]] = {}
        wanted = {**_model_wire.MODEL_VERSIONS, group_api.FIND_COORDINATOR: _FIND_COORDINATOR_VERSIONS}
        for key, (low, high) in wanted.items():
            kp_range = frames.api_version_range(key)
            if kp_range is not None and max(low, kp_range[0]) <= min(high, kp_range[1]):
                served[key] = (max(low, kp_range[0]), min(high, kp_range[1]))
        return served

    async def _startup(self) -> None:
        self._model = self._model_factory(self._clock, self._partition_exists)
        host, port = self._upstream_address
        self._control = _Upstream(host, port)
        await self._control.open()
        _, versions = await self._control_request(_API_VERSIONS, 0, {})
        ranges = {k["api_key"]: (k["min_version"], k["max_version"]) for k in versions["api_keys"]}
        self._upstream_versions = ranges
        kp_metadata = frames.api_version_range(_METADATA) or (0, 0)
        up_metadata = ranges.get(_METADATA, (0, 0))
        self._metadata_version = max(up_metadata[0], min(up_metadata[1], kp_metadata[1], 12))
        _, metadata = await self._control_request(_METADATA, self._metadata_version, {"topics": []})
        brokers = sorted(metadata["brokers"], key=lambda b: b["node_id"])
        if not brokers:
            raise RuntimeError(f"upstream {host}:{port} reported no brokers")
        for broker in brokers:
            await self._ensure_listener(broker["node_id"], broker["host"], broker["port"], virtual=False)
        match = [b["node_id"] for b in brokers if (b["host"], b["port"]) == (host, port)]
        self._bootstrap_node = match[0] if match else brokers[0]["node_id"]
        self._coordinator_node = self._bootstrap_node
        self._reschedule()

    async def _shutdown(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for listener in self._listeners.values():
            if listener.server is not None:
                listener.server.close()
        for conn in list(self._conns.values()):
            self._close_conn(conn)
        if self._control is not None:
            self._control.close()
        for side in self._side.values():
            side.close()
        self._side.clear()
        await asyncio.sleep(0)

    async def _control_request(self, api_key: int, version: int, body: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
        """A request of the proxy's own on its control connection to the bootstrap broker."""
        if self._control is None or self._control.closed:
            host, port = self._upstream_address
            self._control = _Upstream(host, port)
            await self._control.open()
        correlation_id = next(self._correlation_ids)
        data = frames.encode_request(api_key, version, correlation_id, "kgroup-coordinator-proxy", body)
        future = self._control.send(data, True)
        assert future is not None
        raw = await asyncio.wait_for(future, 30.0)
        return frames.decode_response(api_key, version, raw[4:])

    async def _ensure_listener(self, node_id: int, host: str, port: int, *, virtual: bool) -> _Listener:
        listener = self._listeners.get(node_id)
        if listener is not None:
            if not listener.virtual and (listener.upstream_host, listener.upstream_port) != (host, port):
                listener.upstream_host, listener.upstream_port = host, port
            return listener
        listener = _Listener(node_id, host, port, virtual)
        self._listeners[node_id] = listener

        async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await self._serve_conn(listener, reader, writer)

        listener.server = await asyncio.start_server(on_connect, self._host, 0)
        listener.port = int(listener.server.sockets[0].getsockname()[1])
        log.debug("proxy listener for node %s on port %s -> %s:%s", node_id, listener.port, host, port)
        return listener

    # ------------------------------------------------------------------ model timers
    def _reschedule(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._model is None or self._loop is None or self._stopped:
            return
        deadline = self._model.next_deadline()
        if deadline is None:
            return
        delay = max(0.0, float(deadline) - self._clock.monotonic())
        self._timer = self._loop.call_later(delay, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        try:
            self._model.tick()
        except Exception:
            log.exception("coordinator model tick failed")
        self._reschedule()

    def _partition_exists(self, topic: str, partition: int) -> bool:
        count = self._partitions.get(topic)
        return count is not None and 0 <= partition < count

    def _learn_partitions(self, metadata: Mapping[str, Any]) -> None:
        for topic in metadata.get("topics") or ():
            name = topic.get("name")
            if not name:
                continue
            if topic.get("error_code", 0) == 0 and topic.get("partitions") is not None:
                self._partitions[name] = len(topic["partitions"])
            else:
                self._partitions.pop(name, None)

    async def _ensure_partitions_known(self, requests: Sequence[Any]) -> None:
        missing = sorted(
            {
                t.name
                for r in requests
                if isinstance(r, group_api.OffsetCommitRequest)
                for t in r.topics
                for p in t.partitions
                if not self._partition_exists(t.name, p.partition_index)
            }
        )
        if not missing:
            return
        try:
            _, metadata = await self._control_request(
                _METADATA,
                self._metadata_version,
                {"topics": [{"name": name} for name in missing], "allow_auto_topic_creation": False},
            )
        except Exception:
            log.warning("metadata refresh for %s failed", missing, exc_info=True)
            return
        self._learn_partitions(metadata)

    # ------------------------------------------------------------------ connections
    async def _serve_conn(
        self, listener: _Listener, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        peer = writer.get_extra_info("peername")
        host = "/" + (peer[0] if isinstance(peer, tuple) and peer else "127.0.0.1")
        conn = _Conn(next(self._conn_ids), listener, writer, host)
        self._conns[conn.id] = conn
        if self.faults.black_holed(listener.node_id):
            conn.silent = True
        conn.writer_task = asyncio.get_running_loop().create_task(self._write_loop(conn))
        try:
            while not conn.closed:
                size = int.from_bytes(await reader.readexactly(4), "big", signed=True)
                if not 10 <= size <= _MAX_FRAME:
                    log.warning("connection %s: bad frame size %s; closing", conn.id, size)
                    break
                frame = await reader.readexactly(size)
                self._on_request(conn, frame)
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass
        except Exception:
            log.exception("connection %s failed", conn.id)
        finally:
            self._close_conn(conn)

    def _close_conn(self, conn: _Conn) -> None:
        if conn.closed:
            return
        conn.closed = True
        self._conns.pop(conn.id, None)
        for task in list(conn.tasks):
            task.cancel()
        if conn.writer_task is not None:
            conn.writer_task.cancel()
        while not conn.slots.empty():
            slot, _ = conn.slots.get_nowait()
            slot.cancel()
        if conn.upstream is not None:
            conn.upstream.close()
        conn.writer.transport.abort()

    async def _write_loop(self, conn: _Conn) -> None:
        while True:
            slot, record = await conn.slots.get()
            data = await slot
            if conn.silent or self.faults.black_holed(conn.listener.node_id):
                conn.silent = True
                continue
            conn.writer.write(data)
            record.answered_at = self._wall.monotonic()
            try:
                await conn.writer.drain()
            except (ConnectionError, OSError):
                self._close_conn(conn)
                return

    def _on_request(self, conn: _Conn, frame: bytes) -> None:
        info = frames.peek_request_header(frame)
        conn.client_id = info.client_id or ""
        node_id = conn.listener.node_id
        ctx = RequestContext(
            api_key=info.api_key,
            api_version=info.api_version,
            client_id=conn.client_id,
            node_id=node_id,
            connection_id=conn.id,
        )
        record = RequestRecord(
            connection_id=conn.id,
            node_id=node_id,
            client_id=conn.client_id,
            api_key=info.api_key,
            api_name=frames.api_name(info.api_key),
            api_version=info.api_version,
            correlation_id=info.correlation_id,
            received_at=self._wall.monotonic(),
        )
        with self._lock:
            self._records.append(record)
        if conn.silent or self.faults.black_holed(node_id):
            conn.silent = True
            record.fault = "black_hole"
            self.faults.record("black_hole", ctx, "request swallowed")
            return
        decision = self.faults.decide(ctx)
        if decision.action == "close":
            record.fault = "close"
            self._close_conn(conn)
            return
        slot: asyncio.Future[bytes] | None = None
        if frames.request_expects_response(frame):
            slot = asyncio.get_running_loop().create_future()
            slot.add_done_callback(lambda f: self._mark_ready(f, record))
            conn.slots.put_nowait((slot, record))
        if decision.action == "drop":
            record.fault = "drop"
            return
        if decision.action == "error":
            record.fault = f"error {decision.error_code}"
        elif decision.delay_s:
            record.fault = f"delay {round(decision.delay_s * 1000)} ms"
        previous = conn.dispatch_tail
        dispatched: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        conn.dispatch_tail = dispatched
        task = asyncio.get_running_loop().create_task(
            self._process(_Exchange(conn, info, frame, slot, record, dispatched), decision, previous)
        )
        conn.tasks.add(task)
        task.add_done_callback(conn.tasks.discard)

    async def _process(self, ex: _Exchange, decision: FaultDecision, previous: asyncio.Future[None] | None) -> None:
        conn, info, frame, slot, record = ex.conn, ex.info, ex.frame, ex.slot, ex.record
        try:
            if previous is not None and not previous.done():
                await asyncio.wait([previous])
            if decision.delay_s > 0:
                await asyncio.sleep(decision.delay_s)
            if decision.action == "error":
                record.handled_by = "proxy"
                record.error_code = decision.error_code
                self._answer(slot, self._error_response(conn, info, frame, decision.error_code))
            elif info.api_key in _model_wire.MODEL_METHODS and not self._upstream_coordinator:
                await self._serve_model(ex)
            elif info.api_key == group_api.FIND_COORDINATOR and not self._upstream_coordinator and (
                found := self._find_group_coordinator(conn, info, frame)
            ):
                record.handled_by = "proxy"
                self._answer(slot, found)
            else:
                record.handled_by = "upstream"
                await self._forward(ex)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("connection %s: %s v%s failed; closing", conn.id, record.api_name, info.api_version)
            self._close_conn(conn)
        finally:
            if not ex.dispatched.done():
                ex.dispatched.set_result(None)

    def _mark_ready(self, slot: asyncio.Future[bytes], record: RequestRecord) -> None:
        if not slot.cancelled():
            record.ready_at = self._wall.monotonic()

    @staticmethod
    def _answer(slot: asyncio.Future[bytes] | None, data: bytes) -> None:
        if slot is not None and not slot.done():
            slot.set_result(data)

    # ------------------------------------------------------------------ coordinator requests
    async def _serve_model(self, ex: _Exchange) -> None:
        conn, info, slot, record = ex.conn, ex.info, ex.slot, ex.record
        while conn.model_pending is not None and not conn.model_pending.done():
            await asyncio.wait([conn.model_pending])
        api, version = info.api_key, info.api_version
        body = frames.decode_request_body(api, version, ex.frame)
        try:
            _model_wire.check_string_lengths(body)
        except _model_wire.MalformedRequestError as exc:
            # Kafka's generated readers refuse a STRING over 0x7fff bytes and SocketServer closes the
            # connection without an answer (RequestContext.parseRequest: InvalidRequestException).
            log.info("connection %s: %s v%s: %s; closing as Kafka does", conn.id, record.api_name, version, exc)
            record.handled_by = "proxy"
            self._close_conn(conn)
            return
        requests = self._requests(conn, info, body)
        conn.group = True
        if conn.listener.node_id != self._coordinator_node:
            record.handled_by = "proxy"
            if api == group_api.LIST_GROUPS:
                responses: tuple[Any, ...] = (group_api.ListGroupsResponse(),)
            else:
                responses = _model_wire.error_responses(requests, codes.NOT_COORDINATOR)
            record.error_code = getattr(responses[0], "error_code", None) if responses else None
            self._answer(slot, self._encode_model(info, responses, requests))
            return
        record.handled_by = "model"
        if api == group_api.OFFSET_COMMIT:
            await self._ensure_partitions_known(requests)
        method = getattr(self._model, _model_wire.MODEL_METHODS[api])
        replies: list[Reply[Any]] = []
        try:
            for request in requests:
                replies.append(method(request))
        finally:
            self._reschedule()
        pending: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        conn.model_pending = pending
        ex.dispatched.set_result(None)

        def on_done(_response: Any) -> None:
            if not all(r.done for r in replies) or pending.done():
                return
            pending.set_result(None)
            if conn.closed:
                return
            answers = tuple(r.response for r in replies)
            record.error_code = getattr(answers[0], "error_code", None) if answers else None
            try:
                data = self._encode_model(info, answers, requests)
            except Exception:
                log.exception("cannot encode the model's %s answer", frames.api_name(api))
                self._close_conn(conn)
                return
            self._answer(slot, data)

        for reply in replies:
            reply.add_done_callback(on_done)
        if not replies:
            on_done(None)

    @staticmethod
    def _requests(
        conn: _Conn, info: frames.RequestHeaderInfo, body: Mapping[str, Any]
    ) -> tuple[group_api.GroupRequest, ...]:
        return kafka_messages.requests_from_body(
            info.api_key, info.api_version, body, client_id=conn.client_id, client_host=conn.host
        )

    @staticmethod
    def _encode_model(info: frames.RequestHeaderInfo, responses: Sequence[Any], requests: Sequence[Any]) -> bytes:
        body = _model_wire.answer_body(info.api_key, info.api_version, responses, requests)
        return frames.encode_response(info.api_key, info.api_version, info.correlation_id, body)

    def _find_group_coordinator(self, conn: _Conn, info: frames.RequestHeaderInfo, frame: bytes) -> bytes | None:
        """The answer naming the group coordinator's listener; None for other key types (forwarded)."""
        body = frames.decode_request_body(info.api_key, info.api_version, frame)
        requests = self._requests(conn, info, body)
        if any(isinstance(r, group_api.FindCoordinatorRequest) and r.key_type != 0 for r in requests):
            return None
        listener = self._listeners[self._coordinator_node]
        found = group_api.FindCoordinatorResponse(node_id=listener.node_id, host=self._host, port=listener.port)
        return self._encode_model(info, [found] * len(requests), requests)

    def _error_response(self, conn: _Conn, info: frames.RequestHeaderInfo, frame: bytes, error: int) -> bytes:
        api, version = info.api_key, info.api_version
        if api in _model_wire.MODEL_METHODS or api == group_api.FIND_COORDINATOR:
            requests = self._requests(conn, info, frames.decode_request_body(api, version, frame))
            return self._encode_model(info, _model_wire.error_responses(requests, error), requests)
        body_out = {"error_code": error}
        version_out = frames.response_version_of(api, version, body_out)
        return frames.encode_response(api, version_out, info.correlation_id, body_out)

    # ------------------------------------------------------------------ forwarding
    async def _forward(self, ex: _Exchange) -> None:
        conn, info, frame, slot = ex.conn, ex.info, ex.frame, ex.slot
        if conn.upstream is None:
            listener = conn.listener
            conn.upstream = _Upstream(listener.upstream_host, listener.upstream_port)
        upstream = conn.upstream
        try:
            await upstream.open()
            future = upstream.send(len(frame).to_bytes(4, "big", signed=True) + frame, slot is not None)
        except (ConnectionError, OSError):
            self._close_conn(conn)
            return
        ex.dispatched.set_result(None)
        if future is None:
            return
        try:
            raw = await future
        except ConnectionError:
            self._close_conn(conn)
            return
        if info.api_key in (_API_VERSIONS, _METADATA, _DESCRIBE_CLUSTER, group_api.FIND_COORDINATOR):
            raw = await self._rewrite(info, raw)
        elif info.api_key == tansu.LIST_OFFSETS and self._fix_list_offsets:
            fixed = await self._fix_latest_offsets(conn.listener, info.api_version, frame, raw)
            if fixed is not None:
                raw = fixed
                ex.record.handled_by = "upstream-fixed"
        elif info.api_key == tansu.FETCH and self._fix_fetch_limits:
            trimmed = tansu.trim_fetch(info.api_version, frame, raw)
            if trimmed is not None:
                raw = trimmed
                ex.record.handled_by = "upstream-fixed"
        self._answer(slot, raw)

    async def _fix_latest_offsets(self, listener: _Listener, version: int, frame: bytes, raw: bytes) -> bytes | None:
        async def fetch(fetch_version: int, body: Mapping[str, Any]) -> dict[str, Any]:
            _, response = await self._side_request(listener, tansu.FETCH, fetch_version, body)
            return response

        upstream = self._upstream_versions.get(tansu.FETCH, (0, -1))
        return await tansu.fix_latest_offsets(version, frame, raw, fetch, upstream)

    async def _side_request(
        self, listener: _Listener, api_key: int, version: int, body: Mapping[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        """A request of the proxy's own to ``listener``'s broker, on one side connection per broker."""
        key = (listener.upstream_host, listener.upstream_port)
        side = self._side.get(key)
        if side is None or side.closed:
            side = _Upstream(*key)
            self._side[key] = side
        await side.open()
        data = frames.encode_request(api_key, version, next(self._correlation_ids), "kgroup-coordinator-proxy", body)
        future = side.send(data, True)
        assert future is not None
        raw = await asyncio.wait_for(future, _SIDE_REQUEST_TIMEOUT_S)
        return frames.decode_response(api_key, version, raw[4:])

    async def _rewrite(self, info: frames.RequestHeaderInfo, raw: bytes) -> bytes:
        api, version = info.api_key, info.api_version
        try:
            correlation_id, body = frames.decode_response(api, version, raw[4:])
        except Exception:
            log.warning("cannot decode %s v%s from upstream; forwarded unchanged", frames.api_name(api), version)
            return raw
        if api == _API_VERSIONS:
            self._rewrite_api_versions(body)
        elif api == _METADATA:
            self._learn_partitions(body)
            for broker in body.get("brokers") or ():
                await self._rewrite_node(broker, "node_id")
        elif api == _DESCRIBE_CLUSTER:
            for broker in body.get("brokers") or ():
                await self._rewrite_node(broker, "broker_id")
        elif version < 4:  # FindCoordinator for a transaction (or share) key
            if body.get("error_code", 0) == 0:
                await self._rewrite_node(body, "node_id")
        else:
            for coordinator in body.get("coordinators") or ():
                if coordinator.get("error_code", 0) == 0:
                    await self._rewrite_node(coordinator, "node_id")
        return frames.encode_response(api, frames.response_version_of(api, version, body), correlation_id, body)

    async def _rewrite_node(self, entry: dict[str, Any], id_field: str) -> None:
        listener = await self._ensure_listener(entry[id_field], entry["host"], entry["port"], virtual=False)
        entry["host"] = self._host
        entry["port"] = listener.port

    def _rewrite_api_versions(self, body: dict[str, Any]) -> None:
        keys = {k["api_key"]: dict(k) for k in body.get("api_keys") or ()}
        if not self._upstream_coordinator:
            for hidden in _HIDDEN_APIS:
                keys.pop(hidden, None)
            for key, (low, high) in self._served.items():
                keys[key] = {"api_key": key, "min_version": low, "max_version": high}
        for key in _CLAMPED_APIS:
            entry = keys.get(key)
            kp_range = frames.api_version_range(key)
            if entry is None or kp_range is None:
                continue
            low, high = max(entry["min_version"], kp_range[0]), min(entry["max_version"], kp_range[1])
            if low > high:
                keys.pop(key)
            else:
                entry["min_version"], entry["max_version"] = low, high
        for key, (low, high) in self._advertised.items():
            if low > high:
                keys.pop(key, None)
            else:
                keys[key] = {"api_key": key, "min_version": low, "max_version": high}
        body["api_keys"] = [keys[k] for k in sorted(keys)]
