"""Differential conformance: each scripted sequence gives the same answers on Apache Kafka and on the model.

See :mod:`tests.conformance.harness` for the lockstep runner, the normalisation and the timing
tolerance, :mod:`tests.conformance.scripts` for the scripts, and :mod:`tests.conformance.conftest`
for the broker settings the model mirrors. A script whose only mismatch is Kafka answering later
than the tolerance (:class:`~tests.conformance.harness.KafkaLate`) is played once more, with new
groups: a broker starved of CPU on a shared machine answers late once, a real difference repeats.
"""

from __future__ import annotations

import pytest

from .harness import Broker, KafkaLate, Runner, Script
from .scripts import SCRIPTS


def _param(script: Script) -> object:
    marks = []
    if script.difference is not None:
        marks.append(pytest.mark.xfail(strict=True, reason=script.difference))
    return pytest.param(script, id=script.name, marks=marks)


def _play(script: Script, broker: Broker) -> None:
    runner = Runner(script, broker)
    try:
        runner.run()
    finally:
        print(f"{script.name}: {script.doc}")
        print("\n".join(runner.outcome.log))


@pytest.mark.parametrize("script", [_param(s) for s in SCRIPTS])
def test_script(script: Script, request: pytest.FixtureRequest) -> None:
    broker: Broker = request.getfixturevalue("delayed_broker" if script.broker == "delayed" else "conformance_broker")
    try:
        _play(script, broker)
    except KafkaLate as late:
        print(f"Kafka was late ({late}); playing the script once more")
        _play(script, broker)
