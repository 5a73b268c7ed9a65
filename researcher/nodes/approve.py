"""approve: with `--ask`, wait (a LangGraph interrupt) until a human approves the design
(shown with the reading of the question it was made from)."""

from __future__ import annotations

from langgraph.runtime import Runtime
from langgraph.types import interrupt

from researcher.context import StudyContext
from researcher.nodes.common import round_experiments, update_experiment
from researcher.state import StudyState


def approve(state: StudyState, runtime: Runtime[StudyContext]) -> dict:
    ctx = runtime.context
    if not ctx.settings.ask:
        return {"rejected": False}
    ctx.tick("approve")
    reading = (state.get("framing") or {}).get("reading")
    answer = interrupt(
        {"waiting_for": "approval of the design", "reading": reading, "design": state["design"]}
    )
    verdict = (
        str((answer or {}).get("verdict", "approve")) if isinstance(answer, dict) else str(answer)
    )
    reason = answer.get("reason") if isinstance(answer, dict) else None
    if verdict == "reject":
        for row in round_experiments(ctx, state):
            update_experiment(ctx, row.id, status="rejected", error="design rejected by a human")
        ctx.event("approve", "decision", "design rejected", reason=reason)
        return {"rejected": True, "outcome": "rejected"}
    ctx.event("approve", "decision", "design approved", reason=reason)
    return {"rejected": False}
