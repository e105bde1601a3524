"""What ``import kgroup`` (and ``kgroup.Consumer``) loads: the consumer's facade, not its network client.

The coordinator proxy's frame codec (``kgroup._io.kafka_frames``), the proxy, its Tansu
workarounds and the coordinator model belong to ``kgroup.testing``; an application that only
consumes must not pay for them. kafka-python, aiokafka's C record decoder, tenacity, the HTTP
server, ``ssl``, the group thread and the membership machine are imported where they are first
needed (a consumer's ``subscribe()``, ``assign()`` or look-up; ``serve_health()``; a retry), so
``from kgroup import Consumer`` stays cheap (benchmarks/startup.py measures it; no timing here).
Checked in a fresh interpreter, since this test process has imported them already.
"""

from __future__ import annotations

import json
import subprocess
import sys

#: loaded where first used, never by importing kgroup or looking up its public names
HEAVY = (
    "kafka",  # kafka-python
    "aiokafka",  # its C record decoder
    "crc32c",
    "tenacity",
    "http.server",
    "ssl",
    "kgroup._io.kafka_python",
    "kgroup._io.kafka_messages",
    "kgroup._driver.group_thread",
    "kgroup._driver.commits",
    "kgroup.membership.machine",
)

TEST_ONLY = (
    "kgroup._io.kafka_frames",
    "kgroup.testing",
    "kgroup.testing.proxy",
    "kgroup.testing._tansu_workarounds",
    "kgroup.testing.coordinator",
)


def modules_after(statement: str) -> set[str]:
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=120)
    return set(json.loads(out.stdout))


def test_import_kgroup_does_not_load_the_proxy_frame_codec():
    # kgroup's names are imported on first use: looking up Consumer loads the client
    loaded = modules_after("import kgroup; kgroup.Consumer")
    assert "kgroup.consumer" in loaded  # the facade is there (sanity)
    assert loaded.isdisjoint(TEST_ONLY), sorted(loaded & set(TEST_ONLY))


def test_the_proxy_loads_the_frame_codec():
    assert "kgroup._io.kafka_frames" in modules_after("import kgroup.testing.proxy")


def test_kgroup_and_all_its_public_names_load_nothing_heavy():
    loaded = modules_after("import kgroup\nfor name in kgroup.__all__: getattr(kgroup, name)")
    assert {"kgroup.consumer", "kgroup.config", "kgroup.health"} <= loaded  # they were looked up (sanity)
    heavy = {m for m in loaded if m in HEAVY or m.split(".")[0] in HEAVY}
    assert heavy == set(), sorted(heavy)


def test_the_network_client_loads_the_heavy_modules():
    """The names above are the ones the client path really loads (else the test above is vacuous)."""
    loaded = modules_after("import kgroup._io.kafka_python, kgroup._driver.group_thread, kgroup._driver.commits")
    assert {
        "kafka",
        "kgroup._io.kafka_messages",
        "kgroup.membership.machine",
    } <= loaded
