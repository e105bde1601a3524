"""The kgroup pytest plugin's handling of ``tansu_deviation`` tests on Tansu (docs/testing.md).

A ``[tansu]`` variant whose twin on another broker kind runs is deselected by default and
counted in the summary; ``--tansu-deviations`` runs it as a strict xfail; a deviation without a
twin stays a strict xfail. The inner runs only use the ``broker_kind`` parameter: no broker starts.
"""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

SUITE = """
import pytest

pytestmark = pytest.mark.broker_kinds("tansu", "apache-kafka")


@pytest.mark.tansu_deviation("Tansu answers differently")
def test_deviates(broker_kind):
    assert broker_kind != "tansu"


@pytest.mark.parametrize("where", ["proxy", pytest.param("bare", marks=pytest.mark.tansu_deviation("bare differs"))])
def test_where(broker_kind, where):
    assert broker_kind != "tansu" or where == "proxy"


@pytest.mark.broker_kinds("tansu")
@pytest.mark.tansu_deviation("no twin")
def test_tansu_only(broker_kind):
    assert broker_kind != "tansu"
"""


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.delenv("KGROUP_BOOTSTRAP_SERVERS", raising=False)
    monkeypatch.setenv("KGROUP_BROKER", "tansu")  # the selected kind, without asking Docker
    pytester.makepyfile(test_suite=SUITE)
    return pytester


def test_variants_with_a_twin_are_deselected_on_tansu_and_counted(suite: pytest.Pytester) -> None:
    result = suite.runpytest("-p", "kgroup", "-rA")
    result.assert_outcomes(passed=4, xfailed=1, deselected=2)
    for line in [
        "PASSED test_suite.py::test_deviates?apache-kafka?",
        "PASSED test_suite.py::test_where?apache-kafka-bare?",
        "PASSED test_suite.py::test_where?tansu-proxy?",
        "XFAIL test_suite.py::test_tansu_only?tansu? - Tansu deviates: no twin",
        "2 tansu_deviation variants not run on Tansu: their [[]apache-kafka[]] twins run "
        "(--tansu-deviations runs them as strict xfails)",
    ]:
        result.stdout.fnmatch_lines([line])
    assert "test_deviates[tansu]" not in result.stdout.str()
    assert "test_where[tansu-bare]" not in result.stdout.str()


def test_opted_in_they_run_as_strict_xfails(suite: pytest.Pytester) -> None:
    result = suite.runpytest("-p", "kgroup", "-rA", "--tansu-deviations")
    result.assert_outcomes(passed=4, xfailed=3)
    result.stdout.fnmatch_lines(["*XFAIL test_suite.py::test_deviates?tansu?*Tansu deviates*"])
    result.stdout.no_fnmatch_line("*not run on Tansu*")


def test_a_tansu_variant_named_alone_runs_as_a_strict_xfail(suite: pytest.Pytester) -> None:
    result = suite.runpytest("-p", "kgroup", "-rA", "test_suite.py::test_deviates[tansu]")
    result.assert_outcomes(xfailed=1)
    result.stdout.no_fnmatch_line("*not run on Tansu*")


def test_one_deselected_variant_is_counted_in_the_singular(suite: pytest.Pytester) -> None:
    result = suite.runpytest("-p", "kgroup", "-k", "test_deviates")
    result.assert_outcomes(passed=1, deselected=6)
    result.stdout.fnmatch_lines([
        "1 tansu_deviation variant not run on Tansu: its [[]apache-kafka[]] twin runs "
        "(--tansu-deviations runs it as a strict xfail)",
    ])


def test_a_tansu_that_stops_deviating_fails_when_opted_in(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_fixed="""
        import pytest

        @pytest.mark.broker_kinds("tansu", "apache-kafka")
        @pytest.mark.tansu_deviation("fixed since")
        def test_fixed(broker_kind):
            pass
    """)
    result = suite.runpytest("-p", "kgroup", "--tansu-deviations", "test_fixed.py")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*XPASS(strict)*fixed since*"])
