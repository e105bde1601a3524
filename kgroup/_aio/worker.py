"""The worker thread of a ``kgroup.aio.Consumer``: it owns the wrapped ``kgroup.Consumer`` and runs its calls.

Rules (``kgroup.aio``'s docstring has the user's view):

1. The event loop submits a ``Job`` per blocking call; the worker runs them one at a time, in the
   order asked for, and hands each outcome back to the loop (``deliver``, run on the loop).
2. Exactly one thread owns the wrapped consumer at a time (``owner``): the worker while it runs
   a job, or the loop while it runs a non-blocking operation directly (``apply``), never both.
   ``cond`` guards the queue, the owner and what the loop and the worker share.
3. While the wrapped consumer runs a listener callback, the worker *parks*: it hands the
   callback to the loop and, until it is over, runs only the jobs that are not barriers (poll,
   unsubscribe, close), such as a commit the callback awaits.
4. A running interruptible job is ended early with the wrapped consumer's ``wakeup()``; while
   it waits for a listener callback, that wakeup waits until the callback is over.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextvars
import functools
import inspect
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from kgroup.errors import ConsumerClosedError, WakeupError

if TYPE_CHECKING:
    from kgroup.consumer import Consumer
    from kgroup.types import TopicPartition

__all__ = ["Job", "Worker", "settle"]

log = logging.getLogger(__name__)

#: longest one idle wait of the worker before it looks again (any post wakes it sooner)
_IDLE_WAIT_S = 3600.0

#: job states
QUEUED, RUNNING, DONE = 0, 1, 2
#: who may touch the wrapped consumer right now (None: nobody is)
_WORKER, _LOOP = "worker", "loop"

#: what ``deliver`` receives on the loop: the job, its value and its error
Deliver = Callable[["Job", Any, "BaseException | None"], None]


class Job:
    """One call for the worker: what to run, who awaits it, and how far it got."""

    __slots__ = ("barrier", "cancelled", "context", "fn", "future", "interrupted", "interruptible", "last", "state")

    def __init__(
        self,
        fn: Callable[[], Any],
        future: asyncio.Future[Any] | None,
        *,
        barrier: bool = False,
        interruptible: bool = False,
        last: bool = False,
    ) -> None:
        self.fn = fn
        self.future = future
        #: poll, unsubscribe, close: never run while the worker waits for a listener callback
        self.barrier = barrier
        #: read-only calls an internal wakeup() may end early when their awaiter gives up
        self.interruptible = interruptible
        self.last = last
        self.state = QUEUED
        self.cancelled = False
        self.interrupted = False
        self.context = contextvars.copy_context()


def settle(future: asyncio.Future[None] | concurrent.futures.Future[None], error: BaseException | None) -> None:
    """Complete ``future`` the way another one ended: with None, or with its ``error``."""
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)


class _CallbackScope:
    """Set in the context a listener callback runs in, active until the callback returns."""

    __slots__ = ("active", "owner")

    def __init__(self, owner: object) -> None:
        self.owner = owner
        self.active = True


_IN_LISTENER: contextvars.ContextVar[_CallbackScope | None] = contextvars.ContextVar(
    "kgroup_aio_listener", default=None
)


class ListenerCancelled(RuntimeError):
    """A listener callback's task was cancelled before it finished."""


class Worker:
    """The worker thread, its queue of jobs, and who owns the wrapped consumer.

    Args:
        sync: the wrapped consumer.
        spawn: starts the worker thread (the simulator's); None: a daemon ``threading.Thread``.
        deliver: hands a job's outcome to its awaiter; called on the loop.

    """

    def __init__(
        self, sync: Consumer[Any, Any], spawn: Callable[[str, Callable[[], None]], None] | None, deliver: Deliver
    ) -> None:
        self._sync = sync
        self._spawn = spawn
        self._deliver = deliver
        self.cond = threading.Condition()
        #: guarded by cond: the queue, who owns the wrapped consumer, the running jobs
        self._queue: collections.deque[Job] = collections.deque()
        self._free = 0  # queued jobs that are not barriers (they may run during a callback)
        self._owner: str | None = None
        self._parked = False  # the worker waits for a listener callback
        self._poll_running: Job | None = None  # the running barrier: poll, unsubscribe or close
        self._current: Job | None = None  # the innermost running job (None while parked)
        self._user_woken = False
        self._stopped = False
        #: loop side only
        self.loop: asyncio.AbstractEventLoop | None = None
        self._started = False
        self._listener_tasks: set[asyncio.Future[Any]] = set()
        #: worker side: the context of the poll/close job whose listener callbacks run now
        self._job_context: contextvars.Context | None = None

    # ------------------------------------------------------------------ loop side
    def bind_loop(self) -> asyncio.AbstractEventLoop:
        """The running loop, which must be the one this consumer was first used from."""
        loop = asyncio.get_running_loop()
        if self.loop is None:
            self.loop = loop
        elif self.loop is not loop:
            raise RuntimeError("this kgroup.aio.Consumer is used from another event loop")
        return self.loop

    def in_listener(self) -> bool:
        """Whether this code runs inside (or in a task started by) one of our running callbacks."""
        scope = _IN_LISTENER.get()
        return scope is not None and scope.owner is self and scope.active

    def submit(self, job: Job) -> None:
        """Queue ``job`` for the worker (starting it on first use)."""
        with self.cond:
            self._queue.append(job)
            if not job.barrier:
                self._free += 1
        self._ensure_started()
        self._sync._mailbox.notify()

    def cancel(self, job: Job) -> None:
        """The awaiter of ``job`` gave up: drop it if queued, end it early if it runs and may be ended."""
        with self.cond:
            job.cancelled = True
            if job.state == QUEUED:
                self._queue.remove(job)
                if not job.barrier:
                    self._free -= 1
                job.state = DONE
            elif job.state == RUNNING and job.interruptible:
                self._interrupt(job)

    def drop_barriers(self) -> list[Job]:
        """``close()``: drop the queued barriers and end a running interruptible one; the dropped jobs."""
        dropped: list[Job] = []
        with self.cond:
            for job in list(self._queue):
                if job.barrier:
                    self._queue.remove(job)
                    job.state = DONE
                    dropped.append(job)
            if self._poll_running is not None and self._poll_running.interruptible:
                self._interrupt(self._poll_running)
        return dropped

    def _interrupt(self, job: Job) -> None:
        """Under ``cond``: end the running ``job`` early with the wrapped consumer's ``wakeup()``.

        Under the lock, the worker cannot have moved on to another call yet. While ``job``
        waits for a listener callback (or runs a call the callback awaits), the wakeup waits
        until the callback is over: it must not end a commit the callback awaits.
        """
        if job.interrupted:
            return
        job.interrupted = True
        if self._current is job:
            self._sync.wakeup()

    def user_wakeup(self) -> None:
        """The application called ``wakeup()`` (any thread)."""
        with self.cond:
            self._user_woken = True
        self._sync.wakeup()

    @property
    def user_woken(self) -> bool:
        """Whether the application's ``wakeup()`` was not used up by a call it awaited yet."""
        with self.cond:
            return self._user_woken

    def wakeup_delivered(self) -> None:
        """A call raised ``WakeupError`` to its awaiter: the application's wakeup is used up."""
        with self.cond:
            self._user_woken = False

    def on_loop(self, fn: Callable[..., None], *args: Any) -> None:
        """Run ``fn(*args)`` on the loop (from any thread); dropped once the loop is closed."""
        loop = self.loop
        if loop is None:
            return
        try:
            loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:
            log.debug("event loop closed: %s not delivered", getattr(fn, "__name__", fn))

    def apply(self, op: Callable[[], None]) -> None:
        """Run a non-blocking ``op`` now on this thread if nothing runs or waits, else queue it."""
        with self.cond:
            ahead = self._free if self._parked else len(self._queue)
            direct = self._owner is None and not ahead
            if direct:
                self._owner = _LOOP
        if not direct:
            self.submit(Job(op, None))
            return
        try:
            op()
        finally:
            with self.cond:
                self._owner = None
                self.cond.notify_all()

    def _ensure_started(self) -> None:
        if self._started:
            return
        self._started = True
        if self._spawn is not None:
            self._spawn("aio-worker", self._main)
            return
        threading.Thread(target=self._main, name="kgroup-aio-poll", daemon=True).start()

    # ------------------------------------------------------------------ worker side
    def _main(self) -> None:
        while True:
            job = self._next_job(barrier_ok=True, until=None)
            if job is None:
                return
            self._execute(job)
            if job.last:
                with self.cond:
                    self._stopped = True
                    left = list(self._queue)
                    self._queue.clear()
                    self._free = 0
                for late in left:  # asked for from a close callback, too late to run
                    if late.future is not None:
                        self.on_loop(self._deliver, late, None, ConsumerClosedError("the consumer is closed"))
                return

    def _next_job(self, *, barrier_ok: bool, until: Callable[[], bool] | None) -> Job | None:
        """The next job to run (taking ownership), or None once ``until()`` holds and none is due."""
        mailbox = self._sync._mailbox
        while True:
            with self.cond:
                job = self._pop(barrier_ok)
                if job is not None:
                    while self._owner == _LOOP:  # the loop runs a non-blocking op: microseconds
                        self.cond.wait()
                    self._owner = _WORKER
                    job.state = RUNNING
                    if job.barrier:
                        self._poll_running = job
                    return job
                if self._stopped:
                    return None
            if until is not None and until():
                return None

            def ready() -> bool:  # under the mailbox's lock: must not take cond
                due = len(self._queue) if barrier_ok else self._free
                return bool(due) or self._stopped or (until is not None and until())

            mailbox.wait_until(ready, _IDLE_WAIT_S)

    def _pop(self, barrier_ok: bool) -> Job | None:
        """Under ``cond``: the first runnable queued job."""
        if barrier_ok:
            if not self._queue:
                return None
            job = self._queue.popleft()
        else:
            if not self._free:
                return None
            job = next(j for j in self._queue if not j.barrier)
            self._queue.remove(job)
        if not job.barrier:
            self._free -= 1
        return job

    def _execute(self, job: Job) -> None:
        """Worker: run ``job`` (owning the wrapped consumer) and deliver its outcome."""
        outer = self._job_context
        if job.barrier:
            self._job_context = job.context
        with self.cond:
            self._current = job
        value: Any = None
        error: BaseException | None = None
        try:
            value = job.fn()
        except BaseException as exc:
            error = exc
        finally:
            self._job_context = outer
            with self.cond:
                self._owner = None
                self._current = None
                job.state = DONE
                if self._poll_running is job:
                    self._poll_running = None
                interrupted = job.interrupted
                user = self._user_woken
                self.cond.notify_all()
        if interrupted and not user and not isinstance(error, WakeupError):
            # the internal wakeup() may outlive the call it ended: no later call may see it
            self._sync._mailbox.consume_wakeup()
        if job.future is not None:
            self.on_loop(self._deliver, job, value, error)
        elif error is not None:
            log.warning("group %s: queued call failed: %s", self._sync.config.group_id, error)

    # ------------------------------------------------------------------ listener callbacks
    def run_listener(
        self,
        method: Callable[[frozenset[TopicPartition]], Awaitable[None] | None],
        partitions: frozenset[TopicPartition],
    ) -> None:
        """Worker, inside the wrapped consumer's callback: run ``method`` on the loop and wait.

        Meanwhile the worker runs the calls awaited by the callback or by other tasks, except
        poll, unsubscribe and close; then it owns the wrapped consumer again and returns (or raises what the
        callback raised, which the wrapped consumer reports as ``ListenerError``).
        """
        loop = self.loop
        if loop is None:
            raise RuntimeError("no event loop to run the listener callback on")
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        mailbox = self._sync._mailbox
        done.add_done_callback(lambda _f: mailbox.notify())
        context = (self._job_context or contextvars.copy_context()).copy()
        try:
            loop.call_soon_threadsafe(self._start_listener, method, partitions, context, done)
        except RuntimeError as exc:
            raise RuntimeError(f"{getattr(method, '__name__', method)} not run: the event loop is closed") from exc
        with self.cond:
            outer = self._current
            self._current = None
            self._owner = None
            self._parked = True
            if outer is not None and outer.interrupted and not self._user_woken:
                # the poll running this callback was ended early: the wakeup() must not end the
                # calls the callback awaits; it is made again once the callback is over
                self._sync._mailbox.consume_wakeup()
            self.cond.notify_all()
        def over() -> bool:  # a loop closed before it ran the callback never will
            return done.done() or loop.is_closed()

        try:
            while True:
                job = self._next_job(barrier_ok=False, until=over)
                if job is None:
                    break
                self._execute(job)
        finally:
            with self.cond:
                self._parked = False
                while self._owner == _LOOP:
                    self.cond.wait()
                self._owner = _WORKER
                self._current = outer
                if outer is not None and outer.interrupted:
                    self._sync.wakeup()  # the interrupt that waited for the callback
        if not done.done():
            raise RuntimeError(f"{getattr(method, '__name__', method)} not run: the event loop was closed")
        error = done.exception()
        if error is not None:
            raise error

    def _start_listener(
        self,
        method: Callable[[frozenset[TopicPartition]], Awaitable[None] | None],
        partitions: frozenset[TopicPartition],
        context: contextvars.Context,
        done: concurrent.futures.Future[None],
    ) -> None:
        """Loop: call the user's callback in ``context``; await it as a task if it is a coroutine."""
        scope = _CallbackScope(self)
        context.run(_IN_LISTENER.set, scope)
        try:
            result = context.run(method, partitions)
            if not inspect.isawaitable(result):
                scope.active = False
                done.set_result(None)
                return
            task = context.run(asyncio.ensure_future, result)
        except BaseException as exc:
            scope.active = False
            done.set_exception(exc)
            return
        self._listener_tasks.add(task)
        name = getattr(method, "__name__", "listener callback")
        task.add_done_callback(functools.partial(self._listener_finished, name, scope, done))

    def _listener_finished(
        self, name: str, scope: _CallbackScope, done: concurrent.futures.Future[None], task: asyncio.Future[Any]
    ) -> None:
        scope.active = False
        self._listener_tasks.discard(task)
        if task.cancelled():
            done.set_exception(ListenerCancelled(f"{name} was cancelled"))
            return
        settle(done, task.exception())
