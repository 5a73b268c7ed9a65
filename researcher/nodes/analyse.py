"""analyse: each arm's score on the design's outcome (held-out accuracy, learning speed,
final training reward or cost) with 95% intervals, and the verdict by the design's
pre-registered rule in its direction, at the design's look of its sequential stopping rule
(`researcher.sequential`). After a pilot round it summarises the pilot instead
(`researcher.pilot`): the comparison is sized from that, and nothing is concluded."""

from __future__ import annotations

from langgraph.runtime import Runtime

from experiments_db import crud
from researcher.analysis import analyse as analyse_results
from researcher.answer import plain_answer
from researcher.context import StudyContext
from researcher.nodes.common import design_of, framing_of
from researcher.pilot import LEARNED_WORDS, summarise_pilot
from researcher.plan import Design, RunResult
from researcher.state import StudyState


def analyse(state: StudyState, runtime: Runtime[StudyContext]) -> dict:
    ctx = runtime.context
    ctx.tick("analyse")
    results = [RunResult.model_validate(r) for r in state["results"][-1]]
    design = design_of(state)
    if design.phase == "pilot":
        return _pilot(ctx, state, results)
    analysis = analyse_results(design, results, look=design.look, max_looks=design.max_looks)
    analysis = analysis.model_copy(
        update={"answer": plain_answer(framing_of(state), design, analysis)}
    )
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


def _pilot(ctx: StudyContext, state: StudyState, results: list[RunResult]) -> dict:
    planned = Design.model_validate(state["planned"])
    runs = sum(1 for r in results if r.status != "baseline")
    used = ctx.study().budget_used_s - state.get("pilot_used_s", ctx.study().budget_used_s)
    pilot = summarise_pilot(planned, results, used / runs if runs and used > 0 else None)
    cost = f"; a run cost {pilot.run_seconds:.0f} s" if pilot.run_seconds else ""
    spread = f"; seed-to-seed SD {pilot.seed_sd:.3f}" if pilot.seed_sd is not None else ""
    ctx.event("analyse", "result", f"pilot: {LEARNED_WORDS[pilot.learned]}{cost}{spread}",
              reason=pilot.evidence)  # fmt: skip
    return {"pilot": pilot.model_dump(mode="json")}
