"""`researcher rerun STUDY`: a planner that replays a finished study's final design.

    record = replay_record("st-…", framing, hypotheses, designs, workflows={...})
    planner = ReplayPlanner(record)    # frame/hypotheses/design return the stored records

The new study asks the same question as read (the stored `Framing`, reading included),
tests one hypothesis (the original's, as H1) with the original's *final* design pinned:
its arms with their run settings, every seed the study used over its looks, its steps,
held-out family and episodes and its outcome, direction and margin — judged once (look 1
of 1, so the single-look rule applies, not the sequential levels). Each arm × seed runs
the workflow code the original ran when it is at hand. `decide` concludes with the plain
answer. Nothing is re-read or re-designed: no planner LLM is asked anything.

The record is kept in the new study's folder (`replay.json`), so `researcher resume`
rebuilds the same planner. Must not know about LangGraph, the gateway's HTTP API or the
database: `researcher.study` reads those and hands the plain records in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from researcher.analysis import describe_rule
from researcher.answer import plain_answer
from researcher.errors import ResearcherError
from researcher.plan import Analysis, Arm, Decision, Design, Framing, Hypothesis
from researcher.planner.template import TemplatePlanner

PREFIX = "replay:"  # StudySettings.planner of a replay: "replay:<original study id>"
RECORD_FILE = "replay.json"


class ReplayRecord(BaseModel):
    """What a replay replays, kept in the new study's folder."""

    replays: str  # the original study's id
    replays_report: str | None = None  # its report.html, when it had one
    original_planner: str  # who designed it there
    original_looks: int = 1  # designs (looks) the original took
    framing: Framing
    hypothesis: Hypothesis
    design: Design  # pinned: look 1 of 1, every seed used
    workflows: dict[str, str] = Field(default_factory=dict)  # "arm/seed" -> the code it ran


def pinned_design(designs: list[Design], *, original: str) -> Design:
    """The original's final design, judged once: the same arms, steps, held-out evaluation
    and rule, every seed any look of those arms used, as look 1 of 1 of hypothesis H1."""
    if not designs:
        raise ResearcherError(f"study {original} has no design to replay")
    final = designs[-1]
    arms = {a.name for a in final.arms}
    seeds = sorted({s for d in designs if {a.name for a in d.arms} == arms for s in d.seeds})
    pinned = final.model_copy(
        update={"hypothesis": "H1", "seeds": seeds, "look": 1, "max_looks": 1, "pilot": None}
    )
    rule = (
        f"{describe_rule(pinned)} Replayed from study {original}'s final design (look "
        f"{final.look} of up to {final.max_looks} there) with every seed it used, judged "
        "once here."
    )
    basis = pinned.mde_basis and f"{pinned.mde_basis} (stated by study {original})"
    return pinned.model_copy(update={"decision_rule": rule, "mde_basis": basis})


def replay_record(
    original: str,
    framing: Framing,
    hypotheses: list[Hypothesis],
    designs: list[Design],
    *,
    workflows: dict[str, str] | None = None,
    report: str | None = None,
) -> ReplayRecord:
    """The record of a replay of `original` from its stored framing, hypotheses and designs
    (in order) and the workflow code its final round ran ("arm/seed" -> source)."""
    design = pinned_design(designs, original=original)
    final_key = designs[-1].hypothesis
    tested = next((h for h in hypotheses if h.key == final_key), None)
    root = tested
    while root is not None and root.parent is not None:  # a follow-up restates its root
        root = next((h for h in hypotheses if h.key == root.parent), None)
    source = root or tested
    if source is None:
        raise ResearcherError(f"study {original} has no hypothesis {final_key} to replay")
    hypothesis = Hypothesis(key="H1", statement=source.statement, prediction=source.prediction,
                            refuted_if=source.refuted_if)  # fmt: skip
    return ReplayRecord(
        replays=original, replays_report=report, original_planner=framing.planner,
        original_looks=len(designs), framing=framing, hypothesis=hypothesis, design=design,
        workflows=dict(workflows or {}),
    )  # fmt: skip


def save_replay(directory: Path, record: ReplayRecord) -> Path:
    path = Path(directory) / RECORD_FILE
    path.write_text(record.model_dump_json(indent=2))
    return path


def load_replay(directory: Path) -> ReplayRecord | None:
    """The study folder's replay record; None for a study that replays nothing."""
    path = Path(directory) / RECORD_FILE
    return ReplayRecord.model_validate_json(path.read_text()) if path.is_file() else None


class ReplayPlanner:
    """A planner whose answers are the stored records (see the module docstring)."""

    pinned = True  # its design is fixed: a design node must neither pilot nor re-size it

    def __init__(self, record: ReplayRecord) -> None:
        self.record = record
        self.name = f"{PREFIX}{record.replays}"
        self._fixer = TemplatePlanner()  # only for workflow code that fails its dry run

    def frame(
        self,
        question: str,
        *,
        served_models: list[str],
        model: str | None = None,
        workflow: str | None = None,
        workflow_params: dict[str, Any] | None = None,
        workflow_has_test: bool = True,
        workflow_test_size: int | None = None,
    ) -> Framing:
        framing = self.record.framing
        if served_models and framing.model not in served_models:
            raise ResearcherError(
                f"study {self.record.replays} trained {framing.model!r}, which this gateway "
                f"does not serve ({', '.join(served_models)}): a replay trains the same model"
            )
        return framing.model_copy(update={
            "planner": f"replay of study {self.record.replays} (designed by "
                       f"{self.record.original_planner})",
            "served_models": served_models,
        })  # fmt: skip

    def hypotheses(self, framing: Framing, *, notes: list[str]) -> list[Hypothesis]:
        return [self.record.hypothesis]

    def design(self, framing: Framing, hypothesis: Hypothesis, **_: Any) -> Design:
        return self.record.design

    def write_workflow(
        self, framing: Framing, design: Design, arm: Arm, *, seed: int, feedback: str | None = None
    ) -> str:
        """The code the original ran for this arm × seed; written anew (by the template)
        only when it is missing or failed its dry run here."""
        code = self.record.workflows.get(f"{arm.name}/{seed}")
        if code is not None and feedback is None:
            return code
        return self._fixer.write_workflow(framing, design, arm, seed=seed, feedback=feedback)

    def decide(
        self,
        framing: Framing,
        hypothesis: Hypothesis,
        analysis: Analysis,
        *,
        notes: list[str],
        budget_left_s: float,
        round: int,
        **_: Any,
    ) -> Decision:
        """A replay is judged once: it concludes with whatever the rule gave."""
        answer = analysis.answer or plain_answer(framing, self.record.design, analysis)
        return Decision(
            action="conclude",
            reason=f"a replay of study {self.record.replays} is judged once (look 1 of 1): "
            f"{analysis.verdict.replace('_', ' ')}.",
            conclusion=answer,
        )
