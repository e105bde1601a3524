"""A deterministic scheduler: a virtual clock, timed callbacks and threads that take turns.

Rules:

1. Time is virtual. It moves only when nothing can run at the current instant: then it jumps to
   the earliest timed callback or thread deadline.
2. Application code runs on real threads (``spawn``), so it may block as production code does
   (``poll()``, ``commit()``, a listener sleeping), but exactly one of them runs at a time and
   only when the scheduler hands it the baton. A thread gives the baton back at every blocking
   point (:meth:`Scheduler.block`), which the simulated mailbox, fetcher and clock call.
3. At one instant due callbacks run first, in the order they were scheduled. Without a
   ``tie_order`` generator the ``pump`` hooks (the group threads, the coordinator's timers) run
   next and then runnable threads in spawn order, repeated until nothing is runnable. With one
   (a ``random.Random`` seeded from the run's seed), the pumps and the runnable threads ready at
   the same instant take their turn in an order drawn from it, one at a time, and a group
   thread's timed work may start up to 50 ms late (:meth:`Scheduler.lateness`), as an OS thread
   woken at its deadline can (the GIL, a collection, a loaded host): an application thread can
   then run before the group thread at its deadline, and code that relies on the opposite order
   is found. Either way nothing is left to
   the OS scheduler, so a seed replays exactly.
4. A killed thread is unwound at its next blocking point by :class:`Killed` (a
   ``BaseException``, so ``except Exception`` in the code under test does not stop it).
"""

from __future__ import annotations

import heapq
import random
import threading
from collections.abc import Callable
from typing import Final, Protocol

__all__ = ["Killed", "Pump", "Scheduler", "SimClock", "SimThread"]

_NEVER: Final = float("inf")


class Pump(Protocol):
    """Work the scheduler runs between callbacks (a member's group-thread loop body)."""

    def pump(self) -> bool:
        """Do what is due now; True when anything was done."""
        ...

    def deadline(self) -> float:
        """Virtual time of the next timed work (inf: none)."""
        ...


class Killed(BaseException):
    """Raised inside a simulated thread that was killed (a process crash)."""


class SimThread:
    """A real thread that runs only while it holds the scheduler's baton."""

    def __init__(self, scheduler: Scheduler, name: str, target: Callable[[], None]) -> None:
        self.name = name
        self._scheduler = scheduler
        self._target = target
        # a raw lock as a binary semaphore (held = closed): several times cheaper to hand over
        # than threading.Semaphore, which is built on a Condition
        self._go = threading.Lock()
        self._go.acquire()
        self.ready: Callable[[], bool] | None = None
        self.deadline = 0.0
        self.started = False
        self.done = False
        self.killed = False
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name=f"sim-{name}", daemon=True)

    def _main(self) -> None:
        self._go.acquire()
        try:
            if self.killed:
                raise Killed(self.name)
            self._target()
        except Killed:
            pass
        except BaseException as exc:
            self.error = exc
        finally:
            self.done = True
            self._scheduler._back.release()

    def runnable(self, now: float) -> bool:
        """Whether the thread can take the baton at ``now``."""
        if self.done:
            return False
        if not self.started or self.killed:
            return True
        ready = self.ready
        return now >= self.deadline or (ready is not None and ready())


class Scheduler:
    """The virtual clock, the timed callbacks and the baton (see the module rules)."""

    def __init__(self, start: float = 0.0, *, tie_order: random.Random | None = None) -> None:
        self.now = start
        #: draws the turn order of pumps and threads ready at one instant (None: the fixed order)
        self._tie = tie_order
        self._events: list[tuple[float, int, Callable[[], object]]] = []
        self._seq = 0
        self._threads: list[SimThread] = []
        self._back = threading.Lock()
        self._back.acquire()
        self._current: SimThread | None = None
        self._by_ident: dict[int, SimThread] = {}
        #: objects with ``pump() -> bool`` (did work at this instant) and ``deadline() -> float``
        self.pumps: list[Pump] = []
        #: checks run after every turn of a simulated thread (on the scheduler, the baton back)
        self.after_turn: list[Callable[[], None]] = []
        self.switches = 0

    # ------------------------------------------------------------------ callbacks
    def call_at(self, when: float, fn: Callable[[], object]) -> None:
        """Run ``fn`` (on the scheduler) at virtual time ``when`` (now if in the past); its result is ignored."""
        self._seq += 1
        heapq.heappush(self._events, (max(when, self.now), self._seq, fn))

    def call_later(self, delay: float, fn: Callable[[], None]) -> None:
        """Run ``fn`` after ``delay`` virtual seconds."""
        self.call_at(self.now + delay, fn)

    def lateness(self) -> float:
        """How late a pump's next timed work starts, in virtual seconds (0 without ``tie_order``).

        An OS thread waiting for its deadline wakes late: a quarter of the group threads' timed
        steps start up to 50 ms late, so work due at the same deadline on another thread (the
        poll thread's own look at the session deadline) may come first.
        """
        tie = self._tie
        if tie is None or tie.random() >= 0.25:
            return 0.0
        return tie.uniform(0.0, 0.05)

    # ------------------------------------------------------------------ threads
    def spawn(self, name: str, target: Callable[[], None]) -> SimThread:
        """A simulated thread running ``target``; it first runs at the current instant."""
        thread = SimThread(self, name, target)
        self._threads.append(thread)
        thread._thread.start()
        assert thread._thread.ident is not None
        self._by_ident[thread._thread.ident] = thread
        return thread

    @property
    def current(self) -> SimThread | None:
        """The simulated thread holding the baton, or None on the scheduler itself."""
        return self._current

    def block(self, ready: Callable[[], bool], timeout_s: float) -> bool:
        """Give the baton back until ``ready()`` or ``timeout_s`` virtual seconds; return ``ready()``.

        Called on a simulated thread. On the scheduler itself (no thread holds the baton) it
        cannot wait: it returns ``ready()`` at once.
        """
        thread = self._by_ident.get(threading.get_ident())
        if thread is None:
            return ready()  # the scheduler itself: nothing to wait for
        if thread is not self._current:
            raise RuntimeError(f"simulated thread {thread.name} runs without the baton")
        if ready():
            return True
        thread.ready = ready
        thread.deadline = self.now + max(0.0, timeout_s)
        self._current = None
        self._back.release()
        thread._go.acquire()
        if thread.killed:
            raise Killed(thread.name)
        return ready()

    def kill(self, thread: SimThread) -> None:
        """Unwind ``thread`` with ``Killed`` at its next turn (called on the scheduler)."""
        thread.killed = True

    def _resume(self, thread: SimThread) -> None:
        self.resuming = thread
        thread.started = True
        self._current = thread
        self.switches += 1
        thread._go.release()
        self._back.acquire()
        self._current = None
        for check in self.after_turn:
            check()

    # ------------------------------------------------------------------ the loop
    def run_until(self, end: float, stop: Callable[[], bool] | None = None) -> None:
        """Run everything due up to virtual time ``end`` (or until ``stop()``)."""
        while True:
            self._settle()
            if stop is not None and stop():
                return
            upcoming = self._next_time()
            if upcoming > end:
                self.now = max(self.now, end)
                self._settle()
                return
            self.now = max(self.now, upcoming)

    def _settle(self) -> None:
        """Run everything runnable at the current instant."""
        progressed = True
        while progressed:
            progressed = False
            while self._events and self._events[0][0] <= self.now:
                _, _, fn = heapq.heappop(self._events)
                fn()
                progressed = True
            if self._tie is not None:
                progressed = self._one_turn(self._tie)
                continue
            for pump in self.pumps:
                if pump.pump():
                    progressed = True
            if progressed:
                continue
            for thread in self._threads:
                if thread.runnable(self.now):
                    self._resume(thread)
                    progressed = True
                    break  # callbacks and pumps first again
            if progressed:
                continue
        self._threads = [t for t in self._threads if not t.done]

    def _one_turn(self, tie: random.Random) -> bool:
        """One pump or thread ready now, drawn from ``tie``, does its work; False: none was ready."""
        now = self.now
        actors: list[Pump | SimThread] = [*self.pumps, *(t for t in self._threads if t.runnable(now))]
        tie.shuffle(actors)
        for actor in actors:
            if isinstance(actor, SimThread):
                self._resume(actor)
                return True
            if actor.pump():
                return True
        return False

    def _next_time(self) -> float:
        candidates = [self._events[0][0]] if self._events else []
        for thread in self._threads:
            if not thread.done and thread.started and not thread.killed:
                candidates.append(thread.deadline)
        for pump in self.pumps:
            candidates.append(pump.deadline())
        future = [t for t in candidates if t > self.now]
        return min(future) if future else _NEVER

    def shutdown(self) -> None:
        """Kill and unwind every live thread (end of a run)."""
        for thread in self._threads:
            thread.killed = True
        while any(not t.done for t in self._threads):
            for thread in self._threads:
                if not thread.done:
                    self._resume(thread)
        self._threads = []


class SimClock:
    """kgroup's ``Clock`` on a scheduler: ``monotonic()`` is virtual; ``sleep`` blocks virtually."""

    def __init__(self, scheduler: Scheduler) -> None:
        self._scheduler = scheduler

    def monotonic(self) -> float:
        """Virtual seconds."""
        return self._scheduler.now

    def sleep(self, seconds: float) -> None:
        """Block the calling simulated thread for ``seconds`` of virtual time."""
        self._scheduler.block(lambda: False, seconds)
