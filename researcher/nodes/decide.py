"""decide: conclude, or refine with a follow-up hypothesis while the budget allows.

A planner whose `decide` takes `round_cost_s` is told what the next round really costs
(`budget.next_round_cost_s`: every seed again plus one per arm, at this round's steps)
rather than guessing a flat figure, so budget that pays for another look is spent.
"""

from __future__ import annotations

import inspect

from langgraph.runtime import Runtime

from experiments_db import crud
from researcher.context import StudyContext
from researcher.nodes.common import design_of, framing_of, hypothesis_of
from researcher.plan import Analysis
from researcher.planner import budget
from researcher.state import StudyState


def decide(state: StudyState, runtime: Runtime[StudyContext]) -> dict:
    ctx = runtime.context
    ctx.tick("decide")
    costed: dict = {}
    if "round_cost_s" in inspect.signature(ctx.planner.decide).parameters and state.get("design"):
        design = design_of(state)
        costed["round_cost_s"] = budget.next_round_cost_s(
            len(design.arms), len(design.seeds), design.steps, ctx.step_seconds
        )
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
