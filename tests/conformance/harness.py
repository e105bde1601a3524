"""The differential runner of the conformance suite (not a test module).

One *script* (a list of steps, see :mod:`tests.conformance.scripts`) is played against two
coordinators in lockstep:

* **Kafka**: an Apache Kafka broker, one TCP connection per actor, requests encoded at the
  script's explicit versions with kgroup's adapter codec (``encode_request``/``decode_response``
  over kafka-python's protocol classes). A reader thread per connection timestamps every
  response frame, so a parked JoinGroup/SyncGroup's completion time is known to the millisecond.
* **Model**: :class:`~kgroup.testing.coordinator.GroupCoordinatorModel` on a manual clock. Each
  request takes the proxy's path: the same body dict is encoded with ``encode_request``, decoded
  with ``decode_request_body``, checked against Kafka's 0x7fff string limit, mapped with
  ``kgroup._io.kafka_messages.requests_from_body``, answered by the model, mapped back with
  ``kgroup.testing._model_wire.answer_body`` and sent through ``encode_response`` and
  ``decode_response``. Both sides therefore produce the same kind of decoded response dict.

Lockstep time: the model's clock follows the wall clock of the Kafka run. Before each step the
model's clock is moved to the moment the step's request went to Kafka, firing the model's timers
in deadline order on the way, so the model sees every request at the time Kafka saw it. A parked
reply's completion time is therefore comparable on both sides.

Normalisation (what "the same response" means): member ids are random on Kafka
(``<client id or instance id>-<UUID>``, ``ClassicGroup.generateMemberId``) and the model draws
them the same way; each id is replaced by ``<prefix>#<n>``, n counting the distinct ids with
that prefix in order of first appearance on that side. Group ids and topic names become the
script's symbols. ``throttle_time_ms`` is dropped. Lists whose order Kafka takes from a
``java.util.HashMap`` keyed by member id (JoinGroup ``members``, DescribeGroups ``members``) or
group id (ListGroups ``groups``, DeleteGroups ``results``, a map keyed by group id in the schema),
and OffsetFetch's topics and partitions (hash-ordered in the all-topics answer), are sorted. ListGroups
answers are restricted to the script's groups (the broker is shared by every script). Nothing
else is normalised: generation ids, error codes, leaders, assignments, protocol names and
states must be equal.

Timing tolerance: a response the model gives at model time ``t`` must reach the Kafka client no
earlier than ``t - EARLY_TOLERANCE_MS`` and no later than ``t + LATE_TOLERANCE_MS``. This
applies to every parked JoinGroup/SyncGroup completion (by another member's request, a
rebalance timeout, a pending-sync timeout, a session expiry) and to every polled condition
(:class:`Until`, e.g. a session expiry seen in DescribeGroups, polled every ``POLL_MS``).
A request the model answers at once is awaited up to ``RESPONSE_TIMEOUT_S`` on Kafka; a request
the model parks must not be answered by Kafka within ``PARKED_PROBE_MS``.
"""

from __future__ import annotations

import itertools
import queue
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kgroup._io import kafka_frames as frames
from kgroup._io import kafka_messages
from kgroup.testing import _model_wire
from kgroup.testing.coordinator import CoordinatorConfig, GroupCoordinatorModel, Reply

EARLY_TOLERANCE_MS = 50
LATE_TOLERANCE_MS = 500
PARKED_PROBE_MS = 100
RESPONSE_TIMEOUT_S = 10.0
SETTLE_ACTOR = "settle"
"""The harness's own connection for DescribeGroups after a parked request (see ``Runner._settle``)."""
SETTLE_DESCRIBE_V = 5
POLL_MS = 20
LATE_REPORT_S = 2.0
"""After a mismatch, how much longer to wait for Kafka's late answer, only to report it."""
MAX_MODEL_WAIT_MS = 120_000
"""How far the model's clock may run ahead looking for a completion before the harness calls it "never"."""

API_KEYS: dict[str, int] = {
    "OffsetCommit": 8,
    "OffsetFetch": 9,
    "JoinGroup": 11,
    "Heartbeat": 12,
    "LeaveGroup": 13,
    "SyncGroup": 14,
    "DescribeGroups": 15,
    "ListGroups": 16,
    "DeleteGroups": 42,
}

_UUID_SUFFIX = re.compile(r"^(.*)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


class Closed:
    """The connection was closed instead of answered (Kafka's answer to a malformed request)."""

    def __repr__(self) -> str:
        return "CLOSED"


CLOSED = Closed()


# ----------------------------------------------------------------------------- references


@dataclass(frozen=True)
class _ActorValue:
    """A value an actor holds, different on each side; the subclass says which (equal only within a subclass)."""

    actor: str


class M(_ActorValue):
    """The member id actor ``actor`` holds on each side (raw in requests, normalised in expectations)."""


class Gen(_ActorValue):
    """The generation id of actor ``actor``'s last successful JoinGroup on each side."""


@dataclass(frozen=True)
class _Symbol:
    """A name a script uses for something real; the subclass says what (equal only within a subclass)."""

    symbol: str


class Group(_Symbol):
    """A script group symbol ("g", "g2", ...): a unique real group id per run, the symbol in answers."""


class Topic(_Symbol):
    """A topic symbol: ``"t"`` is the session's 3-partition topic, anything else does not exist."""


@dataclass(frozen=True)
class AssignAll:
    """SyncGroup ``assignments`` of a leader: every member of its last JoinGroup answer gets its label as bytes."""


ASSIGN_ALL = AssignAll()


# ----------------------------------------------------------------------------- steps


@dataclass(frozen=True)
class Send:
    """``actor`` sends ``api`` at ``version``; answered at once unless ``parked``.

    ``fields`` is the full request body (every field of every version; the codec keeps the
    ones the version has), with :class:`M`/:class:`Gen`/:class:`Group`/:class:`Topic` references.
    ``expect`` is a subset of the normalised answer (nested dicts compared key by key; lists
    exactly) that Kafka's answer must match, or :data:`CLOSED`.
    """

    actor: str
    api: str
    version: int
    fields: Mapping[str, Any]
    parked: bool = False
    expect: Any = None
    note: str = ""


@dataclass(frozen=True)
class Await:
    """Receive the parked answer of ``actor``; ``after_ms`` (model, exact) is its delay after the send."""

    actor: str
    expect: Any = None
    after_ms: int | None = None
    note: str = ""


@dataclass(frozen=True)
class Until:
    """Repeat a side-effect-free request until ``predicate(normalised answer)``; ``after_ms`` as in Await.

    The model evaluates it at its timer deadlines, Kafka every ``POLL_MS``; both must first
    satisfy the predicate at the same time, within the tolerance.
    """

    actor: str
    api: str
    version: int
    fields: Mapping[str, Any]
    predicate: Callable[[Mapping[str, Any]], bool]
    within_ms: int
    after_ms: int | None = None
    expect: Any = None
    note: str = ""


@dataclass(frozen=True)
class Close:
    """Close ``actor``'s connection (its next request opens a new one); parked answers are dropped."""

    actor: str


Step = Send | Await | Until | Close


@dataclass(frozen=True)
class Script:
    """A named sequence of steps, played against Kafka and the model.

    ``difference`` (if set) names a difference between the model and Kafka that is kept on
    purpose: the script is a strict xfail with that reason (Kafka class and method in it).
    """

    name: str
    doc: str
    steps: tuple[Step, ...]
    difference: str | None = None
    broker: str = "default"


# ----------------------------------------------------------------------------- failures


class Mismatch(AssertionError):
    """Kafka and the model disagree (or one of them contradicts the script)."""


class KafkaLate(Mismatch):
    """Kafka answered (or met a condition) later than the tolerance after the model, or not at all.

    The one mismatch a loaded machine can cause on its own: a broker JVM starved of CPU answers
    seconds late (seen on the shared 2-core development machine: "Exceptionally slow controller
    event ... took 5944 ms"). The test retries such a script once; a real difference repeats.
    """


# ----------------------------------------------------------------------------- clock


class ManualClock:
    """The model's clock: whole milliseconds, moved only by the runner."""

    def __init__(self) -> None:
        self.now_ms = 0

    def monotonic(self) -> float:
        return self.now_ms / 1000.0

    def sleep(self, seconds: float) -> None:  # the model never sleeps
        raise AssertionError("the coordinator model must not sleep")


# ----------------------------------------------------------------------------- string limit


def check_request(api_key: int, version: int, frame: bytes) -> dict[str, Any] | Closed:
    """Decode a request frame as the proxy does; :data:`CLOSED` where Kafka closes the connection."""
    body = frames.decode_request_body(api_key, version, frame)
    try:
        _model_wire.check_string_lengths(body)
    except _model_wire.MalformedRequestError:
        return CLOSED
    return body


# ----------------------------------------------------------------------------- Kafka side


class KafkaConnection:
    """One blocking connection to the broker with a reader thread stamping each response frame."""

    def __init__(self, address: tuple[str, int], client_id: str, started: float) -> None:
        self.sock = socket.create_connection(address, timeout=RESPONSE_TIMEOUT_S)
        self.sock.settimeout(None)
        self.client_id = client_id
        self._started = started
        self._ids = itertools.count(1)
        self._pending: list[tuple[int, int, int, float]] = []
        self._frames: queue.Queue[tuple[float, bytes | None]] = queue.Queue()
        self._reader = threading.Thread(target=self._read_loop, name=f"conformance-{client_id}", daemon=True)
        self._reader.start()
        self.closed = False

    def _ms(self) -> float:
        return (time.monotonic() - self._started) * 1000.0

    def _read_exact(self, n: int) -> bytes | None:
        data = b""
        while len(data) < n:
            try:
                chunk = self.sock.recv(n - len(data))
            except OSError:
                return None
            if not chunk:
                return None
            data += chunk
        return data

    def _read_loop(self) -> None:
        while True:
            head = self._read_exact(4)
            frame = None if head is None else self._read_exact(int.from_bytes(head, "big"))
            self._frames.put((self._ms(), frame))
            if frame is None:
                return

    def send(self, api_key: int, version: int, body: Mapping[str, Any]) -> float:
        correlation_id = next(self._ids)
        data = frames.encode_request(api_key, version, correlation_id, self.client_id, body)
        sent = self._ms()
        self._pending.append((correlation_id, api_key, version, sent))
        try:
            self.sock.sendall(data)
        except OSError:
            pass  # the reader thread reports the close
        return sent

    @property
    def awaiting(self) -> bool:
        return bool(self._pending)

    def receive(self, timeout_s: float) -> tuple[float, dict[str, Any] | Closed] | None:
        """The next answer and its arrival time (ms since the script started), or ``None`` on timeout."""
        try:
            at, frame = self._frames.get(timeout=max(timeout_s, 0.0))
        except queue.Empty:
            return None
        if frame is None:
            self._pending.clear()
            self._frames.put((at, None))  # stays closed
            return at, CLOSED
        correlation_id, api_key, version, _ = self._pending.pop(0)
        got, body = frames.decode_response(api_key, version, frame)
        if got != correlation_id:
            raise Mismatch(f"Kafka answered correlation id {got}, expected {correlation_id}")
        return at, body

    def close(self) -> None:
        self.closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


# ----------------------------------------------------------------------------- model side


@dataclass
class _ModelCall:
    api_key: int
    version: int
    correlation_id: int
    requests: tuple[Any, ...]
    replies: list[Reply[Any]]
    sent_ms: int
    done_ms: int | None = None
    answer: dict[str, Any] | Closed | None = None


class ModelConnection:
    """An actor's connection to the model: answers in request order, as the proxy gives them."""

    def __init__(self, model: GroupCoordinatorModel, clock: ManualClock, client_id: str) -> None:
        self._model = model
        self._clock = clock
        self.client_id = client_id
        self._ids = itertools.count(1)
        self.calls: list[_ModelCall] = []

    def send(self, api_key: int, version: int, body: Mapping[str, Any]) -> _ModelCall:
        correlation_id = next(self._ids)
        frame = frames.encode_request(api_key, version, correlation_id, self.client_id, body)[4:]
        decoded = check_request(api_key, version, frame)
        if isinstance(decoded, Closed):
            call = _ModelCall(api_key, version, correlation_id, (), [], self._clock.now_ms, self._clock.now_ms, CLOSED)
            self.calls.clear()
            return call
        requests = kafka_messages.requests_from_body(
            api_key, version, decoded, client_id=self.client_id, client_host="/127.0.0.1"
        )
        method = getattr(self._model, _model_wire.ALL_MODEL_METHODS[api_key])
        call = _ModelCall(api_key, version, correlation_id, requests, [], self._clock.now_ms)
        self.calls.append(call)
        call.replies.extend(method(request) for request in requests)
        for reply in call.replies:
            reply.add_done_callback(lambda _r, c=call: self._maybe_done(c))
        if not requests:
            self._maybe_done(call)
        return call

    def _maybe_done(self, call: _ModelCall) -> None:
        if call.done_ms is not None or not all(r.done for r in call.replies):
            return
        call.done_ms = self._clock.now_ms
        body = _model_wire.answer_body(call.api_key, call.version, [r.response for r in call.replies], call.requests)
        frame = frames.encode_response(call.api_key, call.version, call.correlation_id, body)[4:]
        correlation_id, decoded = frames.decode_response(call.api_key, call.version, frame)
        assert correlation_id == call.correlation_id
        call.answer = decoded

    def close(self) -> None:
        self.calls.clear()


# ----------------------------------------------------------------------------- per-side state


class Side:
    """What one side (Kafka or the model) knows: member ids per actor, generations, labels."""

    def __init__(self, name: str, groups: Mapping[str, str], topics: Mapping[str, str]) -> None:
        self.name = name
        self.groups = dict(groups)
        self.topics = dict(topics)
        self.member_of: dict[str, str] = {}
        self.generation_of: dict[str, int] = {}
        self.join_members_of: dict[str, list[str]] = {}
        self._labels: dict[str, str] = {}
        self._per_prefix: dict[str, int] = {}

    # --- labels -----------------------------------------------------------------------------

    def label(self, member_id: str) -> str:
        """``<prefix>#<n>`` for a Kafka-style member id; the id itself otherwise (e.g. ``""``)."""
        if member_id in self._labels:
            return self._labels[member_id]
        found = _UUID_SUFFIX.match(member_id)
        if found is None:
            return member_id
        prefix = found.group(1)
        self._per_prefix[prefix] = self._per_prefix.get(prefix, 0) + 1
        label = f"{prefix}#{self._per_prefix[prefix]}"
        self._labels[member_id] = label
        return label

    # --- requests ---------------------------------------------------------------------------

    def resolve(self, value: Any, *, leader: str | None = None) -> Any:
        """A request body with references replaced by this side's values."""
        if isinstance(value, M):
            if value.actor not in self.member_of:
                raise Mismatch(f"{self.name}: actor {value.actor!r} has no member id yet")
            return self.member_of[value.actor]
        if isinstance(value, Gen):
            if value.actor not in self.generation_of:
                raise Mismatch(f"{self.name}: actor {value.actor!r} has no generation yet")
            return self.generation_of[value.actor]
        if isinstance(value, Group):
            return self.groups[value.symbol]
        if isinstance(value, Topic):
            return self.topics[value.symbol]
        if isinstance(value, AssignAll):
            if leader is None or leader not in self.join_members_of:
                raise Mismatch(f"{self.name}: ASSIGN_ALL needs a JoinGroup answer with members first")
            return [
                {"member_id": mid, "assignment": self.label(mid).encode()} for mid in self.join_members_of[leader]
            ]
        if isinstance(value, Mapping):
            return {k: self.resolve(v, leader=leader) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.resolve(v, leader=leader) for v in value]
        return value

    # --- answers ----------------------------------------------------------------------------

    def learn(self, actor: str, api_key: int, answer: Mapping[str, Any]) -> None:
        """Bind the actor's member id and generation from a JoinGroup answer."""
        if api_key != API_KEYS["JoinGroup"]:
            return
        error = answer.get("error_code")
        if error in (0, 79) and answer.get("member_id"):  # NONE, MEMBER_ID_REQUIRED
            self.member_of[actor] = answer["member_id"]
            self.label(answer["member_id"])
        if error == 0:
            self.generation_of[actor] = answer["generation_id"]
            self.join_members_of[actor] = [m["member_id"] for m in answer.get("members") or ()]
            for member_id in self.join_members_of[actor]:
                self.label(member_id)

    def normalise(self, api_key: int, answer: dict[str, Any] | Closed) -> Any:
        """The answer with ids replaced by labels and symbols, HashMap-ordered lists sorted."""
        if isinstance(answer, Closed):
            return answer
        by_group = {real: sym for sym, real in self.groups.items()}
        by_topic = {real: sym for sym, real in self.topics.items()}

        def walk(value: Any, key: str | None = None) -> Any:
            if isinstance(value, dict):
                return {k: walk(v, k) for k, v in value.items() if k != "throttle_time_ms"}
            if isinstance(value, list):
                return [walk(v, key) for v in value]
            if isinstance(value, str):
                if key == "group_id" or value in by_group:
                    return by_group.get(value, value)
                if key == "name" and value in by_topic:
                    return by_topic[value]
                if _UUID_SUFFIX.match(value):
                    return self.label(value)
            return value

        out = walk(answer)
        if api_key == API_KEYS["JoinGroup"]:
            out["members"] = sorted(out.get("members") or [], key=lambda m: m["member_id"])
        elif api_key == API_KEYS["DescribeGroups"]:
            for group in out.get("groups") or []:
                group["members"] = sorted(group.get("members") or [], key=lambda m: m["member_id"])
        elif api_key == API_KEYS["ListGroups"]:
            mine = set(by_group.values())
            out["groups"] = sorted(
                (g for g in out.get("groups") or [] if g["group_id"] in mine), key=lambda g: g["group_id"]
            )
        elif api_key == API_KEYS["DeleteGroups"]:
            # DeleteGroupsResponse.Results is keyed by GroupId ("mapKey": true); Kafka 4.4 lists it in
            # hash order, not request order.
            out["results"] = sorted(out.get("results") or [], key=lambda r: r["group_id"])
        elif api_key == API_KEYS["OffsetFetch"]:
            groups = out.get("groups") if "groups" in out else None
            for holder in groups if groups is not None else [out]:
                holder["topics"] = sorted(
                    (
                        {**t, "partitions": sorted(t["partitions"], key=lambda p: p["partition_index"])}
                        for t in holder.get("topics") or []
                    ),
                    key=lambda t: t["name"],
                )
        return out

    def expected(self, value: Any) -> Any:
        """An expectation with :class:`M` as labels and :class:`Group`/:class:`Topic` as symbols."""
        if isinstance(value, M):
            if value.actor not in self.member_of:
                raise Mismatch(f"{self.name}: actor {value.actor!r} has no member id yet")
            return self.label(self.member_of[value.actor])
        if isinstance(value, Group):
            return value.symbol
        if isinstance(value, Topic):
            return value.symbol
        if isinstance(value, Mapping):
            return {k: self.expected(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.expected(v) for v in value]
        return value


def matches(expected: Any, actual: Any) -> bool:
    """Whether ``actual`` has every key of ``expected`` with a matching value (lists: same length, pairwise)."""
    if isinstance(expected, Closed) or isinstance(actual, Closed):
        return expected is actual
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(k in actual and matches(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(expected) == len(actual)
            and all(matches(e, a) for e, a in zip(expected, actual, strict=True))
        )
    return bool(expected == actual)


# ----------------------------------------------------------------------------- the runner


@dataclass
class Broker:
    """Where Kafka is and how the model is configured to match it."""

    address: tuple[str, int]
    config: CoordinatorConfig
    topics: Mapping[str, str]
    partitions: Mapping[str, int]


@dataclass
class Outcome:
    """What a run recorded, for the failure message and the timing report."""

    log: list[str] = field(default_factory=list)


class Runner:
    """Plays one script against Kafka and the model in lockstep (see the module docstring)."""

    def __init__(self, script: Script, broker: Broker) -> None:
        self.script = script
        self.broker = broker
        self.started = time.monotonic()
        self.clock = ManualClock()
        partitions = dict(broker.partitions)
        self.model = GroupCoordinatorModel(
            broker.config,
            clock=self.clock,
            partition_exists=lambda topic, p: 0 <= p < partitions.get(topic, 0),
        )
        groups: dict[str, str] = {}
        run = uuid.uuid4().hex[:8]
        for symbol in _group_symbols(script.steps):
            groups[symbol] = f"cf-{script.name[:40]}-{run}-{symbol}"
        self.kafka = Side("Kafka", groups, broker.topics)
        self.modelled = Side("model", groups, broker.topics)
        self.kafka_conns: dict[str, KafkaConnection] = {}
        self.model_conns: dict[str, ModelConnection] = {}
        self.pending: dict[str, tuple[Send, float, _ModelCall]] = {}
        self.outcome = Outcome()

    # --- time -------------------------------------------------------------------------------

    def wall_ms(self) -> float:
        return (time.monotonic() - self.started) * 1000.0

    def advance_model_to(self, target_ms: float) -> None:
        """Move the model's clock to ``target_ms``, firing its timers in deadline order on the way."""
        target = round(target_ms)
        while True:
            deadline = self.model.next_deadline()
            if deadline is None or round(deadline * 1000) > target:
                break
            self.clock.now_ms = max(self.clock.now_ms, round(deadline * 1000))
            self.model.tick()
        self.clock.now_ms = max(self.clock.now_ms, target)

    def advance_model_until(self, done: Callable[[], bool], limit_ms: float) -> int | None:
        """Fire the model's timers one deadline at a time until ``done()``; the model time then, or None."""
        if done():
            return self.clock.now_ms
        while True:
            deadline = self.model.next_deadline()
            if deadline is None or round(deadline * 1000) > limit_ms:
                return None
            self.clock.now_ms = max(self.clock.now_ms, round(deadline * 1000))
            self.model.tick()
            if done():
                return self.clock.now_ms

    # --- connections ------------------------------------------------------------------------

    def kafka_conn(self, actor: str) -> KafkaConnection:
        conn = self.kafka_conns.get(actor)
        if conn is None or conn.closed:
            conn = KafkaConnection(self.broker.address, actor, self.started)
            self.kafka_conns[actor] = conn
        return conn

    def model_conn(self, actor: str) -> ModelConnection:
        conn = self.model_conns.get(actor)
        if conn is None:
            conn = ModelConnection(self.model, self.clock, actor)
            self.model_conns[actor] = conn
        return conn

    def close(self) -> None:
        for conn in self.kafka_conns.values():
            conn.close()

    # --- steps ------------------------------------------------------------------------------

    def run(self) -> None:
        try:
            for index, step in enumerate(self.script.steps, 1):
                self.index = index
                if isinstance(step, Send):
                    self._send(step)
                elif isinstance(step, Await):
                    self._await(step)
                elif isinstance(step, Until):
                    self._until(step)
                elif isinstance(step, Close):
                    self._close(step)
                else:
                    raise TypeError(f"not a step: {step!r}")
            if self.pending:
                raise Mismatch(f"script ended with parked requests never awaited: {sorted(self.pending)}")
        finally:
            self.close()

    def _where(self, step: Step) -> str:
        note = getattr(step, "note", "")
        return f"step {self.index} ({type(step).__name__} {getattr(step, 'actor', '')}{': ' + note if note else ''})"

    def _record(self, step: Step, text: str) -> None:
        self.outcome.log.append(f"{self.wall_ms():8.0f} ms  {self._where(step)}: {text}")

    def _compare(self, step: Step, api_key: int, kafka_answer: Any, model_answer: Any, expect: Any) -> None:
        k = self.kafka.normalise(api_key, kafka_answer)
        m = self.modelled.normalise(api_key, model_answer)
        self._record(step, f"Kafka {k!r}")
        if k != m:
            raise Mismatch(f"{self._where(step)}: answers differ\n  Kafka: {k!r}\n  model: {m!r}")
        if expect is not None:
            wanted = self.kafka.expected(expect)
            if not matches(wanted, k):
                raise Mismatch(f"{self._where(step)}: both answered {k!r}, the script expects {wanted!r}")

    def _send(self, step: Send) -> None:
        api_key = API_KEYS[step.api]
        if step.actor in self.pending:
            raise Mismatch(f"{self._where(step)}: {step.actor} still has a parked request (Kafka would queue it)")
        leader = step.actor
        k_body = self.kafka.resolve(step.fields, leader=leader)
        m_body = self.modelled.resolve(step.fields, leader=leader)
        sent = self.kafka_conn(step.actor).send(api_key, step.version, k_body)
        self.advance_model_to(sent)
        call = self.model_conn(step.actor).send(api_key, step.version, m_body)
        model_done = call.answer is not None
        if model_done:
            got = self.kafka_conn(step.actor).receive(RESPONSE_TIMEOUT_S)
            if got is None:
                raise KafkaLate(f"{self._where(step)}: the model answered at once, Kafka not in {RESPONSE_TIMEOUT_S} s")
            _, k_answer = got
            if step.parked:
                raise Mismatch(f"{self._where(step)}: the script expects a parked request; both answered {k_answer!r}")
            self._finish(step, step.actor, api_key, k_answer, call.answer, step.expect)
            return
        got = self.kafka_conn(step.actor).receive(PARKED_PROBE_MS / 1000.0)
        if got is not None:
            raise Mismatch(
                f"{self._where(step)}: the model parks the request, Kafka answered at once: "
                f"{self.kafka.normalise(api_key, got[1])!r}"
            )
        if not step.parked:
            raise Mismatch(f"{self._where(step)}: both park a request the script expects answered at once")
        self._record(step, "parked on both")
        self.pending[step.actor] = (step, sent, call)
        self._settle(step)

    def _settle(self, step: Send) -> None:
        """Wait until Kafka has taken in the request it parked, as the model has.

        A parked request has no answer to wait for, and Kafka processes requests from different
        connections in no fixed order: on a starved machine the script's next step (another
        member's Heartbeat, say) could reach the coordinator first and see the group as it was.
        So the harness polls DescribeGroups on a connection of its own until Kafka's group has
        the model's state and member count (ids and metadata aside), or raises
        :class:`KafkaLate` after ``RESPONSE_TIMEOUT_S``.
        """
        group = step.fields.get("group_id")
        if not isinstance(group, Group):
            return
        body = {"groups": [group], "include_authorized_operations": False}
        m_conn = self.model_conn(SETTLE_ACTOR)
        call = m_conn.send(API_KEYS["DescribeGroups"], SETTLE_DESCRIBE_V, self.modelled.resolve(body))
        m_conn.calls.remove(call)
        want = _state_and_size(call.answer)
        conn = self.kafka_conn(SETTLE_ACTOR)
        k_body = self.kafka.resolve(body)
        deadline = time.monotonic() + RESPONSE_TIMEOUT_S
        while True:
            conn.send(API_KEYS["DescribeGroups"], SETTLE_DESCRIBE_V, k_body)
            got = conn.receive(RESPONSE_TIMEOUT_S)
            if got is None or isinstance(got[1], Closed):
                raise KafkaLate(f"{self._where(step)}: Kafka did not answer DescribeGroups while settling")
            have = _state_and_size(got[1])
            if have == want:
                return
            if time.monotonic() > deadline:
                raise KafkaLate(
                    f"{self._where(step)}: after the parked request Kafka's group stayed {have}, the model's is {want}"
                )
            time.sleep(POLL_MS / 1000.0)  # polling interval of a condition wait, bounded by `deadline`

    def _finish(self, step: Step, actor: str, api_key: int, k_answer: Any, m_answer: Any, expect: Any) -> None:
        if not isinstance(k_answer, Closed):
            self.kafka.learn(actor, api_key, k_answer)
        if not isinstance(m_answer, Closed):
            self.modelled.learn(actor, api_key, m_answer)
        if isinstance(k_answer, Closed):
            self.kafka_conns[actor].close()
        if isinstance(m_answer, Closed):
            self.model_conn(actor).close()
        self._compare(step, api_key, k_answer, m_answer, expect)

    def _await(self, step: Await) -> None:
        if step.actor not in self.pending:
            raise Mismatch(f"{self._where(step)}: nothing parked for {step.actor}")
        send, sent, call = self.pending.pop(step.actor)
        api_key = API_KEYS[send.api]
        done_at = self.advance_model_until(lambda: call.answer is not None, self.clock.now_ms + MAX_MODEL_WAIT_MS)
        if done_at is None:
            got = self.kafka_conn(step.actor).receive(LATE_REPORT_S)
            what = "nothing" if got is None else repr(self.kafka.normalise(api_key, got[1]))
            raise Mismatch(f"{self._where(step)}: the model never answers; Kafka answered {what}")
        model_done = call.done_ms if call.done_ms is not None else done_at
        wait_s = (model_done + LATE_TOLERANCE_MS - self.wall_ms()) / 1000.0
        got = self.kafka_conn(step.actor).receive(wait_s)
        if got is None:
            later = self.kafka_conn(step.actor).receive(LATE_REPORT_S)
            what = "nothing" if later is None else f"{self.kafka.normalise(api_key, later[1])!r} at {later[0]:.0f} ms"
            raise KafkaLate(
                f"{self._where(step)}: the model answered at {model_done} ms "
                f"({model_done - call.sent_ms} ms after the send); Kafka not by then + {LATE_TOLERANCE_MS} ms: {what}"
            )
        arrived, k_answer = got
        self.advance_model_to(arrived)
        self._check_time(step, arrived, model_done, sent, call.sent_ms, step.after_ms)
        self._finish(step, step.actor, api_key, k_answer, call.answer, step.expect)

    def _check_time(
        self, step: Step, kafka_ms: float, model_ms: int, kafka_from: float, model_from: int, after_ms: int | None
    ) -> None:
        self._record(step, f"Kafka at +{kafka_ms - kafka_from:.0f} ms, model at +{model_ms - model_from} ms")
        if kafka_ms < model_ms - EARLY_TOLERANCE_MS:
            raise Mismatch(
                f"{self._where(step)}: Kafka answered at {kafka_ms:.0f} ms, the model only at {model_ms} ms "
                f"(tolerance {EARLY_TOLERANCE_MS} ms early)"
            )
        if after_ms is not None and model_ms - model_from != after_ms:
            raise Mismatch(
                f"{self._where(step)}: the model answered {model_ms - model_from} ms after the send, "
                f"the script expects {after_ms} ms (Kafka: {kafka_ms - kafka_from:.0f} ms)"
            )

    def _until(self, step: Until) -> None:
        api_key = API_KEYS[step.api]
        if step.actor in self.pending:
            raise Mismatch(f"{self._where(step)}: {step.actor} has a parked request; poll from another actor")
        start = self.wall_ms()
        self.advance_model_to(start)
        model_from = self.clock.now_ms
        m_conn = self.model_conn(step.actor)
        m_body = self.modelled.resolve(step.fields)
        k_body = self.kafka.resolve(step.fields)
        model_answer: list[Any] = []

        def model_holds() -> bool:
            call = m_conn.send(api_key, step.version, m_body)
            if call.answer is None:
                raise Mismatch(f"{self._where(step)}: the model parked a polled request")
            m_conn.calls.remove(call)
            answer = self.modelled.normalise(api_key, call.answer)
            if step.predicate(answer):
                model_answer.append(call.answer)
                return True
            return False

        model_at = self.advance_model_until(model_holds, model_from + step.within_ms)
        limit = (model_at if model_at is not None else model_from + step.within_ms) + LATE_TOLERANCE_MS
        conn = self.kafka_conn(step.actor)
        while True:
            polled = conn.send(api_key, step.version, k_body)
            got = conn.receive(RESPONSE_TIMEOUT_S)
            if got is None or isinstance(got[1], Closed):
                raise Mismatch(f"{self._where(step)}: Kafka did not answer a polled {step.api}")
            k_answer = got[1]
            if step.predicate(self.kafka.normalise(api_key, k_answer)):
                kafka_at = polled
                break
            if self.wall_ms() > limit:
                if model_at is None:
                    raise Mismatch(f"{self._where(step)}: neither side satisfied the condition in time")
                last = self.kafka.normalise(api_key, k_answer)
                raise KafkaLate(
                    f"{self._where(step)}: the model satisfied the condition at +{model_at - model_from} ms, "
                    f"Kafka not by +{limit - start:.0f} ms; Kafka last answered {last!r}"
                )
            time.sleep(POLL_MS / 1000.0)  # polling interval of a condition wait, bounded by `limit`
        if model_at is None:
            raise Mismatch(
                f"{self._where(step)}: Kafka satisfied the condition at +{kafka_at - start:.0f} ms, the model not "
                f"within {step.within_ms} ms: {self.kafka.normalise(api_key, k_answer)!r}"
            )
        self.advance_model_to(self.wall_ms())
        self._check_time(step, kafka_at, model_at, start, model_from, step.after_ms)
        self._compare(step, api_key, k_answer, model_answer[0], step.expect)

    def _close(self, step: Close) -> None:
        conn = self.kafka_conns.pop(step.actor, None)
        if conn is not None:
            conn.close()
        self.model_conn(step.actor).close()
        self.pending.pop(step.actor, None)
        self._record(step, "closed")


def _state_and_size(answer: Any) -> tuple[str, int] | None:
    """A raw DescribeGroups answer's first group as (state, member count); None for a closed connection."""
    if not isinstance(answer, Mapping):
        return None
    group = answer["groups"][0]
    return str(group["group_state"]), len(group["members"])


def _group_symbols(steps: Sequence[Step]) -> Iterator[str]:
    seen: set[str] = set()

    def walk(value: Any) -> Iterator[str]:
        if isinstance(value, Group):
            if value.symbol not in seen:
                seen.add(value.symbol)
                yield value.symbol
        elif isinstance(value, Mapping):
            for v in value.values():
                yield from walk(v)
        elif isinstance(value, list | tuple):
            for v in value:
                yield from walk(v)

    for step in steps:
        yield from walk(getattr(step, "fields", {}))
