"""Reading one Fetch response off a socket: kafka-python's transport and parser against kgroup's receive path.

Offline (no broker): a Fetch v12 response of ``--partitions`` partitions, each ``--partition-bytes``
of v2 record batches of 100 B records (``benchmarks/columnar_decode.py``'s ``record_set``), is
framed as a broker sends it and read from a fake non-blocking socket that hands over at most
``--chunk`` bytes per call (what a busy socket gives), then parsed into the response object whose
``records`` the decoders take:

* ``kafka-python``: its transport's 4 KiB ``recv`` calls joined (``KafkaTCPTransport._sock_recv``),
  its parser's staging and copies (``KafkaProtocol.receive_bytes``);
* ``kgroup``: ``kgroup._io.receive``: ``recv_into`` one buffer of the response's size, decoded in
  place, ``records`` as views of it.

CPU time per response, best of ``--repeat`` averages of ``--rounds``.

    python benchmarks/receive_path.py
"""

from __future__ import annotations

import argparse
import struct
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kgroup._io.quiet_kafka  # noqa: F401  (kafka-python without its import-time warning)

# isort: split
from kafka.protocol.consumer import FetchRequest, FetchResponse
from kafka.protocol.parser import KafkaProtocol

from kgroup._io import receive

sys.path.insert(0, str(Path(__file__).resolve().parent))
from columnar_decode import record_set  # noqa: E402


class FakeSocket:
    """A non-blocking socket holding one stream: at most ``chunk`` bytes per call, then would-block."""

    def __init__(self, stream: bytes, chunk: int) -> None:
        self._stream = stream
        self._chunk = chunk
        self._pos = 0

    def recv(self, size: int) -> bytes:
        if self._pos >= len(self._stream):
            raise BlockingIOError
        data = self._stream[self._pos:self._pos + min(size, self._chunk)]
        self._pos += len(data)
        return data

    def recv_into(self, buffer: Any) -> int:
        if self._pos >= len(self._stream):
            raise BlockingIOError
        n = min(len(buffer), self._chunk, len(self._stream) - self._pos)
        buffer[:n] = self._stream[self._pos:self._pos + n]
        self._pos += n
        return n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=5)
    parser.add_argument("--partition-bytes", type=int, default=1 << 20)
    parser.add_argument("--chunk", type=int, default=256 * 1024, help="bytes the socket hands over per call")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    records, per_partition = record_set(100, 0, 16384, args.partition_bytes)
    Topic = FetchResponse.FetchableTopicResponse
    response = FetchResponse(throttle_time_ms=0, error_code=0, session_id=0, version=12, responses=[Topic(
        topic="t", partitions=[Topic.PartitionData(partition_index=i, error_code=0, high_watermark=1,
                                                   last_stable_offset=1, log_start_offset=0,
                                                   preferred_read_replica=-1, records=records,
                                                   aborted_transactions=None)
                               for i in range(args.partitions)])])
    response.with_header(correlation_id=1)
    body = response.encode(framed=False, header=True)
    stream = struct.pack(">i", len(body)) + body
    request = FetchRequest(version=12, max_wait_ms=1, min_bytes=1, max_bytes=1, isolation_level=0, session_id=0,
                           session_epoch=-1, topics=[], forgotten_topics_data=[], rack_id="")

    def kafka_python() -> list[Any]:
        protocol = KafkaProtocol(client_id="c", receive_message_max_bytes=100_000_000)
        protocol.send_request(request)
        sock, parts = FakeSocket(stream, args.chunk), []
        while True:  # KafkaTCPTransport._sock_recv
            try:
                parts.append(sock.recv(4096))
            except BlockingIOError:
                break
        ((_, message),) = protocol.receive_bytes(b"".join(parts))
        return [p.records for t in message.responses for p in t.partitions]

    def kgroup() -> list[Any]:
        protocol = KafkaProtocol(client_id="c", receive_message_max_bytes=100_000_000)
        protocol.__class__ = receive.FrameParser
        protocol.send_request(request)
        frames = receive.Frames()
        receive._FrameReader(len(stream)).read(FakeSocket(stream, args.chunk), frames)
        ((_, message),) = protocol.receive_bytes(frames)
        return [p.records for t in message.responses for p in t.partitions]

    def best(run: Callable[[], Any]) -> float:
        run()
        times = []
        for _ in range(args.repeat):
            start = time.process_time()
            for _ in range(args.rounds):
                run()
            times.append((time.process_time() - start) / args.rounds)
        return min(times)

    assert [bytes(r) for r in kgroup()] == kafka_python()
    n = per_partition * args.partitions
    print(f"one Fetch response of {len(stream):,} B ({n:,} records of 100 B), socket chunks of {args.chunk:,} B")
    print("| receive path | CPU ms per response | CPU us per record |")
    print("|---|---:|---:|")
    for name, run in (("kafka-python", kafka_python), ("kgroup._io.receive", kgroup)):
        seconds = best(run)
        print(f"| {name} | {seconds * 1000:.2f} | {seconds / n * 1e6:.3f} |")


if __name__ == "__main__":
    main()
