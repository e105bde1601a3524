"""The receive path of kgroup's connections: each response read once, into one buffer.

kafka-python 3.0's transports (``kafka.net.transport``) read a socket in 4 KiB ``recv`` calls,
join them, and its parser (``kafka.protocol.parser.KafkaProtocol``) copies them into a frame
buffer, copies that again to decode it, and copies each partition's ``records`` out of it. For a
Fetch response of megabytes that is thousands of calls and five copies. Here, on the
connections of kgroup's own network client only (:func:`install`, per connection manager):

* the transport reads each response's 4-byte size prefix (Kafka's request/response framing,
  the Kafka protocol guide's "Common Request and Response Structure"), allocates one buffer of
  that size and receives the rest straight into it with ``recv_into`` (small responses come
  through a 64 KiB scratch buffer, several per call); TLS sockets too (``ssl.SSLSocket.recv_into``).
  On a plain socket, kgroup's C module :mod:`kgroup._io._crecv` (built at install where a C
  compiler is found) receives instead: it loops over ``recv`` while bytes keep coming, with the
  GIL released once for the loop, where each ``recv_into`` takes the GIL back after its system
  call, which waits up to the switch interval (``sys.getswitchinterval()``, 5 ms) while the poll
  thread runs Python code: responses of megabytes then came at a few socket buffers per 5 ms;
* the parser decodes the response from that buffer without copying it, and a Fetch response's
  ``records`` are ``memoryview`` s into it, handed as they are to the record decoders
  (:mod:`kgroup._io.columnar`, :mod:`kgroup._io.record_decoder`).

Everything else stays kafka-python's: connections, ApiVersions, SASL and TLS handshakes,
request framing, correlation ids, timeouts, throttling, metrics (``bytes_received``). Nothing
is patched globally: :func:`install` wraps one manager's ``_build_transport`` and each
transport and parser it makes changes class (to :class:`FrameTCPTransport`,
:class:`FrameSSLTransport`, :class:`FrameParser`), so a plain ``KafkaConsumer`` in the same
process reads as kafka-python does.
"""

from __future__ import annotations

import importlib
import logging
import re
import ssl
import struct
from typing import Any

from kgroup._io import quiet_kafka  # noqa: F401  (first: kafka-python, without its import-time warning)

# isort: split
import kafka.errors as KErrors
from kafka.net.transport import KafkaSSLTransport, KafkaTCPTransport
from kafka.protocol.consumer import FetchResponse
from kafka.protocol.metadata import FindCoordinatorResponse
from kafka.protocol.parser import KafkaProtocol
from kafka.protocol.schemas.fields.codegen import CodegenContext

from kgroup._clock import MonotonicClock

__all__ = ["FrameParser", "FrameSSLTransport", "FrameTCPTransport", "Frames", "install"]

log = logging.getLogger(__name__)

#: the scratch buffer between responses: small responses (heartbeats, commits) come several per call
SCRATCH_BYTES = 64 * 1024
_CLOCK = MonotonicClock()
_WOULD_BLOCK = (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError)
#: how long (ms) :func:`kgroup._io._crecv.recv_frame` waits for more of a response once bytes came
RECV_WAIT_MS = 1


def _load_recv_frame() -> Any:
    """``kgroup._io._crecv.recv_frame``, or None where it was not built (``socket.recv_into`` then)."""
    try:
        return getattr(importlib.import_module("kgroup._io._crecv"), "recv_frame", None)
    except ImportError:
        return None


_RECV_FRAME = _load_recv_frame()


class Frames(list):  # type: ignore[type-arg]
    """Whole responses (their bytes after the size prefix, one ``bytearray`` each), in arrival order."""

    __slots__ = ()


class _FrameReader:
    """Splits a connection's bytes into whole responses, each received into a buffer of its own size."""

    __slots__ = ("_filled", "_frame", "_head", "_head_n", "_max_size", "_recv_frame", "_scratch", "_size", "_view")

    def __init__(self, max_size: int, recv_frame: Any = None) -> None:
        self._max_size = max_size
        self._recv_frame = recv_frame  # kgroup._io._crecv.recv_frame for a plain socket, else None
        self._scratch = memoryview(bytearray(SCRATCH_BYTES))
        self._head = bytearray(4)
        self._head_n = 0
        self._frame: bytearray | None = None
        self._view: memoryview | None = None
        self._size = 0
        self._filled = 0

    def read(self, sock: Any, frames: Frames) -> tuple[int, Exception | None]:
        """Receive what ``sock`` has until it would block; whole responses go to ``frames``.

        Returns the bytes received and the error that ends the connection (None: it goes on):
        ``KafkaConnectionError`` on a disconnect or a socket error, ``InvalidReceiveError`` for
        a size prefix below 0 or above ``receive_message_max_bytes`` (kafka-python's parser's).

        A disconnect right after whole responses in the same read is reported by the next read,
        not this one: the responses are handed over first and whoever awaits them runs before
        the connection is torn down. A broker answers a failed SASL authentication and closes
        the connection at once (``connection.failed.authentication.delay.ms`` after); torn down
        first, the connection failed with "socket disconnected" and was retried until its
        timeout instead of failing with the broker's authentication error.
        """
        total = 0
        scratch = self._scratch
        complete = len(frames)
        recv_frame = self._recv_frame
        while True:
            try:
                if self._view is not None and self._size - self._filled >= SCRATCH_BYTES:
                    if recv_frame is not None:  # straight into the response's buffer, without the GIL
                        n = recv_frame(sock.fileno(), self._frame, self._filled, RECV_WAIT_MS)
                    else:
                        n = sock.recv_into(self._view[self._filled:])  # straight into the response's buffer
                    if n:
                        self._filled += n
                        if self._filled == self._size:
                            self._complete(frames)
                else:
                    n = sock.recv_into(scratch)
                    if n:
                        self._feed(scratch[:n], frames)
            except _WOULD_BLOCK:
                return total, None
            except KErrors.KafkaProtocolError as exc:
                return total, exc
            except BaseException as exc:
                if len(frames) > complete:
                    return total, None  # the next read meets the error again (docstring)
                log.exception("Error receiving network data, closing socket")
                return total, KErrors.KafkaConnectionError(exc)
            if not n:
                if len(frames) > complete:
                    return total, None  # the next read meets the disconnect again (docstring)
                log.error("socket disconnected")
                return total, KErrors.KafkaConnectionError("socket disconnected")
            total += n

    def _feed(self, data: memoryview, frames: Frames) -> None:
        i, n = 0, len(data)
        while i < n:
            if self._view is None:
                take = min(4 - self._head_n, n - i)
                self._head[self._head_n:self._head_n + take] = data[i:i + take]
                self._head_n += take
                i += take
                if self._head_n < 4:
                    return
                self._head_n = 0
                size = int.from_bytes(self._head, "big", signed=True)
                if size < 0 or size > self._max_size:
                    raise KErrors.InvalidReceiveError(f"Invalid frame length: {size}")
                self._frame = bytearray(size)
                self._view = memoryview(self._frame)
                self._size, self._filled = size, 0
            take = min(self._size - self._filled, n - i)
            self._view[self._filled:self._filled + take] = data[i:i + take]
            self._filled += take
            i += take
            if self._filled == self._size:
                self._complete(frames)

    def _complete(self, frames: Frames) -> None:
        frames.append(self._frame)
        self._frame = self._view = None


class _FrameReading:
    """What both transports add: ``_read_from_sock`` by whole responses (module docstring)."""

    _reader: _FrameReader | None = None

    async def _read_from_sock(self: Any) -> None:
        while self._read and not self._closed:
            if self._sock is None or self._sock.fileno() == -1:
                return None  # closed under us (the connection's close runs on this thread too)
            await self._net.wait_read(self._sock)
            protocol = self._protocol
            reader = self._reader
            if reader is None:
                parser = getattr(protocol, "parser", None)
                if type(parser) is KafkaProtocol:
                    parser.__class__ = FrameParser  # this connection's parser only
                max_size = getattr(parser, "_max_frame_size", 100000000)
                plain = self._sock is not None and not isinstance(self._sock, ssl.SSLSocket)
                reader = self._reader = _FrameReader(max_size, _RECV_FRAME if plain else None)
            frames = Frames()
            if self._sock is None:
                return None
            received, err = reader.read(self._sock, frames)
            if received:
                log.debug("%s: received %d bytes", self, received)
                self.last_read = _CLOCK.monotonic()  # kafka-python's idle check reads it
                if protocol is not None and protocol._sensors:
                    protocol._sensors.bytes_received.record(received)
            if frames and protocol is not None:
                try:
                    protocol.data_received(frames)
                except KErrors.KafkaProtocolError as e:
                    return self.abort(error=e)  # type: ignore[no-any-return]
            if err is not None:
                return self.abort(error=err)  # type: ignore[no-any-return]
        return None


class FrameTCPTransport(_FrameReading, KafkaTCPTransport):  # type: ignore[misc]
    """kafka-python's TCP transport, reading whole responses into one buffer each."""


class FrameSSLTransport(_FrameReading, KafkaSSLTransport):  # type: ignore[misc]
    """kafka-python's TLS transport, reading whole responses into one buffer each."""


_TRANSPORTS = {KafkaTCPTransport: FrameTCPTransport, KafkaSSLTransport: FrameSSLTransport}


class _HeaderReader:
    """The ``read``/``tell`` a response header's decoder needs, over the start of a frame."""

    __slots__ = ("_data", "_pos")

    def __init__(self, data: memoryview) -> None:
        self._data = data
        self._pos = 0

    def read(self, n: int | None = None) -> bytes:
        start = self._pos
        end = len(self._data) if n is None else min(start + n, len(self._data))
        self._pos = end
        return bytes(self._data[start:end])

    def tell(self) -> int:
        return self._pos


#: Fetch response versions -> their decoder whose ``records`` are views of the frame, not copies
_FETCH_DECODERS: dict[int, Any] = {}
_RECORDS_COPY = re.compile(r"^(\s*)(_val\d+) = bytes\((data\[pos:pos\+_ln\d+\])\)$")


def fetch_decoder(version: int) -> Any:
    """kafka-python's compiled Fetch response decoder of ``version``, with ``records`` as memoryviews.

    The same generated code (``StructField.compiled_decode_from``) compiled once more here, its one
    ``bytes(...)`` copy of the ``records`` field left out; None if the generated code does not
    have that shape (a kafka-python change: the parser then decodes as kafka-python does).
    """
    if version in _FETCH_DECODERS:
        return _FETCH_DECODERS[version]
    decoder = None
    try:
        flexible = FetchResponse.flexible_version_q(version)
        ctx = CodegenContext()
        ctx.lines.append("def _decode(data, pos):")
        struct_field = FetchResponse._struct
        saved = struct_field._data_class
        struct_field._data_class = FetchResponse[None]
        try:
            struct_field.emit_decode_from(ctx, "obj", "    ", version=version, compact=flexible, tagged=flexible)
        finally:
            struct_field._data_class = saved
        ctx.emit("    ", "return obj, pos")
        lines = ctx.source().splitlines()
        replaced = 0
        for i, line in enumerate(lines):
            match = _RECORDS_COPY.match(line)
            if match and i + 2 < len(lines) and re.match(rf"\s*\w+\.records = {match.group(2)}$", lines[i + 2]):
                lines[i] = f"{match.group(1)}{match.group(2)} = {match.group(3)}"
                replaced += 1
        if replaced == 1:
            exec(compile("\n".join(lines), f"<kgroup_fetch_decode_v{version}>", "exec"), ctx.globs)
            decoder = ctx.globs["_decode"]
    except Exception:  # pragma: no cover - a kafka-python change: decode as it does
        log.debug("no view decoder for Fetch v%d", version, exc_info=True)
    _FETCH_DECODERS[version] = decoder
    return decoder


class FrameParser(KafkaProtocol):  # type: ignore[misc]
    """kafka-python's parser, also taking whole responses (:class:`Frames`) and decoding them in place.

    Bytes (kafka-python's own calls) go through its ``receive_bytes`` unchanged.
    """

    def receive_bytes(self, data: Any) -> list[tuple[int, Any]]:
        if isinstance(data, Frames):
            return [self._process_frame(frame) for frame in data]
        out: list[tuple[int, Any]] = super().receive_bytes(data)
        return out

    def _process_frame(self, frame: bytearray) -> tuple[int, Any]:
        """``KafkaProtocol._process_response`` without its copies: the same checks and errors."""
        if not self.in_flight_requests:
            raise KErrors.CorrelationIdError("No in-flight-request found for server response")
        header = self.in_flight_requests.popleft()
        correlation_id = header.correlation_id
        response_type = header.get_response_class()
        if response_type is None:
            api, version = header.request_api_key, header.request_api_version
            log.error("Unable to find ResponseType for api=%d version=%d", api, version)
            raise KErrors.KafkaProtocolError(f"Unable to find response type for api {api} v{version}")
        view = memoryview(frame)
        try:
            reader = _HeaderReader(view)
            received = response_type.parse_header(reader).correlation_id
        except (ValueError, struct.error, IndexError) as exc:
            raise KErrors.KafkaProtocolError("Unable to decode response header") from exc
        if (received == 0 and correlation_id != 0 and response_type is FindCoordinatorResponse
                and header.request_api_version == 0):
            log.warning("Kafka 0.8.2 quirk -- FindCoordinatorResponse Correlation ID does not match request.")
        elif correlation_id != received:
            raise KErrors.CorrelationIdError(
                f"Correlation IDs do not match: sent {correlation_id}, recv {received}")
        pos = reader.tell()
        try:
            decode = fetch_decoder(header.request_api_version) if response_type[None] is FetchResponse else None
            if decode is not None:
                response, _ = decode(view, pos)
            else:
                response = response_type.decode(view[pos:])
        except (ValueError, struct.error, IndexError):
            log.error("Response %d [ResponseType: %s RequestHeader: %s]: Unable to decode %d-byte buffer",
                      correlation_id, response_type, header, len(frame))
            raise KErrors.KafkaProtocolError("Unable to decode response") from None
        log.debug("%s Received response %d %s", self._ident, correlation_id, response)
        return correlation_id, response


def install(manager: Any) -> None:
    """Read every connection ``manager`` (a ``KafkaConnectionManager``) opens from now on by whole responses.

    Wraps this manager's ``_build_transport`` only: the transport it builds (after kafka-python's
    own TCP connect and TLS handshake) becomes a :class:`FrameTCPTransport` or
    :class:`FrameSSLTransport`; another transport class (a kafka-python change) is left as it is.
    """
    build = manager._build_transport

    async def build_transport(node: Any, timeout_at: Any = None) -> Any:
        transport = await build(node, timeout_at=timeout_at)
        frame_class = _TRANSPORTS.get(type(transport))
        if frame_class is not None:
            transport.__class__ = frame_class
        return transport

    manager._build_transport = build_transport

