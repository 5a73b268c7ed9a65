"""frame: restate the question as an experiment family, on a model the gateway serves."""

from __future__ import annotations

from langgraph.runtime import Runtime

from researcher.context import StudyContext
from researcher.state import StudyState


def frame(state: StudyState, runtime: Runtime[StudyContext]) -> dict:
    ctx = runtime.context
    ctx.tick("frame")
    served = ctx.gateway.served_models()
    framing = ctx.planner.frame(
        ctx.settings.question, served_models=served, model=ctx.settings.model
    )
    ctx.tick(model=framing.model)
    ctx.event("frame", "decision", framing.summary, reason=f"planner {framing.planner}")
    if framing.substitution:
        ctx.event("frame", "problem", framing.substitution, reason="model substitution")
    return {"framing": framing.model_dump(), "round": 1, "notes": state.get("notes", [])}
