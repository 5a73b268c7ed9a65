"""analyse: each arm's score on the design's outcome (held-out accuracy, learning speed,
final training reward or cost) with 95% intervals, and the verdict by the design's
pre-registered rule in its direction, at the design's look of its sequential stopping rule
(`researcher.sequential`)."""

from __future__ import annotations

from langgraph.runtime import Runtime

from experiments_db import crud
from researcher.analysis import analyse as analyse_results
from researcher.context import StudyContext
from researcher.nodes.common import design_of
from researcher.plan import RunResult
from researcher.state import StudyState


def analyse(state: StudyState, runtime: Runtime[StudyContext]) -> dict:
    ctx = runtime.context
    ctx.tick("analyse")
    results = [RunResult.model_validate(r) for r in state["results"][-1]]
    design = design_of(state)
    analysis = analyse_results(design, results, look=design.look, max_looks=design.max_looks)
    with ctx.session() as session:
        crud.upsert_hypothesis(
            session, study_id=ctx.study_id, key=state["hypothesis"],
            status=analysis.verdict, evidence=analysis.summary,
        )  # fmt: skip
    ctx.tick(latest_finding=analysis.summary[:1000])
    ctx.event(
        "analyse", "result", f"{state['hypothesis']} {analysis.verdict}", reason=analysis.summary
    )
    return {"analyses": [*state.get("analyses", []), analysis.model_dump(mode="json")]}
