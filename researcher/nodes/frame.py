"""frame: read the question (factor, levels, task, outcome, direction) on a model the gateway
serves — on the user's own workflow when the study has one."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from langgraph.runtime import Runtime

from researcher.context import StudyContext
from researcher.plan import Reading
from researcher.planner.wording import reading_rows
from researcher.state import StudyState

if TYPE_CHECKING:
    from researcher.user_workflow import UserWorkflow


def frame(state: StudyState, runtime: Runtime[StudyContext]) -> dict:
    ctx = runtime.context
    ctx.tick("frame")
    served = ctx.gateway.served_models()
    extra = workflow_frame_args(getattr(ctx.settings, "workflow", None))
    framing = ctx.planner.frame(
        ctx.settings.question, served_models=served, model=ctx.settings.model, **extra
    )
    ctx.tick(model=framing.model)
    reading = framing.reading
    ctx.event(
        "frame",
        "decision",
        framing.summary,
        reason=f"planner {framing.planner}"
        + (f"; reading: {reading_line(reading)}" if reading else ""),
        data={"reading": reading.model_dump(mode="json")} if reading else None,
    )
    if framing.substitution:
        ctx.event("frame", "problem", framing.substitution, reason="model substitution")
    return {"framing": framing.model_dump(), "round": 1, "notes": state.get("notes", [])}


def workflow_frame_args(workflow: str | Path | None) -> dict[str, Any]:
    """What `planner.frame` needs to read a question about the user's own workflow file:
    its absolute path, its PARAMS, whether it has a test split and how many tasks it holds."""
    if not workflow:
        return {}
    from researcher.user_workflow import inspect_workflow

    return frame_args_of(inspect_workflow(str(workflow)))


def frame_args_of(found: UserWorkflow) -> dict[str, Any]:
    """`workflow_frame_args` of a workflow already inspected (one import probe, not two)."""
    return {"workflow": str(found.path.resolve()), "workflow_params": found.params,
            "workflow_has_test": found.has_test, "workflow_test_size": found.test_size}  # fmt: skip


def reading_line(reading: Reading) -> str:
    return "; ".join(f"{name} {value}" for name, value in reading_rows(reading))
