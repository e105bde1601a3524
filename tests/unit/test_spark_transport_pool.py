"""``kgroup.spark._pool.TransportPool``: a Python worker's idle transports, on a fake clock.

Reuse of the last returned transport of the same key only; a failed or abandoned task closes
its transport; idle ones expire after ``idle_close_s`` and beyond ``capacity``; ``close_all``.
"""

from __future__ import annotations

import pytest

from kgroup.spark._pool import TransportPool
from kgroup.testing._fake_clock import FakeClock


class Transport:
    made = 0

    def __init__(self) -> None:
        Transport.made += 1
        self.id = Transport.made
        self.closed = False
        self.resets = 0

    def close(self) -> None:
        self.closed = True


def reset(transport: Transport) -> bool:
    transport.resets += 1
    return True


def borrow(pool: TransportPool, key: object = "k") -> Transport:
    with pool.borrow(key, Transport, reset) as transport:
        return transport


def test_a_returned_transport_serves_the_next_task_of_its_key_only() -> None:
    pool = TransportPool(FakeClock())
    first = borrow(pool)
    assert (first.closed, first.resets, len(pool)) == (False, 1, 1)
    assert borrow(pool) is first, "the next task of the key reuses it"
    other = borrow(pool, "another cluster")
    assert other is not first and len(pool) == 2
    with pool.borrow("k", Transport, reset) as a, pool.borrow("k", Transport, reset) as b:
        assert a is first and b is not first, "two tasks at once: one gets a new transport"
    assert len(pool) == 3


def test_a_task_that_fails_or_is_abandoned_closes_its_transport() -> None:
    pool = TransportPool(FakeClock())
    with pytest.raises(RuntimeError), pool.borrow("k", Transport, reset) as failed:
        raise RuntimeError("fetch failed")
    assert failed.closed and failed.resets == 0 and len(pool) == 0

    def read():  # a task's generator, closed by Spark before its end (a LIMIT)
        with pool.borrow("k", Transport, reset) as transport:
            yield transport
            yield transport

    gen = read()
    abandoned = next(gen)
    gen.close()
    assert abandoned.closed and len(pool) == 0

    def broken(transport: Transport) -> bool:
        raise OSError("cannot reset")

    with pool.borrow("k", Transport, broken) as unresettable:
        pass
    assert unresettable.closed and len(pool) == 0
    with pool.borrow("k", Transport, lambda transport: False) as busy:  # a Fetch still in flight
        pass
    assert busy.closed and len(pool) == 0


def test_idle_transports_expire_and_are_capped() -> None:
    clock = FakeClock()
    pool = TransportPool(clock, idle_close_s=300.0, capacity=2)
    a = borrow(pool, "a")
    clock.advance(200.0)
    b = borrow(pool, "b")
    clock.advance(100.5)  # a idle for 300.5 s, b for 100.5 s
    assert borrow(pool, "b") is b
    assert a.closed and len(pool) == 1, "a expired at the return of b"
    c, d = borrow(pool, "c"), borrow(pool, "d")
    assert b.closed and not c.closed and not d.closed and len(pool) == 2, "capacity: the longest idle goes"
    clock.advance(301.0)
    fresh = borrow(pool, "c")
    assert fresh is not c and c.closed and d.closed, "expired ones are not handed out and are closed"
    pool.close_all()
    assert fresh.closed and len(pool) == 0


def test_bad_limits_are_refused() -> None:
    with pytest.raises(ValueError):
        TransportPool(capacity=-1)
    with pytest.raises(ValueError):
        TransportPool(idle_close_s=-1.0)
