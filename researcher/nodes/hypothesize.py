"""hypothesize: hypotheses, each with a prediction and what would refute it."""

from __future__ import annotations

from langgraph.runtime import Runtime

from experiments_db import crud
from researcher.context import StudyContext
from researcher.nodes.common import framing_of
from researcher.state import StudyState


def hypothesize(state: StudyState, runtime: Runtime[StudyContext]) -> dict:
    ctx = runtime.context
    ctx.tick("hypotheses")
    hypotheses = ctx.planner.hypotheses(framing_of(state), notes=state.get("notes", []))
    with ctx.session() as session:
        for h in hypotheses:
            crud.upsert_hypothesis(
                session,
                study_id=ctx.study_id,
                key=h.key,
                statement=h.statement,
                prediction=h.prediction,
                refuted_if=h.refuted_if,
                parent=h.parent,
                status="open",
            )
    for h in hypotheses:
        ctx.event("hypotheses", "decision", f"{h.key}: {h.statement}", reason=h.prediction)
    return {"hypotheses": [h.model_dump() for h in hypotheses], "hypothesis": hypotheses[0].key}
