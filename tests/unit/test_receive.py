"""kgroup's receive path (``kgroup._io.receive``): whole responses, one buffer each, decoded in place.

The frame reader against byte streams cut anywhere (the frames come out whole, in order, with
the sizes their prefixes say), its errors (a bad size prefix, a disconnect); the Fetch decoder
whose ``records`` are views against kafka-python's own decoder (the same response, field by
field); the parser against kafka-python's on the same framed bytes.
"""

from __future__ import annotations

import ssl
import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka import errors as KErrors
from kafka.net.transport import KafkaSSLTransport, KafkaTCPTransport
from kafka.protocol.consumer import FetchRequest, FetchResponse
from kafka.protocol.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.parser import KafkaProtocol

from kgroup._io import receive


class ChunkedSocket:
    """A non-blocking socket's ``recv_into``: the stream in the given chunk sizes, would-block between reads."""

    def __init__(self, stream: bytes, chunks: list[int], *, blocking: type[Exception] = BlockingIOError) -> None:
        self._stream = stream
        self._chunks = list(chunks)
        self._pos = 0
        self._blocking = blocking
        self.calls = 0

    def recv_into(self, buffer: Any) -> int:
        self.calls += 1
        if self._pos >= len(self._stream):
            raise self._blocking()
        size = self._chunks.pop(0) if self._chunks else len(self._stream)
        n = min(size, len(buffer), len(self._stream) - self._pos)
        buffer[:n] = self._stream[self._pos:self._pos + n]
        self._pos += n
        return n


def framed(payloads: list[bytes]) -> bytes:
    return b"".join(struct.pack(">i", len(p)) + p for p in payloads)


payloads = st.lists(st.one_of(st.binary(max_size=40),
                              st.integers(0, 200_000).map(lambda n: bytes(range(256)) * (n // 256) + b"x")),
                    max_size=6)


@given(payloads, st.lists(st.integers(1, 100_000), max_size=40), st.data())
@settings(max_examples=60, deadline=None)
def test_frames_come_out_whole_in_order_however_the_stream_is_cut(frames: list[bytes], chunks: list[int],
                                                                  data: st.DataObject) -> None:
    stream = framed(frames)
    reader = receive._FrameReader(10**7)
    sock = ChunkedSocket(stream, chunks, blocking=data.draw(st.sampled_from([BlockingIOError, ssl.SSLWantReadError])))
    out: list[bytes] = []
    received = 0
    while True:  # one read per readable event, as the transport does
        got = receive.Frames()
        n, err = reader.read(sock, got)
        assert err is None
        received += n
        assert all(isinstance(f, bytearray) for f in got)
        out += [bytes(f) for f in got]
        if n == 0:
            break
    assert received == len(stream)
    assert out == frames


def test_a_large_response_is_received_straight_into_its_buffer() -> None:
    body = bytes(5_000_000)
    sock = ChunkedSocket(framed([body]), [])  # the kernel hands over whatever the buffer takes
    frames = receive.Frames()
    n, err = receive._FrameReader(10**7).read(sock, frames)
    assert (n, err, [len(f) for f in frames]) == (len(body) + 4, None, [len(body)])
    assert sock.calls <= 3  # the scratch read, one recv_into for the rest, the would-block


@pytest.mark.parametrize("size", [-1, 10**7 + 1])
def test_a_bad_size_prefix_is_kafka_pythons_invalid_receive_error(size: int) -> None:
    sock = ChunkedSocket(struct.pack(">i", size) + b"abc", [])
    _, err = receive._FrameReader(10**7).read(sock, receive.Frames())
    assert isinstance(err, KErrors.InvalidReceiveError)


def test_a_disconnect_ends_the_read_with_a_connection_error() -> None:
    class Closed:
        def recv_into(self, buffer: Any) -> int:
            return 0

    frames = receive.Frames()
    _, err = receive._FrameReader(100).read(Closed(), frames)
    assert isinstance(err, KErrors.KafkaConnectionError) and not frames


@pytest.mark.parametrize("end", ["eof", "reset"])
def test_responses_before_a_disconnect_are_handed_over_before_the_error(end: str) -> None:
    # a broker refusing SASL credentials sends its answer and closes: the answer must reach
    # the connection's SASL step before the disconnect tears the connection down
    class AnswerThenClose(ChunkedSocket):
        def recv_into(self, buffer: Any) -> int:
            if self._pos >= len(self._stream):
                self.calls += 1
                if end == "reset":
                    raise ConnectionResetError(104, "Connection reset by peer")
                return 0
            return super().recv_into(buffer)

    sock = AnswerThenClose(framed([b"answer-1", b"answer-2"]), [])
    reader = receive._FrameReader(100)
    first = receive.Frames()
    n, err = reader.read(sock, first)
    assert (n, err, [bytes(f) for f in first]) == (24, None, [b"answer-1", b"answer-2"])
    second = receive.Frames()
    n, err = reader.read(sock, second)
    assert isinstance(err, KErrors.KafkaConnectionError) and not second and n == 0


def _fetch_response(version: int, partitions: list[tuple[int, bytes | None, list[tuple[int, int]]]]) -> Any:
    Topic = FetchResponse.FetchableTopicResponse
    Partition = Topic.PartitionData
    Aborted = Partition.AbortedTransaction
    parts = [Partition(partition_index=i, error_code=0, high_watermark=100 + i, last_stable_offset=90,
                       log_start_offset=0, preferred_read_replica=-1, records=records,
                       aborted_transactions=[Aborted(producer_id=p, first_offset=o) for p, o in aborted])
             for i, records, aborted in partitions]
    return FetchResponse(throttle_time_ms=0, error_code=0, session_id=0,
                         responses=[Topic(topic="t", partitions=parts)], version=version)


def _values(message: Any) -> Any:
    """A message's fields as plain values (a ``memoryview`` as its bytes)."""
    def plain(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, list):
            return [plain(v) for v in value]
        return bytes(value) if isinstance(value, memoryview) else value

    return plain(message.to_dict())


fetch_partitions = st.lists(st.tuples(st.integers(0, 50), st.one_of(st.none(), st.binary(max_size=300)),
                                      st.lists(st.tuples(st.integers(0, 9), st.integers(0, 99)), max_size=2)),
                            max_size=4)


@given(st.integers(4, 12), fetch_partitions)
@settings(max_examples=80, deadline=None)
def test_the_fetch_decoder_reads_what_kafka_pythons_does_with_records_as_views(version: int, parts: Any) -> None:
    encoded = _fetch_response(version, parts).encode(version=version)
    stock = FetchResponse[version].decode(encoded)
    decode = receive.fetch_decoder(version)
    assert decode is not None
    frame = bytearray(encoded)
    ours, end = decode(memoryview(frame), 0)
    assert end == len(encoded)
    assert _values(ours) == _values(stock)
    for topic in ours.responses:
        for partition in topic.partitions:
            assert partition.records is None or isinstance(partition.records, memoryview)


def test_the_parser_answers_what_kafka_pythons_answers_for_the_same_frames() -> None:
    requests = [MetadataRequest(topics=None, version=9), FetchRequest(version=12, max_wait_ms=1, min_bytes=1,
                                                                      max_bytes=1, isolation_level=0, session_id=0,
                                                                      session_epoch=-1, topics=[],
                                                                      forgotten_topics_data=[], rack_id="")]
    response = _fetch_response(12, [(0, b"\x00" * 70, [(1, 2)]), (1, None, [])])
    stock, ours = KafkaProtocol(client_id="c"), KafkaProtocol(client_id="c")
    ours.__class__ = receive.FrameParser
    for parser in (stock, ours):
        for request in requests:
            parser.send_request(request)
    metadata = MetadataResponse(throttle_time_ms=0, brokers=[], cluster_id="x", controller_id=1,
                                                 topics=[], version=9)
    bodies = []
    for correlation_id, message in ((1, metadata), (2, response)):
        message.with_header(correlation_id=correlation_id)
        bodies.append(message.encode(framed=False, header=True))
    expected = stock.receive_bytes(framed(bodies))
    got = ours.receive_bytes(receive.Frames(bytearray(b) for b in bodies))
    assert [c for c, _ in got] == [c for c, _ in expected] == [1, 2]
    assert [_values(m) for _, m in got] == [_values(m) for _, m in expected]
    assert isinstance(got[1][1].responses[0].partitions[0].records, memoryview)


def test_a_response_out_of_order_is_kafka_pythons_correlation_error() -> None:
    parser = KafkaProtocol(client_id="c")
    parser.__class__ = receive.FrameParser
    parser.send_request(MetadataRequest(topics=None, version=9))
    metadata = MetadataResponse(throttle_time_ms=0, brokers=[], cluster_id="x", controller_id=1,
                                                 topics=[], version=9)
    metadata.with_header(correlation_id=7)
    with pytest.raises(KErrors.CorrelationIdError):
        parser.receive_bytes(receive.Frames([bytearray(metadata.encode(framed=False, header=True))]))


def test_nothing_of_kafka_python_itself_changes() -> None:
    """The frame reading is per instance (``install``): kafka-python's classes read as they always did."""
    assert KafkaTCPTransport._read_from_sock is not receive.FrameTCPTransport._read_from_sock
    assert (KafkaTCPTransport._read_from_sock.__module__ == KafkaSSLTransport._read_from_sock.__module__
            == "kafka.net.transport")
    assert KafkaProtocol.receive_bytes.__module__ == "kafka.protocol.parser"
