"""design: the round's arms × seeds — a pilot, the comparison sized from it, or its next look.

Three kinds of round (`researcher.pilot` for the first two):

- the **pilot** (first round, when `settings.pilot` and `pilot.wants_pilot`: the planner's
  design compares a treatment with a control over 2+ seeds): the control arm's first seeds
  at the design's settings; the planner's design waits in `state["planned"]`;
- the **comparison** after a pilot: the planned design, retuned if the pilot's control did
  not learn (never the factor), its looks sized from the budget left at the cost the pilot
  measured, and its minimum detectable effect stated — all before a treatment run starts;
- a **next look** after an inconclusive one (the planner refined): the same arms, steps and
  items with more seeds per arm. Runs of earlier rounds with the same arm settings, steps
  and seed are reused, not trained again: a look adds seeds.

Without a pilot (disabled, a resumed old study) the planner's design is the comparison.
"""

from __future__ import annotations

import json
import time

from langgraph.runtime import Runtime

from experiments_db import crud
from experiments_db.studies import ExperimentRow
from researcher import pilot as piloting
from researcher.analysis import describe_rule, stopping_words
from researcher.context import StudyContext
from researcher.nodes.common import design_of, experiment_id, framing_of, hypothesis_of
from researcher.outcomes import outcome_label
from researcher.plan import Design, Pilot
from researcher.planner import budget
from researcher.reward_units import in_reward_units, reward_scale_words
from researcher.state import StudyState


def design(state: StudyState, runtime: Runtime[StudyContext]) -> dict:
    ctx = runtime.context
    ctx.tick("design")
    hypothesis = hypothesis_of(state)
    previous = design_of(state) if state.get("design") else None
    update: dict = {}
    shrunk = ""
    if previous is not None and previous.phase == "pilot":
        plan = _after_pilot(ctx, state, Design.model_validate(state["planned"]))
    elif previous is not None and previous.hypothesis != hypothesis.key:
        adds = _seeds_that_fit(ctx, previous)
        plan = next_look(previous, hypothesis.key, adds)
        if adds is not None and adds < previous.seeds_per_look:
            shrunk = f"; shrunk to fit the budget left: {max(1, adds)} more seed(s) per arm, not {previous.seeds_per_look}"
    else:
        plan = ctx.planner.design(
            framing_of(state),
            hypothesis,
            budget_s=ctx.budget_left(),
            seeds=ctx.settings.seeds,
            step_seconds=ctx.step_seconds,
            notes=state.get("notes", []),
        )
        pinned = getattr(ctx.planner, "pinned", False)  # a replay runs its design as it was
        if ctx.settings.pilot and piloting.wants_pilot(plan) and not pinned:
            update = {"planned": plan.model_dump(), "pilot_used_s": ctx.study().budget_used_s}
            plan = piloting.pilot_design(plan)
    plan = plan.model_copy(update={"parallel_runs": ctx.settings.parallel_runs})
    round_ = state.get("round", 1)
    ids, reused = _experiments(ctx, plan, hypothesis.key, round_)
    _announce(ctx, plan, round_, reused, shrunk)
    return update | {
        "design": plan.model_dump(),
        "designs": [*state.get("designs", []), plan.model_dump()],
        "experiments": ids,
        "feedback": {},
        "repairs": {},
        "validated": [],
        "actions": [],
        "progress": {},
    }


def _after_pilot(ctx: StudyContext, state: StudyState, planned: Design) -> Design:
    """The planned comparison, retuned and sized by what the pilot found."""
    pilot = Pilot.model_validate(state["pilot"])
    reading = framing_of(state).reading
    plan, changed = piloting.retune(reading, planned, pilot, ctx.budget_left())
    plan = _in_reward_units(plan, pilot, planned)
    # the pilot's runs are the control's first seeds unless a retune changed the settings
    pilot = pilot.model_copy(update={"retuned": changed, "kept": not changed})
    control = next(a for a in plan.arms if a.role == "control")
    have = len(pilot.runs) if control == _pilot_control(planned) else 0
    first = len(planned.seeds)
    available = ctx.budget_left() - budget.reserve_s(ctx.study().budget_s)
    run_s = piloting.mean_run_seconds(plan, pilot)
    looks = piloting.size_looks(len(plan.arms), have, available, run_s, first=first)
    treatments = sum(1 for a in plan.arms if a.role == "treatment")
    sd = piloting.outcome_sd(pilot, plan)
    mde = (
        piloting.minimum_detectable_effect(
            sd, looks.seeds_at(looks.max_looks), plan.direction, look=looks.max_looks,
            max_looks=looks.max_looks, comparisons=treatments, min_effect=plan.min_effect,
        )
        if sd is not None
        else None
    )  # fmt: skip
    sized = plan.model_copy(
        update={
            "seeds": list(range(looks.first)),
            "look": 1,
            "max_looks": looks.max_looks,
            "seeds_per_look": looks.step,
            "pilot": pilot,
            "mde": mde,
        }
    )
    basis = piloting.mde_words(mde, pilot, looks, sized, outcome_label(sized))
    rule = _with_stopping_rule(plan.decision_rule, planned, sized)
    return sized.model_copy(update={"mde_basis": basis, "decision_rule": rule})


def _in_reward_units(plan: Design, pilot: Pilot, planned: Design) -> Design:
    """`plan` with its smallest effect in the workflow's reward units when the pilot saw
    rewards beyond [0, 1] (`researcher.reward_units`), its rule in words saying so: the rule
    written for `planned` (before any retune) is replaced by the scaled plan's."""
    scaled = in_reward_units(plan, pilot.reward_range)
    if scaled is plan:
        return plan
    before, after = describe_rule(planned), describe_rule(scaled)
    rule = (
        plan.decision_rule.replace(before, after)
        if before in plan.decision_rule
        else (plan.decision_rule + " " + after)
    )
    rule += reward_scale_words(scaled, pilot.reward_range)
    return scaled.model_copy(update={"decision_rule": rule})


def _pilot_control(planned: Design):
    return next(a for a in planned.arms if a.role == "control")


def next_look(previous: Design, key: str, adds: int | None = None) -> Design:
    """`previous` one look on: the same arms, steps and items, `adds` more seeds per arm
    (default: the design's `seeds_per_look`; fewer when the whole look does not fit)."""
    adds = previous.seeds_per_look if adds is None else max(1, adds)
    seeds = list(range(len(previous.seeds) + adds))
    nxt = previous.model_copy(update={"hypothesis": key, "seeds": seeds,
                                      "look": previous.look + 1,
                                      "max_looks": max(previous.max_looks, previous.look + 1)})  # fmt: skip
    return nxt.model_copy(
        update={"decision_rule": _with_stopping_rule(previous.decision_rule, previous, nxt)}
    )


def _seeds_that_fit(ctx: StudyContext, previous: Design) -> int | None:
    """The seeds per arm the next look adds: the planned `seeds_per_look`, shrunk to what the
    budget left (less the reserve) pays for at the pilot's measured run cost (per arm:
    `pilot.run_costs`)."""
    run_s = piloting.mean_run_seconds(previous, previous.pilot)
    if run_s is None:
        return None
    available = ctx.budget_left() - budget.reserve_s(ctx.study().budget_s)
    return piloting.seeds_that_fit(len(previous.arms), previous.seeds_per_look, available, run_s)


def _with_stopping_rule(rule: str, old: Design, new: Design) -> str:
    """The decision rule in words with the stopping rule and look of `new` in place of
    `old`'s (both in the analysis's own words, `stopping_words`)."""
    before, after = stopping_words(old), stopping_words(new)
    if before and before in rule:
        return rule.replace(before, after)
    return rule + after if after not in rule else rule


def _experiments(ctx: StudyContext, plan: Design, key: str, round_: int) -> tuple[list[str], int]:
    """The round's experiment ids and how many were reused: an earlier round's finished,
    evaluated run of the same arm settings, steps and seed is reused; the rest are created
    (planned)."""
    now = time.time()
    ids: list[str] = []
    reused_count = 0
    with ctx.session() as session:
        crud.upsert_hypothesis(session, study_id=ctx.study_id, key=key, status="testing")
        earlier = {
            _identity(row.arm, row.seed, row.config): row.id
            for row in crud.experiments(session, study_id=ctx.study_id)
            if row.status == "finished" and row.result is not None and row.config
        }
        for arm in plan.arms:
            config = {"arm": arm.model_dump(), "steps": plan.steps, "round": round_}
            for seed in plan.seeds:
                reused = earlier.get(_identity(arm.name, seed, config))
                if reused is not None:
                    ids.append(reused)
                    reused_count += 1
                    continue
                ident = experiment_id(ctx.study_id, round_, arm.name, seed)
                ids.append(ident)
                if crud.get_experiment(session, experiment_id=ident) is None:
                    crud.upsert_experiment(
                        session,
                        experiment=ExperimentRow(
                            id=ident, study_id=ctx.study_id, hypothesis_key=key, arm=arm.name,
                            role=arm.role, seed=seed, config=config, status="planned",
                            created_at=now, updated_at=now,
                        ),
                    )  # fmt: skip
    return ids, reused_count


def _identity(arm: str, seed: int, config: dict) -> str:
    settings = dict(config.get("arm") or {})
    settings.pop("description", None)
    settings.pop("role", None)
    return json.dumps([arm, seed, config.get("steps"), settings], sort_keys=True, default=str)


def _announce(ctx: StudyContext, plan: Design, round_: int, reused: int, shrunk: str = "") -> None:
    arms = ", ".join(f"{a.name} ({a.role})" for a in plan.arms)
    kind = "pilot" if plan.phase == "pilot" else f"look {plan.look} of {plan.max_looks}"
    kept = f"; {reused} run(s) reused from earlier rounds" if reused else ""
    kept += shrunk
    message = (
        f"round {round_} ({kind}): {arms}; seeds {plan.seeds}; {plan.steps_words}; "
        f"judged on {plan.eval_episodes} held-out {plan.eval_task} tasks{kept}"
    )
    if plan.phase == "main" and plan.pilot is not None:
        p = plan.pilot
        retuned = "; ".join(f"{k} {v[0]:g} → {v[1]:g}" for k, v in p.retuned.items())
        message += (
            f". Pilot: {piloting.LEARNED_WORDS[p.learned]}"
            + (f" (retuned: {retuned})" if retuned else "")
            + (f"; a run costs about {p.run_seconds:.0f} s" if p.run_seconds else "")
            + f". {plan.mde_basis}"
        )
    ctx.event("design", "decision", message, reason=f"decision rule: {plan.decision_rule}")
