"""monitor: one look at everything running — then the graph decides where to go.

Reads human interventions (notes, stop a run, edit a run), each run's state and new metrics
(saved as snapshots), and each client process. Asks `act` for what needs doing: restart a
client that died while its run trains (bounded), halve the learning rate once on a NaN
loss or reward and stop the arm if it happens again, have the planner rewrite the workflow
(fed the client's log) when most episodes since the last edit were aborted — the code is
edited live, the client restarted under its name — stop a run whose step has not moved
for `stall_s`, stop everything when the training share of the budget is spent. Measures
the study folder each pass: over the disk budget, live runs stop checkpointing
periodically (their final checkpoint still comes) and an event says so. While a run is
live its episode counts (finished, aborted) are kept in its experiment's config
(`episodes`), so the report can say how many episodes failed once the gateway is gone;
counts read after the run ended would count the episodes its end cut off.
"""

from __future__ import annotations

import math
import time

from langgraph.runtime import Runtime

from experiments_db import crud
from experiments_db.studies import ExperimentRow
from researcher.context import StudyContext
from researcher.gateway_api import GatewayRefused
from researcher.launcher import was_started
from researcher.nodes.common import LIVE, design_of, round_experiments, update_experiment
from researcher.nodes.launch import describe
from researcher.pilot import training_work
from researcher.plan import Design
from researcher.planner import budget
from researcher.settings import directory_size, format_size
from researcher.state import StudyState

WATCHED = ("loss", "reward/mean")
EDIT_AFTER_ABORTS = 8


def _apply_interventions(ctx: StudyContext, notes: list[str]) -> list[str]:
    with ctx.session() as session:
        pending = crud.interventions(
            session,
            study_id=ctx.study_id,
            status="pending",
            kinds=["note", "stop_run", "patch_run"],
        )
    for item in pending:
        result, status = "applied", "applied"
        try:
            if item.kind == "note":
                text = str(item.payload.get("text", "")).strip()
                notes = [*notes, text]
                ctx.event("monitor", "note", f"human note read: {text}", reason=item.actor)
            elif item.kind == "stop_run":
                ctx.gateway.stop_run(item.payload["run"])
                ctx.event(
                    "monitor", "action", f"stopped run {item.payload['run']}", reason=item.reason
                )
            else:
                ctx.gateway.patch_run(item.payload["run"], item.payload["fields"])
                ctx.event("monitor", "action", f"edited run {item.payload['run']}: {item.payload['fields']}",
                          reason=item.reason)  # fmt: skip
        except (GatewayRefused, KeyError) as error:
            result, status = f"could not apply: {error}", "failed"
        with ctx.session() as session:
            crud.mark_intervention(session, intervention_id=item.id, status=status, result=result)
    return notes


def training_deadline(budget_s: float, plan: Design) -> float:
    """When training must stop (budget used, seconds): before the evaluation and report
    shares of the budget; once a pilot has priced the runs, evaluation included, before
    the reserve the last evaluation and the report need (`budget.reserve_s`)."""
    if plan.pilot is not None and plan.pilot.run_seconds:
        return budget_s - budget.reserve_s(budget_s)
    return budget_s * (1 - plan.budget_split.get("evaluate", 0.15)
                       - plan.budget_split.get("report", 0.05))  # fmt: skip


def _work(row: ExperimentRow) -> int:
    """A run's training work (`pilot.training_work`) from its experiment's settings."""
    arm = (row.config or {}).get("arm") or {}
    return training_work(arm.get("run") or {}, int((row.config or {}).get("steps") or 1))


def monitor(state: StudyState, runtime: Runtime[StudyContext]) -> dict:
    ctx = runtime.context
    used = ctx.tick("monitor")
    plan = design_of(state)
    notes = _apply_interventions(ctx, list(state.get("notes", [])))
    progress = dict(state.get("progress", {}))
    health = {k: list(v) for k, v in state.get("health", {}).items()}
    actions: list[dict] = []
    train_deadline = training_deadline(ctx.study().budget_s, plan)
    over_budget = used >= train_deadline
    # each run, when first seen, gets its share of the training time left for the runs not
    # yet done, in proportion to its training work (a 40-step arm of a steps study gets four
    # times a 10-step one's), so a slow first run cannot starve the last ones (runs go one
    # after another on a small box) and a longer arm is not cut to the shorter one's length
    rows = round_experiments(ctx, state)
    disk_used = directory_size(ctx.directory)
    over_disk = disk_used > ctx.settings.disk_budget_bytes
    waiting = [r for r in rows if r.status in ("validated", *LIVE)]
    parallel = min(ctx.settings.parallel_runs, max(1, len(waiting)))
    work_left = sum(_work(r) for r in waiting) or 1
    time_left = train_deadline - used

    def fresh_share_s(row: ExperimentRow) -> float:
        if len(waiting) <= parallel:  # each run has a slot of its own: all the time left
            return max(60.0, time_left)
        # the slots' time shared by work, no run given more than the time left
        return max(60.0, min(time_left, time_left * parallel * _work(row) / work_left))

    moved = False
    for row in rows:
        if row.status in ("planned", "validated") and over_budget:
            update_experiment(ctx, row.id, status="stopped", error="not started: budget spent")
            continue
        if row.status not in LIVE:
            continue
        run = ctx.gateway.get_run(row.id)
        episodes = {"finished": run.get("episodes_finished", 0),
                    "aborted": run.get("episodes_aborted", 0)}  # fmt: skip
        if run["status"] in LIVE_RUN and row.config.get("episodes") != episodes:
            row = update_experiment(ctx, row.id, config={**row.config, "episodes": episodes})
        # the last step again (repeats are skipped); from step 0 on, where a run that has not
        # trained yet records its dropped batches
        since = int(progress.get(row.id, [0, 0])[0]) - 1
        points = ctx.gateway.metrics(row.id, since=since)
        with ctx.session() as session:
            crud.add_metric_snapshots(
                session, experiment_id=row.id,
                points=[(p["step"], p["name"], p["value"]) for p in points if _finite(p["value"])],
            )  # fmt: skip
        # a NaN already answered by halving the lr is read again (the look back above): skip it
        acted_at = row.config.get("lr_lowered_at", -1)
        bad = [p for p in points if p["name"] in WATCHED and not _finite(p["value"])
               and p["step"] > acted_at]  # fmt: skip
        now = time.time()
        last_step, last_move, started, run_share_s = progress.get(
            row.id, [0, now, now, fresh_share_s(row)]
        )
        if over_disk and run["status"] in LIVE_RUN and run["settings"].get("checkpoint_every"):
            _stop_periodic_checkpoints(ctx, row.id, disk_used)
        if run["step"] != last_step:
            progress[row.id] = [run["step"], now, started, run_share_s]
            moved = True
        elif row.id not in progress:
            progress[row.id] = [last_step, last_move, started, run_share_s]
        if run["status"] in ("finished", "stopped", "failed"):
            status = "finished" if run["status"] == "finished" else run["status"]
            update_experiment(ctx, row.id, status=status, error=run.get("error"))
            actions.append({"kind": "stop_client", "experiment": row.id})
            ctx.event("monitor", "result", f"{row.id}: run {run['status']} at step {run['step']}",
                      reason=run.get("error"))  # fmt: skip
            continue
        if over_budget:
            actions.append(
                {"kind": "stop_run", "experiment": row.id, "reason": "training budget spent"}
            )
        elif now - started > run_share_s:
            actions.append(
                {
                    "kind": "stop_run",
                    "experiment": row.id,
                    "reason": f"its share of the training budget ({run_share_s:.0f} s) is spent",
                }
            )
        elif bad:
            kind = "stop_run" if row.config.get("lr_lowered") else "lower_lr"
            actions.append(
                {
                    "kind": kind,
                    "experiment": row.id,
                    "step": bad[-1]["step"],
                    "reason": f"{bad[0]['name']} is {bad[0]['value']} at step {bad[0]['step']}",
                }
            )
        elif time.time() - progress[row.id][1] > ctx.settings.stall_s:
            actions.append(
                {
                    "kind": "stop_run",
                    "experiment": row.id,
                    "reason": f"no training step for {ctx.settings.stall_s:g} s",
                }
            )
        elif _failing(run, health.setdefault(row.id, [0, 0])):
            finished, aborted = run.get("episodes_finished", 0), run.get("episodes_aborted", 0)
            health[row.id] = [finished, aborted]  # the next edit is judged on what follows
            actions.append({"kind": "edit_code", "experiment": row.id,
                            "reason": f"{aborted} episodes aborted, {finished} finished: "
                                      "the rollout keeps failing"})  # fmt: skip
        else:
            with ctx.session() as session:
                processes = crud.client_processes(session, experiment_id=row.id)
            current = [p for p in processes if p.attempt == row.attempt]
            for process in current:
                if not was_started(process):
                    continue
                status = ctx.launcher_for(process).client_exit_status(process)
                if status is not None:
                    actions.append(
                        {
                            "kind": "restart_client",
                            "experiment": row.id,
                            "reason": f"client {describe(process)} exited with {status}",
                        }
                    )
    if not actions and not moved:
        time.sleep(ctx.poll_s)
    return {"actions": actions, "progress": progress, "notes": notes, "health": health}


LIVE_RUN = ("running", "paused")


def _stop_periodic_checkpoints(ctx: StudyContext, run: str, used: int) -> None:
    budget = ctx.settings.disk_budget_bytes
    try:
        ctx.gateway.patch_run(run, {"checkpoint_every": None})
    except GatewayRefused as error:
        ctx.event("monitor", "problem", f"{run}: could not turn periodic checkpoints off: {error}")
        return
    ctx.event("monitor", "action", f"{run}: periodic checkpoints off (the final one still comes)",
              reason=f"the study folder holds {format_size(used)}, over its disk budget of "
                     f"{format_size(budget)}")  # fmt: skip


def _failing(run: dict, baseline: list[int]) -> bool:
    """Since the baseline (the counts at the last code edit), most episodes were aborted —
    at least EDIT_AFTER_ABORTS of them: the workflow's code, not luck, is failing."""
    aborted = run.get("episodes_aborted", 0) - baseline[1]
    finished = run.get("episodes_finished", 0) - baseline[0]
    return aborted >= EDIT_AFTER_ABORTS and aborted > finished


def _finite(value) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)
