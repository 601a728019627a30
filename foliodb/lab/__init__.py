"""The lab: the schema-design texts' competing designs, built side by side in a
scratch embedded database at a size you choose, the same workload run against
each, and what each costs, measured on this machine.

``foliodb lab [SCENARIO ...] [--size S] [--html FILE]`` from the command line;
:func:`run` from Python.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from foliodb.lab.measure import ScenarioResult, run_scenario
from foliodb.lab.scenario import Scenario
from foliodb.lab.scenarios import blog, categories, iot, orders, parts, timelines

SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        blog.SCENARIO,
        iot.SCENARIO,
        timelines.SCENARIO,
        parts.SCENARIO,
        categories.SCENARIO,
        orders.SCENARIO,
    )
}
DEFAULT_SIZE = 1000

__all__ = ["DEFAULT_SIZE", "SCENARIOS", "ScenarioResult", "run"]


def run(
    names: Sequence[str] = (),
    *,
    size: int = DEFAULT_SIZE,
    calls: int = 20,
    seed: int = 1,
    path: str = ":memory:",
    progress: Callable[[str], Any] | None = None,
) -> list[ScenarioResult]:
    """Run the named scenarios (all when none) in a scratch database at ``path``."""
    import foliodb

    unknown = [name for name in names if name not in SCENARIOS]
    if unknown:
        raise KeyError(f"unknown scenario(s) {', '.join(unknown)}; choose from {', '.join(SCENARIOS)}")
    results = []
    with foliodb.MongoClient(path) as client:
        for name in names or list(SCENARIOS):
            if progress is not None:
                progress(f"{name}: building {len(SCENARIOS[name].designs)} designs at size {size}")
            results.append(run_scenario(client, SCENARIOS[name], size, calls=calls, seed=seed))
    return results
