"""Fault injection for :class:`~kgroup.testing.CoordinatorProxy` (``proxy.faults``).

A fault is a rule the proxy consults for every request it reads. Rules match on:

* ``api``: a Kafka API name (``"Heartbeat"``) or key (``12``); None matches every API;
* ``client_id``: a substring of the request header's client id;
* ``node_id``: the proxy listener (one per upstream broker, plus coordinator listeners created by
  :meth:`~kgroup.testing.CoordinatorProxy.move_coordinator`) the request arrived on;
* ``connection_id``: one client connection (ids are in :meth:`~kgroup.testing.CoordinatorProxy.requests`).

``times`` bounds how often a rule fires (None: until removed or :meth:`Faults.clear`); each
firing is appended to :attr:`Faults.history`. Kinds:

* :meth:`Faults.inject`: the request is answered at once with a well-formed response carrying
  ``error`` (per partition / per group where the API has no top-level code). The model is not
  called and nothing is forwarded. Works for the coordinator APIs, FindCoordinator, and forwarded
  APIs whose response has a top-level ``error_code`` at every version.
* :meth:`Faults.delay`: the request waits ``ms`` before it is processed (the model sees it late;
  a forwarded request goes upstream late). Requests behind it on the same connection are not
  processed before it, and responses keep request order, so they wait too.
* :meth:`Faults.drop`: the request is read and never answered (never processed either). Because a
  connection answers in request order, every later response on that connection is held behind the
  missing one, as on a broker stuck on a request: the client sees request timeouts and must
  reconnect.
* :meth:`Faults.close_connection`: the proxy closes the client connection when the request
  arrives; that request and any unanswered earlier ones get no response.
* :meth:`Faults.black_hole`: for ``seconds``, listeners (all, or one ``node_id``) still accept
  connections and read requests but answer nothing. A connection that is touched by the black hole
  (opened, sending a request or due a response during it) stays silent for good, like a TCP path
  whose packets vanish; connections opened after it ends work normally.

When several rules match one request, the first matching ``delay`` and the first matching
action (``error``, ``drop`` or ``close``), in insertion order, fire; each decrements its own
``times``. Coordinator moves and restarts are proxy methods (``move_coordinator``,
``restart_coordinator``). All methods are thread-safe.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Final, Literal, TypedDict

import attrs

from kgroup._clock import Clock, MonotonicClock
from kgroup._io.kafka_frames import api_key_of, api_name, api_version_range, response_has_field

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["BlackHole", "FaultDecision", "FaultFired", "FaultRule", "Faults", "RequestContext"]

FaultKind = Literal["error", "delay", "drop", "close"]
FiredKind = Literal["error", "delay", "drop", "close", "black_hole"]

_COORDINATOR_APIS: Final = frozenset({8, 9, 10, 11, 12, 13, 14, 15, 16})


def _resolve_api(api: str | int | None) -> int | None:
    if api is None or isinstance(api, int):
        return api
    return api_key_of(api)


class RuleMatch(TypedDict, total=False):
    """The keyword arguments every rule takes besides ``api``: which requests it matches, how often it fires."""

    times: int | None
    client_id: str | None
    node_id: int | None
    connection_id: int | None


@attrs.frozen(kw_only=True)
class RequestContext:
    """What a rule can match on (built by the proxy for each request)."""

    api_key: int
    api_version: int
    client_id: str
    node_id: int
    connection_id: int


@attrs.define(kw_only=True, eq=False)
class FaultRule:
    """One installed rule; ``remaining`` counts down (None: unlimited)."""

    kind: FaultKind
    api_key: int | None = None
    client_id: str | None = None
    node_id: int | None = None
    connection_id: int | None = None
    error_code: int = 0
    delay_ms: int = 0
    remaining: int | None = None

    def matches(self, ctx: RequestContext) -> bool:
        """Whether this rule applies to a request (ignoring ``remaining``)."""
        return (
            (self.api_key is None or self.api_key == ctx.api_key)
            and (self.client_id is None or self.client_id in ctx.client_id)
            and (self.node_id is None or self.node_id == ctx.node_id)
            and (self.connection_id is None or self.connection_id == ctx.connection_id)
        )


@attrs.frozen(kw_only=True)
class FaultFired:
    """A record of one rule firing on one request (``black_hole``: a request swallowed by a black hole)."""

    kind: FiredKind
    api_name: str
    client_id: str
    node_id: int
    connection_id: int
    detail: str


@attrs.frozen(kw_only=True)
class FaultDecision:
    """What the proxy must do with a request: wait ``delay_s``, then ``action`` (None: serve normally)."""

    delay_s: float = 0.0
    action: Literal["error", "drop", "close"] | None = None
    error_code: int = 0


@attrs.frozen(kw_only=True)
class BlackHole:
    """A silent window in the proxy's clock: ``[start, end)`` on ``node_id`` (None: every listener)."""

    start: float
    end: float
    node_id: int | None = None


_NO_FAULT: Final = FaultDecision()


class Faults:
    """The fault rules of one proxy. See the module docstring for what each kind does.

    Every rule method raises ``ValueError`` for an unknown API name or ``times`` below 1, and
    ``TypeError`` for a keyword it does not take.

    Args:
        clock: the clock black holes are timed with (real time by default).

    """

    def __init__(self, clock: Clock | None = None) -> None:
        self._clock: Clock = clock if clock is not None else MonotonicClock()
        self._lock = threading.Lock()
        self._rules: list[FaultRule] = []
        self._holes: list[BlackHole] = []
        self._history: list[FaultFired] = []

    # ------------------------------------------------------------------ installing rules
    def _add(self, rule: FaultRule) -> FaultRule:
        if rule.remaining is not None and rule.remaining < 1:
            raise ValueError(f"times must be >= 1 or None, got {rule.remaining}")
        with self._lock:
            self._rules.append(rule)
        return rule

    def _rule(self, kind: FaultKind, api: str | int | None, match: RuleMatch, **action: int) -> FaultRule:
        unexpected = match.keys() - RuleMatch.__optional_keys__
        if unexpected:
            raise TypeError(f"unexpected keyword arguments: {', '.join(sorted(unexpected))}")
        return self._add(
            FaultRule(
                kind=kind,
                api_key=_resolve_api(api),
                client_id=match.get("client_id"),
                node_id=match.get("node_id"),
                connection_id=match.get("connection_id"),
                remaining=match.get("times"),
                **action,
            )
        )

    def inject(self, *, api: str | int, error: int, **match: Unpack[RuleMatch]) -> FaultRule:
        """Answer matching requests with error code ``error`` instead of serving them.

        Raises:
            ValueError: a forwarded API whose response has no top-level error code.

        """
        key = _resolve_api(api)
        assert key is not None
        if key not in _COORDINATOR_APIS:
            versions = api_version_range(key)
            if versions is None or not all(
                response_has_field(key, v, "error_code") for v in range(versions[0], versions[1] + 1)
            ):
                raise ValueError(f"cannot inject an error into {api_name(key)}: no top-level error_code")
        return self._rule("error", key, match, error_code=error)

    def delay(self, *, ms: int, api: str | int | None = None, **match: Unpack[RuleMatch]) -> FaultRule:
        """Hold matching requests ``ms`` milliseconds before processing them.

        Raises:
            ValueError: negative ``ms``.

        """
        if ms < 0:
            raise ValueError(f"ms must be >= 0, got {ms}")
        return self._rule("delay", api, match, delay_ms=ms)

    def drop(self, *, api: str | int | None = None, **match: Unpack[RuleMatch]) -> FaultRule:
        """Read matching requests and never answer them (later responses on the connection wait too)."""
        return self._rule("drop", api, match)

    def close_connection(self, *, api: str | int | None = None, **match: Unpack[RuleMatch]) -> FaultRule:
        """Close the client's connection when a matching request arrives (it is not answered)."""
        return self._rule("close", api, match)

    def black_hole(self, seconds: float, *, node_id: int | None = None) -> BlackHole:
        """Make listeners (all, or ``node_id``'s) silent for ``seconds`` from now.

        Raises:
            ValueError: ``seconds`` is not positive.

        """
        if seconds <= 0:
            raise ValueError(f"seconds must be > 0, got {seconds}")
        now = self._clock.monotonic()
        hole = BlackHole(start=now, end=now + seconds, node_id=node_id)
        with self._lock:
            self._holes.append(hole)
        return hole

    def remove(self, rule: FaultRule) -> None:
        """Uninstall one rule (no-op if it is gone already)."""
        with self._lock:
            if rule in self._rules:
                self._rules.remove(rule)

    def clear(self) -> None:
        """Remove every rule and end every black hole (silenced connections stay silent)."""
        with self._lock:
            self._rules.clear()
            self._holes.clear()

    @property
    def rules(self) -> list[FaultRule]:
        """The installed rules (a copy)."""
        with self._lock:
            return list(self._rules)

    @property
    def history(self) -> list[FaultFired]:
        """Every firing so far, oldest first (a copy)."""
        with self._lock:
            return list(self._history)

    # ------------------------------------------------------------------ used by the proxy
    def decide(self, ctx: RequestContext) -> FaultDecision:
        """Pick the rules that fire for a request, count them down and record them."""
        with self._lock:
            if not self._rules:
                return _NO_FAULT
            delay: FaultRule | None = None
            action: FaultRule | None = None
            for rule in self._rules:
                if not rule.matches(ctx):
                    continue
                if rule.kind == "delay":
                    delay = delay or rule
                else:
                    action = action or rule
            if delay is None and action is None:
                return _NO_FAULT
            fired = [r for r in (delay, action) if r is not None]
            for rule in fired:
                detail = {"error": f"error {rule.error_code}", "delay": f"{rule.delay_ms} ms"}.get(rule.kind, "")
                self._history.append(
                    FaultFired(
                        kind=rule.kind,
                        api_name=api_name(ctx.api_key),
                        client_id=ctx.client_id,
                        node_id=ctx.node_id,
                        connection_id=ctx.connection_id,
                        detail=detail,
                    )
                )
                if rule.remaining is not None:
                    rule.remaining -= 1
                    if rule.remaining <= 0:
                        self._rules.remove(rule)
            act: Literal["error", "drop", "close"] | None = None
            if action is not None and action.kind != "delay":
                act = action.kind
            return FaultDecision(
                delay_s=delay.delay_ms / 1000.0 if delay is not None else 0.0,
                action=act,
                error_code=action.error_code if action is not None else 0,
            )

    def black_holed(self, node_id: int) -> bool:
        """Whether listener ``node_id`` is inside a black hole now (expired holes are forgotten)."""
        with self._lock:
            if not self._holes:
                return False
            now = self._clock.monotonic()
            self._holes = [h for h in self._holes if h.end > now]
            return any(h.start <= now and (h.node_id is None or h.node_id == node_id) for h in self._holes)

    def record(self, kind: FiredKind, ctx: RequestContext, detail: str) -> None:
        """Append a firing the proxy decided itself (a request swallowed by a black hole)."""
        with self._lock:
            self._history.append(
                FaultFired(
                    kind=kind,
                    api_name=api_name(ctx.api_key),
                    client_id=ctx.client_id,
                    node_id=ctx.node_id,
                    connection_id=ctx.connection_id,
                    detail=detail,
                )
            )
