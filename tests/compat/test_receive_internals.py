"""What ``kgroup._io.receive`` reaches into in kafka-python 3.0 (the pinned version).

The manager's ``_build_transport`` coroutine, the transports' ``_read_from_sock`` loop and
socket/protocol attributes, the parser's ``in_flight_requests`` and frame limit, and the shape
of the generated Fetch response decoder (one ``bytes`` copy of ``records``, left out here).
"""

from __future__ import annotations

import inspect

from kafka.net.manager import KafkaConnectionManager
from kafka.net.transport import KafkaSSLTransport, KafkaTCPTransport
from kafka.protocol.consumer import FetchResponse
from kafka.protocol.parser import KafkaProtocol

from kgroup._io import receive


def test_the_seams_are_where_the_receive_path_expects_them() -> None:
    assert inspect.iscoroutinefunction(KafkaConnectionManager._build_transport)
    assert list(inspect.signature(KafkaConnectionManager._build_transport).parameters) == ["self", "node", "timeout_at"]
    for transport in (KafkaTCPTransport, KafkaSSLTransport):
        assert inspect.iscoroutinefunction(transport._read_from_sock)
        source = inspect.getsource(KafkaTCPTransport._read_from_sock)
        for name in ("self._read", "self._closed", "self._net.wait_read", "self._protocol", "self.last_read",
                     "bytes_received", "data_received", "self.abort"):
            assert name in source, name
    parser = KafkaProtocol(client_id="c", receive_message_max_bytes=123)
    assert parser._max_frame_size == 123 and len(parser.in_flight_requests) == 0
    assert "_process_response" in vars(KafkaProtocol)


def test_every_fetch_version_kgroup_sends_decodes_its_records_as_views() -> None:
    from kgroup._io.fetch_pipeline import FETCH_MAX_VERSION

    for version in range(4, FETCH_MAX_VERSION + 1):
        assert receive.fetch_decoder(version) is not None, version
    assert FetchResponse.max_version >= FETCH_MAX_VERSION
