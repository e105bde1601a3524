"""kgroup's C receive module (``kgroup._io._crecv``, built at install by ``hatch_build.py``).

``recv_frame`` against ``socket.recv_into`` on real non-blocking sockets: the same bytes, the
same end of stream (0), the same would-block (``BlockingIOError``), bounded by the buffer it
is given; it waits up to ``wait_ms`` for more once bytes came, and returns as soon as the
buffer is full. The frame reader with it gives the frames the Python path gives.
"""

from __future__ import annotations

import os
import select
import socket
import struct
import threading
from collections.abc import Iterator

import pytest

from kgroup._io import receive

if os.name != "posix":
    pytest.skip("kgroup._io._crecv receives on POSIX only (socket.recv_into elsewhere)", allow_module_level=True)

from kgroup._io import _crecv  # built at install (hatch_build.py): a missing module fails here

recv_frame = _crecv.recv_frame


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    a, b = socket.socketpair()
    a.setblocking(False)
    b.setblocking(False)
    yield a, b
    a.close()
    b.close()


def test_the_receive_path_uses_it_on_a_plain_socket() -> None:
    assert receive._RECV_FRAME is recv_frame


def test_it_receives_what_is_there_into_the_buffer_from_start(pair: tuple[socket.socket, socket.socket]) -> None:
    reader, writer = pair
    data = bytes(range(256)) * 200
    writer.sendall(data)
    buffer = bytearray(10 + len(data) + 7)
    assert recv_frame(reader.fileno(), buffer, 10, 0) == len(data)
    assert bytes(buffer[10:10 + len(data)]) == data and buffer[:10] == bytes(10)


def test_it_stops_at_the_end_of_the_buffer(pair: tuple[socket.socket, socket.socket]) -> None:
    reader, writer = pair
    writer.sendall(b"a" * 100 + b"b" * 50)
    buffer = bytearray(100)
    assert recv_frame(reader.fileno(), buffer, 0, 0) == 100
    assert reader.recv(1000) == b"b" * 50  # the rest stays in the socket


def test_nothing_to_read_is_blocking_io_error_and_a_close_is_zero(pair: tuple[socket.socket, socket.socket]) -> None:
    reader, writer = pair
    with pytest.raises(BlockingIOError):
        recv_frame(reader.fileno(), bytearray(10), 0, 0)
    with pytest.raises(BlockingIOError):
        recv_frame(reader.fileno(), bytearray(10), 0, 50)  # no wait before the first byte
    writer.sendall(b"xyz")
    writer.close()
    buffer = bytearray(10)
    assert recv_frame(reader.fileno(), buffer, 0, 50) == 3  # bytes first; the close is met next
    assert recv_frame(reader.fileno(), buffer, 3, 0) == 0


def test_an_error_is_oserror_as_recv_into_raises_it() -> None:
    a, b = socket.socketpair()
    b.close()
    fd = a.fileno()
    a.close()
    with pytest.raises(OSError) as raised:
        recv_frame(fd, bytearray(10), 0, 0)
    assert raised.value.errno is not None


@pytest.mark.parametrize(("start", "wait_ms"), [(-1, 0), (10, 0), (11, 0), (0, -1)])
def test_bad_arguments_are_value_errors(pair: tuple[socket.socket, socket.socket], start: int, wait_ms: int) -> None:
    with pytest.raises(ValueError):
        recv_frame(pair[0].fileno(), bytearray(10), start, wait_ms)


def test_a_read_only_buffer_is_refused(pair: tuple[socket.socket, socket.socket]) -> None:
    with pytest.raises(TypeError):
        recv_frame(pair[0].fileno(), b"0123456789", 0, 0)


def test_it_waits_for_the_rest_once_bytes_came_and_returns_when_full(pair: tuple[socket.socket, socket.socket]) -> None:
    reader, writer = pair
    first, rest = b"1" * 1000, b"2" * 3000
    writer.sendall(first)
    sent = threading.Event()

    def later() -> None:
        sent.wait(10)
        writer.sendall(rest)

    thread = threading.Thread(target=later)
    thread.start()
    try:
        buffer = bytearray(len(first) + len(rest))
        sent.set()
        # a wait far past any scheduling delay: the call returns when the buffer is full, not then
        assert recv_frame(reader.fileno(), buffer, 0, 30_000) == len(buffer)
        assert bytes(buffer) == first + rest
    finally:
        thread.join(10)


def test_the_frame_reader_gives_the_same_frames_with_it_and_without(pair: tuple[socket.socket, socket.socket]) -> None:
    reader_sock, writer = pair
    payloads = [b"small", bytes(range(256)) * 1000, b"", b"x" * (3 * receive.SCRATCH_BYTES + 5)]
    stream = b"".join(struct.pack(">i", len(p)) + p for p in payloads)
    results = []
    for recv in (recv_frame, None):
        frames_out: list[bytes] = []
        reader = receive._FrameReader(10**7, recv)
        def write() -> None:
            view = memoryview(stream)
            while view:
                try:
                    n = writer.send(view[:65536])
                except BlockingIOError:
                    select.select([], [writer], [], 10)  # until the reader made room
                    continue
                view = view[n:]

        thread = threading.Thread(target=write)
        thread.start()
        try:
            while len(frames_out) < len(payloads):
                frames = receive.Frames()
                _, err = reader.read(reader_sock, frames)
                assert err is None
                frames_out += [bytes(f) for f in frames]
                if not frames:
                    select.select([reader_sock], [], [], 10)  # until the writer sent more
        finally:
            thread.join(10)
        results.append(frames_out)
    assert results[0] == results[1] == payloads
