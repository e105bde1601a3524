"""Peer processes for the tests and the benchmarks: one harness, both sides of the pipe.

A peer is a consumer in a process of its own (kgroup, kafka-python, confluent-kafka, or Apache
Kafka's Java ``KafkaConsumer`` from ``JavaPeer.java``), so a crash is real: SIGKILL leaves no
LeaveGroup and no heartbeats, as a dead host would. Parent and child speak one line protocol:
the child writes one JSON object per line on stdout (each with ``"event"`` and ``"t"``) and
reads one command per line on stdin (``close``, and ``pause`` for the test worker).

* :mod:`tests.peers.process`: the parent side, :class:`~tests.peers.process.PeerProcess`
  (spawn, read events on a thread, send commands, close or kill);
* :mod:`tests.peers.child`: the child side (``emit`` an event, read ``commands`` from stdin);
* :mod:`tests.peers.java`: the command line of the Java peer;
* :mod:`tests.peers.share`: share-group members (KIP-932) of kgroup, Java (``JavaPeer.java --mode
  share``) and confluent-kafka (:mod:`tests.peers.share_peer`), one protocol, and what each accepted.

The workers are ``tests/integration/peer_worker.py`` (the cross-check tests' kafka-python and
confluent-kafka members) and ``benchmarks/_members.py`` (the rebalance benchmark's members and
producer); ``tests/integration/peers.py`` and ``benchmarks/rebalance.py`` drive them.
"""
