"""decide: conclude, or refine with a follow-up hypothesis while the budget allows.

A planner whose `decide` takes `round_cost_s` is told what the next look really costs (the
seeds it adds, at the run cost the pilot measured) rather than guessing a flat figure, so
budget that pays for another look is spent; one that takes `design` gets the round's design
(its look and number of looks). After a pilot round nothing is decided — the comparison is
designed next — unless the budget left cannot pay for its first look, or the pilot's
control already sits so near the ceiling (floor) of held-out accuracy that no treatment
could show the smallest effect that counts: then the study concludes, not tested.
"""

from __future__ import annotations

import inspect

from langgraph.runtime import Runtime

from experiments_db import crud
from researcher import pilot as piloting
from researcher.context import StudyContext
from researcher.headroom import no_room
from researcher.nodes.common import design_of, framing_of, hypothesis_of
from researcher.plan import Analysis, Decision, Design, Framing, Pilot, RunResult
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
        costed["round_cost_s"] = next_look_cost_s(
            design, ctx.step_seconds, ctx.study().budget_s, ctx.budget_left()
        )
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


def _no_room_after_pilot(state: StudyState) -> str | None:
    """Why the comparison could not support the hypothesis whatever the treatment does: the
    pilot's control already sits at the ceiling (or floor) of held-out accuracy, nearer to
    it than the smallest effect that counts (`headroom.no_room`); None otherwise."""
    if not state.get("planned") or not state.get("results"):
        return None
    planned = Design.model_validate(state["planned"])
    control = next((a.name for a in planned.arms if a.role == "control"), None)
    runs = [RunResult.model_validate(r) for r in state["results"][-1]]
    runs = [r for r in runs if r.arm == control and r.status == "finished" and r.eval_outcomes]
    return no_room(planned, runs)


def _comparison_unaffordable(ctx: StudyContext, state: StudyState) -> str | None:
    """Why the comparison after this pilot cannot run in the budget left, or None when it
    can (or no cost was measured to tell)."""
    if not state.get("pilot") or not state.get("planned"):
        return None
    pilot = Pilot.model_validate(state["pilot"])
    planned = Design.model_validate(state["planned"])
    # the whole budget left, the report's reserve included: a comparison that would end a
    # little into the reserve still answers (its runs are priced with their evaluation);
    # one that cannot end before the budget does would be stopped before it answers
    left = ctx.budget_left()
    run_s = pilot.run_seconds
    if not run_s:
        return None if left > 0 else "the pilot spent the budget"
    # the pilot's control runs are the comparison's control seeds unless the design node will
    # retune the settings (a control that did not learn, with something free to change):
    # then the control trains again, at the retuned settings' cost
    framing = state.get("framing") or {}
    reading = Framing.model_validate(framing).reading if framing else None
    retuned, changed = piloting.retune(reading, planned, pilot, left)
    costs = piloting.run_costs(retuned, pilot)
    arms = [a for a in retuned.arms if a.role == "treatment" or changed]
    needed = len(planned.seeds) * sum(costs[a.name] for a in arms)
    if left >= needed:
        return None
    longer = max(costs[a.name] for a in arms) if arms else run_s
    cost = f"a run cost {run_s:.0f} s here" + (
        f" ({longer:.0f} s for the longest arm, which trains more)" if longer > run_s * 1.05 else ""
    )
    return (
        f"the budget left cannot pay for the comparison: {cost}, so its "
        f"first look ({len(planned.seeds)} seeds of {len(arms)} arm(s)) needs about "
        f"{needed / 60:.0f} min and {max(0.0, left) / 60:.1f} min are left. The pilot's "
        f"control {pilot.learned} ({pilot.evidence or 'no evidence recorded'}). Run it again "
        f"with a budget of at least {(ctx.study().budget_s + needed - left) / 60:.0f} min"
    )


def next_look_cost_s(
    design: Design,
    step_seconds: float,
    budget_s: float | None = None,
    budget_left_s: float | None = None,
) -> float:
    """What the next look costs. Priced by the pilot (a run's measured cost: training,
    evaluation and start-up) it is the seeds the look adds per arm — shrunk to what fits in
    `budget_left_s`, at least one (`pilot.seeds_that_fit`; the design node adds the same
    number) — plus the reserve kept for the last evaluation and the report
    (`budget.reserve_s` of the study's `budget_s`). So a planner refines exactly when a look
    of at least one seed per arm fits. Without a pilot: the budget's estimate."""
    if (run_s := piloting.mean_run_seconds(design, design.pilot)) is not None:
        reserve = budget.reserve_s(budget_s) if budget_s else 0.0
        adds = design.seeds_per_look
        if budget_left_s is not None:
            adds = piloting.seeds_that_fit(len(design.arms), adds, budget_left_s - reserve, run_s)
        return len(design.arms) * max(1, adds) * run_s + reserve
    return budget.next_round_cost_s(len(design.arms), len(design.seeds), design.steps,
                                    step_seconds, design.seeds_per_look)  # fmt: skip


def after_pilot(ctx: StudyContext, state: StudyState) -> dict:
    """After the pilot the comparison runs (the design node sizes it); nothing is concluded
    — unless the budget left cannot pay for one run of each treatment seed the comparison's
    first look needs at the cost the pilot measured: such runs would be stopped before they
    answer anything, so the study concludes with what the pilot found."""
    short = _no_room_after_pilot(state) or _comparison_unaffordable(ctx, state)
    if short is not None:
        decision = Decision(action="conclude", reason=short, conclusion=f"Not tested: {short}")
        ctx.event("decide", "decision", f"conclude: {short}")
        return {"decision": decision.model_dump(mode="json"), "outcome": "concluded"}
    decision = Decision(action="refine", reason="the pilot is done: the comparison runs next")
    ctx.event("decide", "decision", "pilot done: design the comparison from what it measured")
    return {"decision": decision.model_dump(mode="json"), "round": state.get("round", 1) + 1}
