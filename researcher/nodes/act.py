"""act: carry out what monitor asked — each action recorded as an intervention by the
researcher and as an event with its reason."""

from __future__ import annotations

import time
from pathlib import Path

from langgraph.runtime import Runtime

from experiments_db import crud
from researcher.client_output import failure_cause
from researcher.context import StudyContext
from researcher.launcher import was_started
from researcher.nodes.common import (
    arm_named,
    code_version,
    design_of,
    framing_of,
    log_tail,
    round_experiments,
    update_experiment,
)
from researcher.nodes.launch import describe, found_at, start_client
from researcher.state import StudyState


def _record(ctx: StudyContext, kind: str, experiment: str, payload: dict, reason: str, result: str):
    with ctx.session() as session:
        item = crud.add_intervention(
            session, study_id=ctx.study_id, kind=kind, payload=payload, actor="researcher",
            reason=reason, experiment_id=experiment,
        )  # fmt: skip
        crud.mark_intervention(session, intervention_id=item.id, status="applied", result=result)


def _stop_clients(ctx: StudyContext, experiment: str) -> None:
    with ctx.session() as session:
        processes = crud.client_processes(session, experiment_id=experiment)
    for process in processes:
        if not was_started(process) or process.exit_status is not None:
            continue
        launcher = ctx.launcher_for(process)
        launcher.stop_client(process)
        status = launcher.client_exit_status(process)
        with ctx.session() as session:
            crud.update_client_process(
                session, process_id=process.id, exit_status=status, exited_at=time.time()
            )


def act(state: StudyState, runtime: Runtime[StudyContext]) -> dict:
    ctx = runtime.context
    ctx.tick("act")
    rows = {row.id: row for row in round_experiments(ctx, state)}
    for action in state.get("actions", []):
        row = rows[action["experiment"]]
        kind, reason = action["kind"], action.get("reason", "")
        if kind == "stop_client":
            _stop_clients(ctx, row.id)
        elif kind == "stop_run":
            ctx.gateway.stop_run(row.id)
            _stop_clients(ctx, row.id)
            update_experiment(ctx, row.id, status="stopped", error=reason)
            _record(ctx, "stop_run", row.id, {"run": row.id}, reason, "run stopped")
            ctx.event("act", "action", f"{row.id}: stopped the run", reason=reason)
        elif kind == "lower_lr":
            lr = float(ctx.gateway.get_run(row.id)["settings"]["lr"]) / 2
            ctx.gateway.patch_run(row.id, {"lr": lr})
            at = action.get("step", -1)  # the NaN's step: monitor answers only later ones again
            update_experiment(ctx, row.id,
                              config={**row.config, "lr_lowered": True, "lr_lowered_at": at})  # fmt: skip
            _record(
                ctx, "patch_run", row.id, {"run": row.id, "fields": {"lr": lr}}, reason, "lr halved"
            )
            ctx.event(
                "act", "action", f"{row.id}: lowered the learning rate to {lr:g}", reason=reason
            )
        elif kind == "edit_code":
            _edit_code(ctx, state, row, reason)
        elif kind == "restart_client":
            with ctx.session() as session:
                old = [p for p in crud.client_processes(session, experiment_id=row.id)
                       if p.attempt == row.attempt]  # fmt: skip
            tail = log_tail(old[0].log_path if old else None, 15)
            for process in old:
                status = (
                    ctx.launcher_for(process).client_exit_status(process)
                    if was_started(process)
                    else None
                )
                with ctx.session() as session:
                    crud.update_client_process(session, process_id=process.id, exited_at=time.time(),
                                               exit_status=status)  # fmt: skip
            if row.attempt >= ctx.settings.max_client_restarts:
                ctx.gateway.stop_run(row.id)
                update_experiment(
                    ctx, row.id, status="failed", error=f"client kept dying: {reason}\n{tail}"
                )
                ctx.event("act", "error", f"{row.id}: client died {row.attempt + 1} times; arm run failed",
                          reason=reason, data={"log_tail": tail})  # fmt: skip
                continue
            row = update_experiment(ctx, row.id, attempt=row.attempt + 1)
            process = start_client(ctx, row, row.attempt)
            _record(ctx, "restart_client", row.id,
                    {"attempt": row.attempt, **found_at(process)},
                    reason, f"client restarted as {describe(process)}")  # fmt: skip
            ctx.event("act", "action", f"{row.id}: restarted its client (attempt {row.attempt})",
                      reason=reason, data={"log_tail": tail})  # fmt: skip
    return {"actions": []}


def _edit_code(ctx: StudyContext, state: StudyState, row, reason: str) -> None:
    """Live code iteration: the planner rewrites the workflow from the client's log; the
    client restarts on it under the same name (the gateway supersedes the old one) and the
    run's metrics are kept per code version. Bounded by `max_repairs` per experiment."""
    edits = int(row.config.get("code_edits", 0))
    with ctx.session() as session:
        current = [p for p in crud.client_processes(session, experiment_id=row.id)
                   if p.attempt == row.attempt]  # fmt: skip
    tail = log_tail(current[0].log_path if current else None, 60)
    if cause := failure_cause(tail or ""):
        reason = f"{reason}; {cause}"
    feedback = f"{reason}\n{tail}"
    plan = design_of(state)
    source = None
    if edits < ctx.settings.max_repairs:
        source = ctx.planner.write_workflow(framing_of(state), plan, arm_named(plan, row.arm),
                                            seed=row.seed, feedback=feedback)  # fmt: skip
    if source is None or code_version(source) == row.code_version:
        # nothing to edit (the user's own workflow is never edited, a template writes the
        # same code again) or edits used up: the same code would fail the same way
        ctx.gateway.stop_run(row.id)
        _stop_clients(ctx, row.id)
        update_experiment(ctx, row.id, status="failed", error=f"workflow kept failing: {reason}")
        why = (
            f"still failing after {edits} live edit(s)"
            if source is None
            else "the workflow cannot be edited (the same code would run again)"
        )
        ctx.event("act", "error", f"{row.id}: {why}; run stopped", reason=reason,
                  data={"log_tail": (tail or "")[-2000:]})  # fmt: skip
        return
    path = Path(str(row.workflow_path))
    old_version, new_version = row.code_version, code_version(source)
    path.write_text(source)
    _stop_clients(ctx, row.id)
    row = update_experiment(ctx, row.id, code_version=new_version, attempt=row.attempt + 1,
                            config={**row.config, "code_edits": edits + 1})  # fmt: skip
    process = start_client(ctx, row, row.attempt)
    _record(ctx, "edit_code", row.id,
            {"from": old_version, "to": new_version, **found_at(process)},
            reason, f"client restarted on code {new_version}")  # fmt: skip
    ctx.event("act", "action", f"{row.id}: edited the workflow live, {old_version} → {new_version}"
              "; client restarted", reason=reason, data={"feedback": feedback[-2000:]})  # fmt: skip
