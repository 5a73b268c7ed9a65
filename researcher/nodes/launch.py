"""launch: create the gateway runs and start their `swarm run` clients, a few at a time.

Idempotent after a crash: the run's name is the experiment id (creating it again returns
the existing run), and each client process is recorded under (experiment, attempt) before
it starts — a resumed researcher adopts a recorded client that is still alive instead of
starting a second one (a Ray job is also found by its submission id, named after the
experiment and attempt, so one submitted just before a crash is adopted too).
"""

from __future__ import annotations

import sys
from pathlib import Path

from langgraph.runtime import Runtime

from experiments_db import crud
from experiments_db.studies import ClientProcessRow, ExperimentRow
from researcher.context import StudyContext
from researcher.launcher import ClientRecord, was_started
from researcher.nodes.common import (
    LIVE,
    arm_named,
    design_of,
    framing_of,
    round_experiments,
    update_experiment,
)
from researcher.state import StudyState

# a periodic (resumable) checkpoint of a full-parameter SmolLM2-135M run is 1.6 GB while it is
# written (float32 weights + AdamW moments); below this disk budget runs checkpoint only at
# the end (an export: 0.27 GB of bf16 weights), so a gateway restart starts them over
PERIODIC_CHECKPOINT_MIN_DISK = 8 * 10**9
MAX_DROPPED_BATCHES = 20


def run_body(state: StudyState, row: ExperimentRow, disk_budget: int | None = None) -> dict:
    plan, framing = design_of(state), framing_of(state)
    arm = arm_named(plan, row.arm)
    # an arm may train its own number of steps (a study of max_steps); else the design's
    steps = arm.run.get("max_steps") or plan.steps
    body = {**arm.run, "name": row.id, "seed": row.seed, "max_steps": steps}
    policy = {"base_model": body.pop("base_model", None) or framing.model}
    if body.get("lora") is not None:
        policy["lora"] = body.pop("lora")
    body.pop("lora", None)
    body["policies"] = {"policy": policy}
    if len(arm.tasks) > 1:
        body.setdefault("task_mix", dict(arm.tasks))
    if disk_budget is None or disk_budget >= PERIODIC_CHECKPOINT_MIN_DISK:
        body.setdefault("checkpoint_every", max(1, steps // 4))  # a restart loses little
    body.setdefault("keep_checkpoints", 1)  # the newest (+ the best): the study's disk budget
    # a run whose batches keep training nothing (every group's rewards equal) is not learning:
    # it stops itself and says so, rather than spend its share of the budget
    body.setdefault("max_dropped_batches", MAX_DROPPED_BATCHES)
    return body


def client_command(ctx: StudyContext, row: ExperimentRow) -> list[str]:
    """This interpreter and the workflow where it lies — or, for a launcher whose clients
    run on other machines, `swarm` from their PATH and the workflow in the folder that
    travels with them (its working directory)."""
    if ctx.launcher.ships_files:
        program, workflow = ["swarm"], Path(str(row.workflow_path)).name
    else:
        program, workflow = [sys.executable, "-m", "swarm.cli"], str(row.workflow_path)
    return [
        *program, "run", workflow,
        "--gateway", ctx.gateway.url, "--run", row.id,
        "--name", f"{row.id}-client",  # the same name after a restart: supersedes the old one
        "--concurrency", str(ctx.settings.client_concurrency),
        "--episode-timeout", f"{ctx.settings.episode_timeout_s:g}",
    ]  # fmt: skip


def start_client(ctx: StudyContext, row: ExperimentRow, attempt: int) -> ClientProcessRow:
    """Start the client of `row`'s attempt unless it was recorded and is still alive."""
    command = client_command(ctx, row)
    log_path = ctx.directory / "logs" / f"{row.id}-a{attempt}.log"
    with ctx.session() as session:
        process, created = crud.record_client_process(
            session,
            process=ClientProcessRow(
                experiment_id=row.id, attempt=attempt, launcher=ctx.launcher.name,
                host="", command=command, code_version=row.code_version,
                log_path=str(log_path), started_at=0.0,
            ),
        )  # fmt: skip
    launcher = ctx.launcher_for(process)
    if not created and was_started(process) and launcher.client_alive(process):
        ctx.event(
            "launch", "action", f"{row.id}: adopted client {describe(process)} (attempt {attempt})"
        )
        return process
    key = ctx.gateway.client_key(row.id)  # controls no run: never the admin key
    env = {"SWARMRL_API_KEY": key} if key else {}
    info = launcher.start(command, log_path=log_path, cwd=ctx.client_dir(log_path.stem), env=env,
                          name=log_path.stem, files=Path(str(row.workflow_path)).parent)  # fmt: skip
    with ctx.session() as session:
        process = crud.update_client_process(
            session, process_id=process.id, pid=info.pid, job_id=info.job_id, host=info.host,
            started_at=info.started_at, exited_at=None, exit_status=None,
        )  # fmt: skip
    return process


def describe(process: ClientRecord) -> str:
    """'pid 123' or 'Ray job swarmrl-…', for events."""
    return f"Ray job {process.job_id}" if process.job_id else f"pid {process.pid}"


def found_at(process: ClientRecord) -> dict:
    """{"pid": 123} or {"job": "swarmrl-…"}, for interventions' payloads."""
    return {"job": process.job_id} if process.job_id else {"pid": process.pid}


def launch(state: StudyState, runtime: Runtime[StudyContext]) -> dict:
    ctx = runtime.context
    ctx.tick("launch")
    rows = round_experiments(ctx, state)
    live = sum(1 for r in rows if r.status in LIVE)
    # seed by seed, control first: a study cut short still has every arm on its first seeds
    for row in sorted(rows, key=lambda r: (r.seed, r.role != "control", r.arm)):
        if row.status == "validated":  # a new run, when a slot is free
            if live >= ctx.settings.parallel_runs:
                continue
            live += 1
        elif row.status != "launching":  # launching: cut short by a crash (counted live above)
            continue
        update_experiment(ctx, row.id, status="launching", run_name=row.id)
        run = ctx.gateway.create_run(run_body(state, row, ctx.settings.disk_budget_bytes))
        process = start_client(ctx, row, row.attempt)
        update_experiment(ctx, row.id, status="running")
        ctx.event(
            "launch", "action",
            f"{row.id}: run at step {run['step']}, client {describe(process)}",
            data={"run": run["name"], "log": process.log_path, **found_at(process)},
        )  # fmt: skip
    return {}
