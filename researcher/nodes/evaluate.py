"""evaluate: each trained run's policy on the held-out split, through the OpenAI API, and
what its training cost (wall time, tokens) for studies judged on cost.

Every run is evaluated on the held-out split whatever the design's outcome (the report
shows it); the analysis scores the outcome the question asked about. So is the untrained
policy (each base model the arms train, on the same first N held-out items; in a
user-workflow study once per distinct set of the arms' PARAMS, through that arm's wrapper):
the baseline the analysis asks "did it learn?" against, appended to the round's results
with status "baseline". Its
outcomes are kept in an "evaluate/baseline" event, so a resumed study (or a later round
with the same model, items and workflow) does not evaluate it again. Each result carries
its run's `batches_dropped` from the gateway (batches that trained nothing, by reason:
the first sign of an arm that is not learning), {} from a gateway that does not count them.
A round's runs are scored as many at once as the study trains (`parallel_runs`: the
gateway batches their requests). Scored runs' weights are then deleted as far as the
study's disk budget asks (`researcher.disk`).
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor

from langgraph.runtime import Runtime

from experiments_db import crud
from experiments_db.studies import ClientProcessRow, ExperimentRow, MetricSnapshotRow
from researcher.context import StudyContext
from researcher.disk import keep_within_disk_budget
from researcher.errors import ResearcherError
from researcher.evaluate import evaluate_policy
from researcher.learning import baseline_result
from researcher.nodes.common import design_of, framing_of, round_experiments, update_experiment
from researcher.plan import Design, Framing, RunResult
from researcher.state import StudyState


def evaluate(state: StudyState, runtime: Runtime[StudyContext]) -> dict:
    ctx = runtime.context
    ctx.tick("evaluate")
    plan, framing = design_of(state), framing_of(state)
    results = []
    prepared: list[tuple[ExperimentRow, RunResult, bool]] = []
    for row in round_experiments(ctx, state):
        if row.result is not None:  # evaluated before a crash
            prepared.append((row, RunResult.model_validate(row.result), False))
            continue
        with ctx.session() as session:
            snapshots = crud.metric_snapshots(session, experiment_id=row.id)
            launches = crud.client_processes(session, experiment_id=row.id)
        rewards = [s for s in snapshots if s.name == "reward/mean"]
        curve = [(s.step, s.value) for s in rewards]
        result = RunResult(arm=row.arm, seed=row.seed, run=row.id, curve=curve, status=row.status,
                           note=row.error, dropped_batches=dropped_batches(ctx, row.run_name),
                           **training_cost(snapshots, launches))  # fmt: skip
        scorable = row.status in ("finished", "stopped") and bool(row.run_name) and bool(curve)
        prepared.append((row, result, scorable))
    scored = _evaluate_all(ctx, plan, framing, [row for row, _, ok in prepared if ok])
    for row, result, scorable in prepared:
        if row.result is not None:
            results.append(result)
            continue
        if scorable:
            result.eval_outcomes, seconds = scored[row.id]
            result.status = "finished"  # a run stopped by budget or stall still has a policy
            accuracy = sum(result.eval_outcomes) / max(1, len(result.eval_outcomes))
            ctx.event("evaluate", "result",
                      f"{row.id}: held-out {plan.eval_task} "
                      f"{'mean reward' if framing.workflow else 'accuracy'} {accuracy:.2f} "
                      f"on {len(result.eval_outcomes)} tasks ({seconds:.0f} s)")  # fmt: skip
        elif row.status in ("finished", "stopped"):
            if result.status == "finished":
                result.status, result.note = "failed", "the run made no training step"
            dropped = ", ".join(f"{k} {v}" for k, v in sorted(result.dropped_batches.items()))
            ctx.event("evaluate", "problem", f"{row.id}: not evaluated: the run made no training "
                      f"step" + (f" (batches that trained nothing: {dropped})" if dropped else ""))  # fmt: skip
        update_experiment(ctx, row.id, result=result.model_dump(mode="json"))
        results.append(result)
    if any(r.eval_outcomes for r in results):
        results.extend(baselines(ctx, plan, framing, round_experiments(ctx, state)))
    keep_within_disk_budget(ctx, evaluated_runs(ctx))
    dumped = [r.model_dump(mode="json") for r in results]
    return {"results": [*state.get("results", []), dumped]}


def _evaluate_all(
    ctx: StudyContext, plan: Design, framing: Framing, rows: list[ExperimentRow]
) -> dict[str, tuple[list[float], float]]:
    """Each row's held-out outcomes and the seconds they took, as many runs at once as the
    study trains (`parallel_runs`: the gateway batches their requests); the first failure
    is raised once all have ended. Nothing here writes to the database."""

    level = at_level(plan)

    def one(row: ExperimentRow) -> tuple[list[float], float]:
        started = time.monotonic()
        outcomes = evaluate_policy(
            ctx.gateway.url, f"{row.run_name}/policy", family=plan.eval_family,
            n=plan.eval_episodes, api_key=ctx.gateway.api_key, **level,
            # the user's own workflow: the arm's wrapper of it, scored by its own reward
            **({"workflow": str(row.workflow_path)} if framing.workflow else {}),
        )  # fmt: skip
        return outcomes, time.monotonic() - started

    at_once = getattr(ctx.settings, "parallel_runs", 1)
    at_once = max(1, min(len(rows), at_once if isinstance(at_once, int) else 1))
    if at_once <= 1:
        return {row.id: one(row) for row in rows}
    with ThreadPoolExecutor(max_workers=at_once, thread_name_prefix="evaluate") as pool:
        futures = {row.id: pool.submit(one, row) for row in rows}
    return {ident: future.result() for ident, future in futures.items()}


def at_level(plan: Design) -> dict:
    """`evaluate_policy`'s `params` for the judged task's level; {} at its default."""
    params = plan.task_params.get(plan.eval_family)
    return {"params": params} if params else {}


def evaluated_runs(ctx: StudyContext) -> list[str]:
    """The gateway run names of the study's scored runs, the first scored first."""
    with ctx.session() as session:
        rows = crud.experiments(session, study_id=ctx.study_id)
    scored = [r for r in rows if r.run_name and r.result and r.result.get("eval_outcomes")]
    return [r.run_name for r in sorted(scored, key=lambda r: r.updated_at)]


def baselines(ctx: StudyContext, plan: Design, framing: Framing, rows: list) -> list[RunResult]:
    """The untrained policy of each base model the arms train (the control's first) on the
    held-out items the arms were scored on; reused from an earlier evaluation of the same
    model, items and workflow. In a user-workflow study the evaluation runs the arm's own
    PARAMS (a few-shot count, a system prompt), so each distinct set of PARAMS gets its own
    baseline: "did it learn?" must not credit training with what the PARAMS alone do. An
    evaluation that fails is reported and left out."""
    arms = sorted(plan.arms, key=lambda a: a.role != "control")
    with ctx.session() as session:
        done = {
            json.dumps(e.data["key"], sort_keys=True): e.data["outcomes"]
            for e in crud.events(session, study_id=ctx.study_id)
            if e.phase == "evaluate" and e.kind == "baseline" and e.data
        }  # fmt: skip
    found = []
    for model, arm in _baseline_conditions(arms, framing):
        wrapper = next((str(r.workflow_path) for r in rows
                        if arm is not None and r.arm == arm.name and r.workflow_path),
                       None) if framing.workflow else None  # fmt: skip
        params = arm.workflow_params if arm is not None else {}
        key = {"model": model, "family": plan.eval_family, "n": plan.eval_episodes,
               "workflow": framing.workflow, "params": params}  # fmt: skip
        level = at_level(plan)
        if level:  # only then: a key recorded before levels existed still matches
            key["task_params"] = level["params"]
        outcomes = done.get(json.dumps(key, sort_keys=True))
        declared = _declared(params, framing)
        with_params = f" with {_params_words(declared)}" if declared else ""
        if outcomes is None:
            started = time.monotonic()
            try:
                outcomes = evaluate_policy(
                    ctx.gateway.url, model, family=plan.eval_family, n=plan.eval_episodes,
                    api_key=ctx.gateway.api_key, **level,
                    **({"workflow": wrapper} if wrapper else {}),
                )  # fmt: skip
            except Exception as error:  # noqa: BLE001 — the baseline informs, it must not end the study
                ctx.event("evaluate", "problem", f"the untrained {model}{with_params} could not "
                          f"be evaluated on held-out {plan.eval_task}: {error}")  # fmt: skip
                continue
            mean = sum(outcomes) / max(1, len(outcomes))
            ctx.event("evaluate", "baseline",
                      f"untrained {model}{with_params}: held-out {plan.eval_task} {mean:.2f} on "
                      f"{len(outcomes)} tasks ({time.monotonic() - started:.0f} s)",
                      data={"key": key, "outcomes": outcomes})  # fmt: skip
        found.append(baseline_result(model, outcomes, eval_params=_declared(params, framing)))
    return found


def _baseline_conditions(arms: list, framing: Framing) -> list[tuple[str, object]]:
    """(base model, the arm whose evaluation a baseline repeats untrained), control first:
    one per base model, and in a user-workflow study one per distinct set of declared PARAMS
    too."""
    seen: dict[str, tuple[str, object]] = {}
    for arm in arms or [None]:
        model = (arm.run.get("base_model") if arm is not None else None) or framing.model
        params = _declared(arm.workflow_params if arm is not None else {}, framing)
        seen.setdefault(json.dumps([model, params], sort_keys=True, default=str), (model, arm))
    return list(seen.values())


def _declared(params: dict, framing: Framing) -> dict:
    """The arm's values of the user's workflow PARAMS: what its held-out evaluation runs
    with (a sampling setting PARAMS does not declare goes with training calls only)."""
    if not framing.workflow:
        return {}
    return {k: v for k, v in params.items() if k in framing.workflow_params}


def _params_words(params: dict) -> str:
    return ", ".join(f"{name}={value!r}" for name, value in params.items())


def dropped_batches(ctx: StudyContext, run_name: str | None) -> dict[str, int]:
    """The gateway's count of the run's batches that trained nothing, by reason; {} when
    the run never started, or the gateway does not say (an older one) or cannot answer."""
    if not run_name:
        return {}
    try:
        counts = ctx.gateway.get_run(run_name).get("batches_dropped") or {}
    except ResearcherError as error:  # the count informs; it must not end the evaluation
        ctx.event("evaluate", "problem", f"{run_name}: dropped batches unknown: {error}")
        return {}
    return {str(reason): int(n) for reason, n in counts.items() if n}


def training_cost(snapshots: list[MetricSnapshotRow], launches: list[ClientProcessRow]) -> dict:
    """{"wall_s", "tokens"} of one run: seconds from its client's first start to the moment
    the monitor recorded its last training step (the researcher's clock, to the monitor's
    polling precision), and the sum of the trainer's per-step "tokens" metric; None when
    not recorded."""
    started = [p.started_at for p in launches if p.started_at > 0]
    last_step_at = max((s.at for s in snapshots if s.name == "reward/mean"), default=None)
    tokens = [s.value for s in snapshots if s.name == "tokens"]
    return {
        "wall_s": max(0.0, last_step_at - min(started)) if started and last_step_at else None,
        "tokens": int(sum(tokens)) if tokens else None,
    }
