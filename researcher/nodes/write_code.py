"""write_code: one workflow file per experiment, written by the planner into the study's
folder (`workflows/<experiment>/workflow.py`); a failed dry-run's traceback is fed back. For
the user's own workflow that file is a wrapper importing it, and a copy of the user's file
goes beside it (`user/`): what a launcher that ships the folder to other machines runs."""

from __future__ import annotations

import shutil
from pathlib import Path

from langgraph.runtime import Runtime

from researcher.context import StudyContext
from researcher.nodes.common import (
    arm_named,
    code_version,
    design_of,
    framing_of,
    round_experiments,
    update_experiment,
)
from researcher.state import StudyState


def write_code(state: StudyState, runtime: Runtime[StudyContext]) -> dict:
    ctx = runtime.context
    ctx.tick("write_code")
    framing, plan = framing_of(state), design_of(state)
    if framing.workflow and ctx.settings.workflow:  # `resume --workflow`: the file moved
        framing = framing.model_copy(update={"workflow": ctx.settings.workflow})
    feedback = state.get("feedback", {})
    validated = set(state.get("validated", []))
    for row in round_experiments(ctx, state):
        if row.status != "planned" or row.arm in validated:
            continue
        if row.workflow_path and row.arm not in feedback:
            continue  # written before a crash, nothing to repair
        source = ctx.planner.write_workflow(
            framing, plan, arm_named(plan, row.arm), seed=row.seed, feedback=feedback.get(row.arm)
        )
        path = ctx.directory / "workflows" / row.id / "workflow.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
        if framing.workflow:  # the wrapper's fallback where the user's file is not (Ray jobs)
            copy = path.parent / "user" / Path(framing.workflow).name
            copy.parent.mkdir(exist_ok=True)
            shutil.copyfile(framing.workflow, copy)
        update_experiment(ctx, row.id, workflow_path=str(path), code_version=code_version(source))
        verb = "rewrote" if row.arm in feedback else "wrote"
        ctx.event("write_code", "action", f"{verb} {path.relative_to(ctx.directory)}")
    return {"feedback": {}}
