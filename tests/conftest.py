"""Settings for every test: Hypothesis without per-example deadlines.

CI's machine is shared and loaded (two pytest workers, JVM brokers, Spark beside them): an
example that takes 30 ms on an idle machine can take 500 ms there, and Hypothesis' default
200 ms deadline would fail it as flaky (``DeadlineExceeded``, ``FlakyFailure``) though nothing
is wrong. Properties are about results, not speed (speed lives in ``benchmarks/``), so the
profile drops the deadline and the too-slow health check; ``HYPOTHESIS_PROFILE=default`` brings
Hypothesis' own defaults back.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("kgroup", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "kgroup"))
