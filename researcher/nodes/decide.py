"""decide: conclude, or refine with a follow-up hypothesis while the budget allows.

A planner whose `decide` takes `round_cost_s` is told what the next look really costs (the
seeds it adds, at the run cost the pilot measured) rather than guessing a flat figure, so
budget that pays for another look is spent; one that takes `design` gets the round's design
(its look and number of looks). After a pilot round nothing is decided: the comparison is
designed next.
"""

from __future__ import annotations

import inspect

from langgraph.runtime import Runtime

from experiments_db import crud
from researcher.context import StudyContext
from researcher.nodes.common import design_of, framing_of, hypothesis_of
from researcher.plan import Analysis, Decision, Design
from researcher.planner import budget
from researcher.state import StudyState


def decide(state: StudyState, runtime: Runtime[StudyContext]) -> dict:
    ctx = runtime.context
    ctx.tick("decide")
    design = design_of(state) if state.get("design") else None
    if design is not None and design.phase == "pilot":
        return after_pilot(ctx, state)
    costed: dict = {}
    accepts = inspect.signature(ctx.planner.decide).parameters
    if "round_cost_s" in accepts and design is not None:
        costed["round_cost_s"] = next_look_cost_s(design, ctx.step_seconds)
    if "design" in accepts and design is not None:
        costed["design"] = design
    decision = ctx.planner.decide(
        framing_of(state),
        hypothesis_of(state),
        Analysis.model_validate(state["analyses"][-1]),
        notes=state.get("notes", []),
        budget_left_s=ctx.budget_left(),
        round=state.get("round", 1),
        **costed,
    )
    update: dict = {"decision": decision.model_dump(mode="json")}
    if decision.action == "refine" and decision.follow_up is not None:
        follow_up = decision.follow_up
        with ctx.session() as session:
            crud.upsert_hypothesis(
                session, study_id=ctx.study_id, key=follow_up.key, statement=follow_up.statement,
                prediction=follow_up.prediction, refuted_if=follow_up.refuted_if,
                parent=follow_up.parent, status="open",
            )  # fmt: skip
        update |= {
            "hypotheses": [*state["hypotheses"], follow_up.model_dump()],
            "hypothesis": follow_up.key,
            "round": state.get("round", 1) + 1,
        }
        ctx.event("decide", "decision", f"refine: {follow_up.key}: {follow_up.statement}",
                  reason=decision.reason)  # fmt: skip
    else:
        update["outcome"] = "concluded"
        ctx.event("decide", "decision", f"conclude: {decision.conclusion}", reason=decision.reason)
    return update


def next_look_cost_s(design: Design, step_seconds: float) -> float:
    """What the next look costs: the seeds it adds per arm, at a run's cost as the pilot
    measured it (training, evaluation and start-up), else as the budget estimates it."""
    if design.pilot is not None and design.pilot.run_seconds:
        return len(design.arms) * design.seeds_per_look * design.pilot.run_seconds
    return budget.next_round_cost_s(len(design.arms), len(design.seeds), design.steps,
                                    step_seconds, design.seeds_per_look)  # fmt: skip


def after_pilot(ctx: StudyContext, state: StudyState) -> dict:
    """After the pilot the comparison runs (the design node sizes it); nothing is concluded."""
    decision = Decision(action="refine", reason="the pilot is done: the comparison runs next")
    ctx.event("decide", "decision", "pilot done: design the comparison from what it measured")
    return {"decision": decision.model_dump(mode="json"), "round": state.get("round", 1) + 1}
