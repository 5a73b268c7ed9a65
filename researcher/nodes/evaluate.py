"""evaluate: each trained run's policy on the held-out split, through the OpenAI API."""

from __future__ import annotations

import time

from langgraph.runtime import Runtime

from experiments_db import crud
from researcher.context import StudyContext
from researcher.evaluate import evaluate_policy
from researcher.nodes.common import design_of, framing_of, round_experiments, update_experiment
from researcher.plan import RunResult
from researcher.state import StudyState


def evaluate(state: StudyState, runtime: Runtime[StudyContext]) -> dict:
    ctx = runtime.context
    ctx.tick("evaluate")
    plan, framing = design_of(state), framing_of(state)
    results = []
    for row in round_experiments(ctx, state):
        if row.result is not None:  # evaluated before a crash
            results.append(RunResult.model_validate(row.result))
            continue
        with ctx.session() as session:
            snapshots = crud.metric_snapshots(session, experiment_id=row.id, name="reward/mean")
        curve = [(s.step, s.value) for s in snapshots]
        result = RunResult(arm=row.arm, seed=row.seed, run=row.id, curve=curve, status=row.status,
                           note=row.error)  # fmt: skip
        if row.status in ("finished", "stopped") and row.run_name and curve:
            started = time.monotonic()
            result.eval_outcomes = evaluate_policy(
                ctx.gateway.url, f"{row.run_name}/policy", family=plan.eval_family,
                n=plan.eval_episodes, api_key=ctx.gateway.api_key,
                # the user's own workflow: the arm's wrapper of it, scored by its own reward
                **({"workflow": str(row.workflow_path)} if framing.workflow else {}),
            )  # fmt: skip
            result.status = "finished"  # a run stopped by budget or stall still has a policy
            accuracy = sum(result.eval_outcomes) / max(1, len(result.eval_outcomes))
            ctx.event("evaluate", "result",
                      f"{row.id}: held-out {plan.eval_family} "
                      f"{'mean reward' if framing.workflow else 'accuracy'} {accuracy:.2f} "
                      f"on {len(result.eval_outcomes)} tasks ({time.monotonic() - started:.0f} s)")  # fmt: skip
        elif result.status == "finished":
            result.status, result.note = "failed", "the run made no training step"
        update_experiment(ctx, row.id, result=result.model_dump(mode="json"))
        results.append(result)
    dumped = [r.model_dump(mode="json") for r in results]
    return {"results": [*state.get("results", []), dumped]}
