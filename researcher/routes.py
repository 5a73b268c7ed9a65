"""Where the study graph goes after a branching node: pure functions of state + database."""

from __future__ import annotations

from langgraph.runtime import get_runtime

from researcher.context import StudyContext
from researcher.nodes.common import LIVE, round_experiments
from researcher.state import StudyState


def _rows(state: StudyState):
    ctx: StudyContext = get_runtime(StudyContext).context
    return round_experiments(ctx, state)


def after_approve(state: StudyState) -> str:
    return "report" if state.get("rejected") else "write_code"


def after_validate(state: StudyState) -> str:
    if state.get("feedback"):
        return "write_code"
    if any(row.status == "validated" for row in _rows(state)):
        return "launch"
    return "report"  # every arm failed its dry run (the report says why)


def after_monitor(state: StudyState) -> str:
    if state.get("actions"):
        return "act"
    rows = _rows(state)
    ctx: StudyContext = get_runtime(StudyContext).context
    live = sum(1 for row in rows if row.status in LIVE)
    if any(row.status == "validated" for row in rows) and live < ctx.settings.parallel_runs:
        return "launch"
    if live:
        return "monitor"
    return "evaluate"


def after_decide(state: StudyState) -> str:
    decision = state.get("decision") or {}
    return "design" if decision.get("action") == "refine" else "report"
