"""validate: dry-run each arm's workflow for a few episodes against the gateway.

One `swarm run --max-episodes 2` per arm, on a scratch run (`<experiment>-check`, stopped
afterwards, never trained), under a wall-clock limit and `--episode-timeout`, contained like
a launched client (allow-listed environment with the run's client key, resource limits, its
own folder; its whole process group ends with it). A workflow
passes when both episodes finish; otherwise its output (the traceback `swarm run` prints)
goes back to write_code, at most `max_repairs` times per arm, after which the arm fails.
"""

from __future__ import annotations

import sys
import time

from langgraph.runtime import Runtime

from researcher.context import StudyContext, client_limits
from researcher.gateway_api import GatewayRefused
from researcher.launcher.local import client_env, run_contained
from researcher.nodes.common import (
    design_of,
    round_experiments,
    update_experiment,
)
from researcher.nodes.launch import run_body
from researcher.state import StudyState

DRY_RUN_EPISODES = 2


def dry_run(ctx: StudyContext, workflow: str, run: str, run_settings: dict) -> str | None:
    """None when the workflow ran its episodes cleanly, else what went wrong."""
    body = {**run_settings, "name": run, "group_size": DRY_RUN_EPISODES, "batch_groups": 4096}
    body.pop("task_mix", None)
    body.pop("max_steps", None)
    ctx.gateway.create_run(body)
    command = [
        sys.executable, "-m", "swarm.cli", "run", workflow,
        "--gateway", ctx.gateway.url, "--run", run,
        "--max-episodes", str(DRY_RUN_EPISODES), "--group-size", str(DRY_RUN_EPISODES),
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
            command, cwd=home, env=env, timeout_s=ctx.settings.validate_timeout_s,
            limits=client_limits(ctx.settings),
        )  # fmt: skip
    finally:
        ctx.gateway.stop_run(run)
    if returncode is None:
        return (
            f"the dry run did not end within {ctx.settings.validate_timeout_s:g} s "
            f"(does rollout() ever return, or block the event loop?)\n{output[-3000:]}"
        )
    output = output[-4000:]
    run_state = ctx.gateway.get_run(run)
    finished, aborted = run_state["episodes_finished"], run_state["episodes_aborted"]
    if returncode != 0 or finished < DRY_RUN_EPISODES or aborted:
        return (
            f"swarm run exited {returncode}; {finished} episode(s) finished, "
            f"{aborted} aborted\n{output}"
        )
    return None


def validate(state: StudyState, runtime: Runtime[StudyContext]) -> dict:
    ctx = runtime.context
    ctx.tick("validate")
    plan = design_of(state)
    validated = list(state.get("validated", []))
    feedback: dict[str, str] = {}
    repairs = dict(state.get("repairs", {}))
    rows = round_experiments(ctx, state)
    for arm in plan.arms:
        arm_rows = [r for r in rows if r.arm == arm.name and r.status == "planned"]
        if arm.name in validated or not arm_rows:
            continue
        first = arm_rows[0]
        attempt = repairs.get(arm.name, 0)
        run = f"{first.id[:50]}-check{attempt}"
        settings = {k: v for k, v in run_body(state, first).items() if k != "checkpoint_every"}
        started = time.monotonic()
        try:
            problem = dry_run(ctx, str(first.workflow_path), run, settings)
        except GatewayRefused as error:
            problem = f"the gateway refused the arm's run settings: {error}"
        if problem is None:
            validated.append(arm.name)
            for row in arm_rows:
                update_experiment(ctx, row.id, status="validated")
            ctx.event(
                "validate", "result",
                f"{arm.name}: {DRY_RUN_EPISODES} dry-run episodes finished in "
                f"{time.monotonic() - started:.0f} s",
            )  # fmt: skip
            continue
        repairs[arm.name] = attempt + 1
        summary = problem.strip().splitlines()[0] if problem.strip() else "no output"
        if attempt < ctx.settings.max_repairs:
            feedback[arm.name] = problem
            ctx.event("validate", "problem", f"{arm.name}: dry run failed; repairing", reason=summary,
                      data={"output": problem})  # fmt: skip
        else:
            for row in arm_rows:
                update_experiment(ctx, row.id, status="failed", error=problem[-2000:])
            ctx.event("validate", "error",
                      f"{arm.name}: still failing after {attempt} repair(s); arm dropped",
                      reason=summary, data={"output": problem})  # fmt: skip
    update = {"validated": validated, "feedback": feedback, "repairs": repairs}
    if not validated and not feedback:
        update["outcome"] = "no valid workflow"
    return update
