"""`researcher plan`'s work: read a question and design its study without running anything.

Owns `served_models` (a `--gateway`'s `/v1/models`, or what an embedded gateway would serve,
without starting one), `make_plan` (frame → hypotheses → design, exactly as a study's first
round would, budget and seeds included) and `plan_record`, the `researcher plan --json`
object — a contract other tools read: question, planner, reading, model, model_requested,
substitution, arms (name, role, tasks, run, workflow_params), seeds, steps, eval_task,
eval_episodes, decision_rule, max_looks, pilot (more keys may be added, none renamed). Knows nothing of the
command line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from researcher.errors import ResearcherError
from researcher.plan import Arm, Design, Framing, Hypothesis
from researcher.planner import budget, make_planner
from researcher.settings import DEFAULT_MODEL
from swarm.protocol import RunSettings

ARM_FIELDS = {"name", "role", "description", "tasks", "run", "workflow_params", "level"}


@dataclass(frozen=True)
class Plan:
    question: str
    budget_s: float
    framing: Framing
    hypothesis: Hypothesis
    design: Design


def served_models(
    gateway: str | None, api_key: str | None, model: str | None, *, strict: bool
) -> list[str]:
    """What the gateway serves: `gateway`'s /v1/models, else what an embedded gateway would
    serve. Not `strict`: an unreachable gateway is the study's to report, so the embedded
    model stands in."""
    if not gateway:
        return [model or DEFAULT_MODEL]
    from researcher.gateway_api import GatewayAPI

    api = GatewayAPI(gateway, api_key=api_key)
    try:
        api.check(within_s=5.0 if strict else 1.0)
        return api.served_models()
    except ResearcherError:
        if strict:
            raise
        return [model or DEFAULT_MODEL]
    finally:
        api.close()


def make_plan(
    question: str, *, planner: str, served: list[str], budget_s: float, seeds: int,
    model: str | None = None, workflow_args: dict[str, Any] | None = None,
) -> Plan:  # fmt: skip
    """The first round's design of `question` (`workflow_args`: `workflow_frame_args` of the
    user's workflow file). `UnmappableQuestion` (or another `ResearcherError` of the
    planner) when it cannot be read: a refusal."""
    planner_ = make_planner(planner)
    framing = planner_.frame(question, served_models=served, model=model, **(workflow_args or {}))
    [hypothesis, *_] = planner_.hypotheses(framing, notes=[])
    step_seconds = budget.step_seconds_for(framing.model)  # as a study sizes it
    design = planner_.design(framing, hypothesis, budget_s=budget_s, seeds=seeds,
                             step_seconds=step_seconds, notes=[])  # fmt: skip
    return Plan(question, budget_s, framing, hypothesis, design)


def _arm_record(arm: Arm) -> dict[str, Any]:
    """An arm with every run setting it trains with: the gateway's defaults under the arm's
    own (the seed is each run's, so it is left out)."""
    record = arm.model_dump(mode="json", include=ARM_FIELDS)
    defaults = RunSettings().model_dump(mode="json", exclude={"seed"}, exclude_none=True)
    record["run"] = {**defaults, **record["run"]}
    return record


def plan_record(plan: Plan) -> dict[str, Any]:
    """The `researcher plan --json` object."""
    framing, design = plan.framing, plan.design
    return {
        "question": plan.question, "planner": framing.planner,
        "reading": framing.reading.model_dump(mode="json") if framing.reading else None,
        "summary": framing.summary, "model": framing.model,
        "model_requested": framing.model_requested, "substitution": framing.substitution,
        "workflow": framing.workflow, "workflow_test_size": framing.workflow_test_size,
        "hypothesis": plan.hypothesis.model_dump(mode="json"),
        "arms": [_arm_record(arm) for arm in design.arms],
        "seeds": design.seeds, "steps": design.steps, "eval_task": design.eval_family,
        "task_params": design.task_params,
        "eval_episodes": design.eval_episodes, "outcome": design.outcome,
        "direction": design.direction, "margin": design.margin, "threshold": design.threshold,
        "min_effect": design.min_effect, "effect_units": design.effect_units,
        "decision_rule": design.decision_rule,
        "budget_s": plan.budget_s, "max_looks": design.max_looks,
        "pilot": pilot_record(design),
    }  # fmt: skip


def pilot_record(design: Design) -> dict[str, Any] | None:
    """The pilot a study of `design` runs first (`researcher.pilot`): the control arm, its
    seeds and steps; None when it runs none (nothing compared, or one seed per arm)."""
    from researcher.pilot import pilot_design, wants_pilot

    if not wants_pilot(design):
        return None
    pilot = pilot_design(design)
    return {"arm": pilot.arms[0].name, "seeds": len(pilot.seeds), "steps": pilot.steps}
