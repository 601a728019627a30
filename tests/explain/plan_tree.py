"""Walking explain plans."""

from __future__ import annotations

from typing import Any


def stages(plan: dict[str, Any]) -> list[str]:
    """The stage names from a plan's root down its single-input chain."""
    out = []
    node: dict[str, Any] | None = plan
    while node:
        out.append(node["stage"])
        node = node.get("inputStage")
    return out


def stage_of(plan: dict[str, Any], name: str) -> dict[str, Any]:
    node: dict[str, Any] | None = plan
    while node:
        if node["stage"] == name:
            return node
        node = node.get("inputStage")
    raise AssertionError(f"no {name} stage in {plan}")
