"""What a report shows: one typed record the graph (or `researcher report`) fills in.

Plain pydantic data built from plan records (`researcher.plan`) plus the study's log:
events, interventions, human notes, the code each run ran, what went wrong. It knows
nothing of the database or the gateway — whoever builds it reads those.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from researcher.plan import Analysis, Decision, Design, Framing, Hypothesis, RunResult


class HypothesisStatus(Hypothesis):
    """A hypothesis with where it stands at report time."""

    status: str = (
        "untested"  # untested | testing | supported | refuted | inconclusive | not_testable
    )
    evidence: str | None = None  # the result that decided the status, in words


class ReportEvent(BaseModel):
    """One line of the study's timeline: a decision or happening, and why."""

    at: float  # unix time
    phase: str  # the graph node: frame, design, launch, monitor, ...
    kind: str  # started, repaired, client_restarted, budget_stop, ...
    message: str
    reason: str | None = None


class ReportIntervention(BaseModel):
    """An action a person (or the researcher itself) took on the study while it ran."""

    at: float
    actor: str  # "human:<name>" or "researcher"
    kind: str  # pause, resume, stop_run, edit_run, note, ...
    payload: dict[str, Any] = Field(default_factory=dict)
    reason: str | None = None
    status: str = "applied"  # pending | applied | rejected | failed


class ReproRun(BaseModel):
    """Enough to run one arm × seed again: its gateway settings and the client code."""

    arm: str
    seed: int
    run: str
    settings: dict[str, Any] = Field(default_factory=dict)  # the POST /runs body
    code_version: str | None = None
    workflow_path: str
    workflow_code: str
    checkpoint: str | None = None  # where the gateway keeps the run's newest checkpoint/export
    # how the run ended, as the study recorded it (finished: reached its max_steps; stopped:
    # the budget, the trainer or a person ended it early; failed), the last training step
    # it logged and why it stopped; None in reports of studies from before these fields
    status: str | None = None
    steps_done: int | None = None
    stop_reason: str | None = None


class RunEpisodes(BaseModel):
    """What one run's training episodes went through: how many finished and aborted, why
    they aborted (the rollout's failures as its client printed them, most common first,
    each with how many episodes it ended), and the mean reward its client last reported."""

    run: str
    arm: str
    seed: int
    finished: int = 0
    aborted: int = 0
    causes: list[tuple[str, int]] = Field(default_factory=list)  # (cause, episodes)
    recent_reward: float | None = None  # the client's mean over its last `recent_n` episodes
    recent_n: int = 0
    stop_reason: str | None = None  # why the run stopped (the gateway's or the monitor's)

    @property
    def aborted_share(self) -> float:
        total = self.finished + self.aborted
        return self.aborted / total if total else 0.0


class ReportContext(BaseModel):
    """Everything one study report shows; `analyses[i]` is the analysis of `designs[i]`.

    Results are matched to designs by arm name, so arm names should be unique in a study.
    """

    study_id: str
    question: str
    framing: Framing
    planner: str
    hypotheses: list[HypothesisStatus] = Field(default_factory=list)
    designs: list[Design] = Field(default_factory=list)
    results: list[RunResult] = Field(default_factory=list)
    analyses: list[Analysis] = Field(default_factory=list)
    decision: Decision | None = None
    events: list[ReportEvent] = Field(default_factory=list)
    interventions: list[ReportIntervention] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)  # human notes: the report shows every one
    runs: list[ReproRun] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)  # crashes, repairs, failed runs
    episodes: list[RunEpisodes] = Field(default_factory=list)  # per trained run
    budget_s: float
    budget_used_s: float = 0.0
    started_at: float
    finished_at: float | None = None
    gateway_url: str | None = None
    disk_used_bytes: int | None = None  # the study folder at report time
    disk_budget_bytes: int | None = None
    replays: str | None = None  # the study this one replays (`researcher rerun`)
    replays_report: str | None = None  # that study's report.html, when it has one

    def results_of(self, design: Design) -> list[RunResult]:
        """The design's arms' runs (not the untrained baseline, status "baseline")."""
        arms = {a.name for a in design.arms}
        return [r for r in self.results if r.arm in arms and r.status != "baseline"]
