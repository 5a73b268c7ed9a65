"""design: arms × seeds, steps from the budget, a pre-registered decision rule."""

from __future__ import annotations

import time

from langgraph.runtime import Runtime

from experiments_db import crud
from experiments_db.studies import ExperimentRow
from researcher.context import StudyContext
from researcher.nodes.common import experiment_id, framing_of, hypothesis_of
from researcher.state import StudyState


def design(state: StudyState, runtime: Runtime[StudyContext]) -> dict:
    ctx = runtime.context
    ctx.tick("design")
    hypothesis = hypothesis_of(state)
    plan = ctx.planner.design(
        framing_of(state),
        hypothesis,
        budget_s=ctx.budget_left(),
        seeds=ctx.settings.seeds,
        step_seconds=ctx.step_seconds,
        notes=state.get("notes", []),
    )
    round_ = state.get("round", 1)
    ids = []
    now = time.time()
    with ctx.session() as session:
        crud.upsert_hypothesis(session, study_id=ctx.study_id, key=hypothesis.key, status="testing")
        for arm in plan.arms:
            for seed in plan.seeds:
                ident = experiment_id(ctx.study_id, round_, arm.name, seed)
                ids.append(ident)
                if crud.get_experiment(session, experiment_id=ident) is None:
                    crud.upsert_experiment(
                        session,
                        experiment=ExperimentRow(
                            id=ident,
                            study_id=ctx.study_id,
                            hypothesis_key=hypothesis.key,
                            arm=arm.name,
                            role=arm.role,
                            seed=seed,
                            config={"arm": arm.model_dump(), "steps": plan.steps, "round": round_},
                            status="planned",
                            created_at=now,
                            updated_at=now,
                        ),
                    )
    arms = ", ".join(f"{a.name} ({a.role})" for a in plan.arms)
    ctx.event(
        "design",
        "decision",
        f"round {round_}: {arms}; seeds {plan.seeds}; {plan.steps} steps per run; "
        f"judged on {plan.eval_episodes} held-out {plan.eval_family} tasks",
        reason=f"decision rule: {plan.decision_rule}",
    )
    return {
        "design": plan.model_dump(),
        "designs": [*state.get("designs", []), plan.model_dump()],
        "experiments": ids,
        "feedback": {},
        "repairs": {},
        "validated": [],
        "actions": [],
        "progress": {},
    }
