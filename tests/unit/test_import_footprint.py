"""What ``import kgroup`` (and ``kgroup.Consumer``) loads: the client, not the test tooling.

The coordinator proxy's frame codec (``kgroup._io.kafka_frames``), the proxy, its Tansu
workarounds and the coordinator model belong to ``kgroup.testing``; an application that only
consumes must not pay for them. Checked in a fresh interpreter, since this test process has
imported them already.
"""

from __future__ import annotations

import json
import subprocess
import sys

TEST_ONLY = (
    "kgroup._io.kafka_frames",
    "kgroup.testing",
    "kgroup.testing.proxy",
    "kgroup.testing._tansu_workarounds",
    "kgroup.testing.coordinator",
)


def _modules_after(statement: str) -> set[str]:
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=120)
    return set(json.loads(out.stdout))


def test_import_kgroup_does_not_load_the_proxy_frame_codec():
    # kgroup's names are imported on first use: looking up Consumer loads the client
    loaded = _modules_after("import kgroup; kgroup.Consumer")
    assert "kgroup._io.kafka_python" in loaded  # the client adapter is there (sanity)
    assert loaded.isdisjoint(TEST_ONLY), sorted(loaded & set(TEST_ONLY))


def test_the_proxy_loads_the_frame_codec():
    assert "kgroup._io.kafka_frames" in _modules_after("import kgroup.testing.proxy")
