"""validate: dry-run each arm's workflow for a few episodes against the gateway.

One `swarm run --max-episodes 4 --group-size 1` per arm (four different tasks), on a scratch
run (`<experiment>-check`, stopped afterwards, never trained), under a wall-clock limit and
`--episode-timeout`, contained like a launched client (allow-listed environment with the
run's client key, resource limits, its own folder; its whole process group ends with it).
A workflow passes when `swarm run` exits cleanly and at least half the episodes finish —
one that fails on some tasks only is said (what it raised, on how many) and trains on the
rest, as a run drops any episode that fails; more failing than finishing is what `monitor`
stops a run for. Otherwise its output (the traceback `swarm run`
prints) goes back to write_code, at most `max_repairs` times per arm, after which the arm
fails; every message leads with what the rollout raised. A user's own workflow is never
edited, so it gets no repair: its arm fails at once, saying why.

The dry runs are bounded by the budget as well as by `validate_timeout_s`: each gets at
most its share of the budget left, less the reserve the last evaluation and the report
keep (`budget.reserve_s`), over the arms still to check — but never less than `MIN_DRY_RUN_S`: a small or mostly
spent budget still checks each arm (what is left is then stopped by the monitor, "not
started: budget spent", and reported), it only stops waiting for a rollout that hangs.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

from langgraph.runtime import Runtime

from experiments_db import crud
from researcher.client_output import failure_cause
from researcher.context import StudyContext, client_limits
from researcher.gateway_api import GatewayRefused
from researcher.launcher.local import client_env, run_contained
from researcher.nodes.common import (
    design_of,
    framing_of,
    round_experiments,
    update_experiment,
)
from researcher.nodes.launch import run_body
from researcher.planner import budget
from researcher.state import StudyState

DRY_RUN_EPISODES = 4  # each on its own task (groups of 1)
# the least a dry run is given, whatever the budget left: `swarm run` starting, importing
# the workflow and four episodes of the bundled model take a few seconds each on a laptop's
# CPU, and several times that on a loaded two-core box
MIN_DRY_RUN_S = 60.0


def dry_run(
    ctx: StudyContext,
    workflow: str,
    run: str,
    run_settings: dict,
    notes: list[str] | None = None,
    *,
    timeout_s: float | None = None,
) -> str | None:
    """None when the workflow ran cleanly and at least one episode finished, else what went
    wrong (its first line the cause). Episodes that failed beside finished ones are said in
    `notes`. It may take `timeout_s` (the arm's share of the budget, `dry_run_share_s`),
    at most `validate_timeout_s`."""
    limit_s = ctx.settings.validate_timeout_s
    timeout_s = limit_s if timeout_s is None else min(timeout_s, limit_s)
    body = {**run_settings, "name": run, "group_size": 1, "batch_groups": 4096}
    body.pop("task_mix", None)
    body.pop("max_steps", None)
    ctx.gateway.create_run(body)
    command = [
        sys.executable, "-m", "swarm.cli", "run", workflow,
        "--gateway", ctx.gateway.url, "--run", run,
        "--max-episodes", str(DRY_RUN_EPISODES), "--group-size", "1",
        "--episode-timeout", f"{ctx.settings.episode_timeout_s:g}",
        "--name", f"{run}-client",
    ]  # fmt: skip
    try:
        key = ctx.gateway.client_key(run)
        home = ctx.directory / "clients" / run  # as StudyContext.client_dir
        home.mkdir(parents=True, exist_ok=True)
        env = client_env({"SWARMRL_API_KEY": key} if key else {}, home=home,
                         allow=ctx.settings.client_env_allow)  # fmt: skip
        returncode, output = run_contained(
            command, cwd=home, env=env, timeout_s=timeout_s, limits=client_limits(ctx.settings),
        )  # fmt: skip
    finally:
        ctx.gateway.stop_run(run)
    if returncode is None:
        if timeout_s < limit_s:
            return (
                f"the dry run did not end within {timeout_s:g} s (the share of the budget left "
                f"for this arm's dry run; validate_timeout_s is {limit_s:g}): does rollout() "
                "ever return, or block the event loop? A larger --budget gives each dry run "
                f"longer\n{output[-3000:]}"
            )
        return (
            f"the dry run did not end within {timeout_s:g} s "
            f"(does rollout() ever return, or block the event loop?)\n{output[-3000:]}"
        )
    output = output[-4000:]
    run_state = ctx.gateway.get_run(run)
    finished, aborted = run_state["episodes_finished"], run_state["episodes_aborted"]
    cause = failure_cause(output)
    if returncode != 0 or finished == 0 or aborted > finished:
        # more failed than finished: a run would be stopped for it (monitor's rule)
        lead = f"{cause}; " if cause else ""
        return (
            f"{lead}swarm run exited {returncode}; {finished} episode(s) finished, "
            f"{aborted} aborted\n{output}"
        )
    if aborted and notes is not None:
        notes.append(
            f"{aborted} of {finished + aborted} dry-run episodes failed"
            + (f": {cause}" if cause else "")
            + "; the study goes on, and a run trains only on the episodes that finish"
        )
    return None


def dry_run_share_s(ctx: StudyContext, arms_left: int) -> float:
    """The seconds the next of `arms_left` dry runs may take: the budget left, less the
    reserve, shared over them (whole seconds), at least `MIN_DRY_RUN_S`."""
    left = max(0.0, ctx.budget_left() - budget.reserve_s(ctx.study().budget_s))
    return max(MIN_DRY_RUN_S, math.floor(left / max(1, arms_left)))


def validate(state: StudyState, runtime: Runtime[StudyContext]) -> dict:
    ctx = runtime.context
    ctx.tick("validate")
    plan = design_of(state)
    validated = list(state.get("validated", []))
    feedback: dict[str, str] = {}
    repairs = dict(state.get("repairs", {}))
    rows = round_experiments(ctx, state)
    to_check = [
        (arm, arm_rows)
        for arm in plan.arms
        if arm.name not in validated
        and (arm_rows := [r for r in rows if r.arm == arm.name and r.status == "planned"])
    ]
    for index, (arm, arm_rows) in enumerate(to_check):
        ctx.tick()  # the budget left, the dry runs before this one spent
        share_s = dry_run_share_s(ctx, len(to_check) - index)
        first = arm_rows[0]
        attempt = repairs.get(arm.name, 0)
        run = f"{first.id[:50]}-check{attempt}"
        settings = {k: v for k, v in run_body(state, first).items() if k != "checkpoint_every"}
        started = time.monotonic()
        notes: list[str] = []
        try:
            problem = dry_run(ctx, str(first.workflow_path), run, settings, notes,
                              timeout_s=share_s)  # fmt: skip
        except GatewayRefused as error:
            problem = f"the gateway refused the arm's run settings: {error}"
        if problem is None:
            validated.append(arm.name)
            for row in arm_rows:
                update_experiment(ctx, row.id, status="validated")
            ctx.event(
                "validate", "result",
                f"{arm.name}: dry run passed in {time.monotonic() - started:.0f} s",
            )  # fmt: skip
            for note in notes:
                ctx.event("validate", "problem", f"{arm.name}: {note}")
            continue
        repairs[arm.name] = attempt + 1
        summary = problem.strip().splitlines()[0] if problem.strip() else "no output"
        # the user's own workflow is never edited: run again as it is, it fails again
        users = framing_of(state).workflow
        if attempt < ctx.settings.max_repairs and not users:
            feedback[arm.name] = problem
            ctx.event("validate", "problem", f"{arm.name}: dry run failed; repairing", reason=summary,
                      data={"output": problem})  # fmt: skip
        else:
            # the cause (the first line) kept ahead of the output's tail
            error = problem if len(problem) <= 2000 else f"{summary}\n…\n{problem[-1800:]}"
            for row in arm_rows:
                update_experiment(ctx, row.id, status="failed", error=error)
            why = (
                f"your workflow's dry run failed ({Path(users).name} is not edited: fix it and "
                "start again)"
                if users
                else f"still failing after {attempt} repair(s)"
            )
            ctx.event("validate", "error", f"{arm.name}: {why}; arm dropped",
                      reason=summary, data={"output": problem})  # fmt: skip
    update = {"validated": validated, "feedback": feedback, "repairs": repairs}
    if not validated and not feedback:
        update["outcome"] = "no valid workflow"
    return update


def dry_run_failures(ctx: StudyContext) -> str:
    """ "no arm's workflow passed its dry run", with what each arm's dry run raised."""
    with ctx.session() as session:
        rows = crud.experiments(session, study_id=ctx.study_id)
    causes = list(
        dict.fromkeys(
            f"{row.arm}: {row.error.strip().splitlines()[0]}"
            for row in rows
            if row.status == "failed" and row.error and row.error.strip()
        )
    )
    return "no arm's workflow passed its dry run" + (
        f" ({'; '.join(causes[:3])})" if causes else ""
    )
