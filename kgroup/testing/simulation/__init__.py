"""A deterministic simulator of whole consumer groups: kgroup's real client against Kafka's coordinator model.

Each simulated member is a production :class:`kgroup.Consumer` (its membership machine, its
group thread's loop body, its poll loop, listener steps, commits and close) with three ports
swapped: the network (:class:`~kgroup.testing.simulation._transport.SimTransport`, to
:class:`~kgroup.testing.coordinator.GroupCoordinatorModel` over simulated connections), the
record fetcher (in-memory partition logs) and the runtime (a mailbox that blocks on a
deterministic scheduler, and the group thread's ``step`` pumped by it instead of an OS thread).
Time is virtual and every choice comes from the seed, so a run replays exactly.

To test your own listener and commit logic against a simulated group, use
:class:`SimulatedGroup` (``examples/simulated_group.py``). To check kgroup itself, use
``run_seed(seed)`` for one run, ``campaign(seeds)`` for many, or the command line::

    python -m kgroup.testing.simulation --seeds 2000          # a campaign
    python -m kgroup.testing.simulation --seed 1234 --trace   # replay one seed with its trace
    python -m kgroup.testing.simulation --parallel --seeds 200   # groups of kgroup.ParallelProcessor

The design, the faults, the invariants and how to test your own listener and commit logic
against a simulated group are in ``docs/simulation.md``.
"""

from kgroup.testing.simulation._campaign import CampaignResult, campaign, replay_command
from kgroup.testing.simulation._group import App, AsyncApp, SimulatedGroup
from kgroup.testing.simulation._invariants import Checker, Violation
from kgroup.testing.simulation._parallel import (
    ParallelScenario,
    ParallelSimulation,
    parallel_scenario_for,
    run_parallel_seed,
)
from kgroup.testing.simulation._run import (
    MemberSpec,
    RunResult,
    Scenario,
    Simulation,
    liveness_bound_s,
    run_scenario,
    run_seed,
    scenario_for,
)

__all__ = [
    "App",
    "AsyncApp",
    "CampaignResult",
    "Checker",
    "MemberSpec",
    "ParallelScenario",
    "ParallelSimulation",
    "RunResult",
    "Scenario",
    "SimulatedGroup",
    "Simulation",
    "Violation",
    "campaign",
    "liveness_bound_s",
    "parallel_scenario_for",
    "replay_command",
    "run_parallel_seed",
    "run_scenario",
    "run_seed",
    "scenario_for",
]
