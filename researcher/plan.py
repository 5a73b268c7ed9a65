"""The researcher's plan records: what a planner proposes and what analysis concludes.

Owns the typed (pydantic) values that pass between the graph's nodes, the planners, the
analysis and the report writer: the framing of a question, hypotheses, an experiment design
with its arms and pre-registered decision rule, per-arm results, the analysis and the
decision. They are plain data — JSON round-trips them into the LangGraph checkpoint and
the study database — and know nothing of HTTP, LangGraph or SQL.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class Framing(BaseModel):
    """The question restated as an experiment family the planner knows how to test."""

    question: str
    family: str  # an experiment family key, e.g. "task_mixing", "learning_rate"
    summary: str  # one sentence: what will be compared, on what, judged how
    model_requested: str | None = None  # a model the question names ("7B"), if any
    model: str  # the model actually trained (one the gateway serves)
    substitution: str | None = None  # set when model != model_requested: said in the report
    planner: str  # "template" or "llm:<model>@<url>": every report says who planned
    served_models: list[str] = Field(default_factory=list)  # what the gateway served at framing


class Hypothesis(BaseModel):
    key: str  # "H1", "H2", ...
    statement: str
    prediction: str  # what we expect to see if it holds
    refuted_if: str  # what result would refute it
    parent: str | None = None  # the hypothesis this one refines, for follow-ups


class Arm(BaseModel):
    """One condition of an experiment; each seed of it becomes one gateway run."""

    name: str  # short, file- and URL-safe: "arithmetic-only"
    role: Literal["control", "treatment"]
    description: str
    tasks: dict[str, float]  # task family -> weight: what the workflow serves (and task_mix)
    run: dict[str, Any] = Field(default_factory=dict)  # POST /runs fields: lr, group_size, ...
    # workflow-template parameters that are no run setting (e.g. {"max_turns": 2})
    workflow: dict[str, Any] = Field(default_factory=dict)


class Design(BaseModel):
    """A pre-registered experiment: arms × seeds, held-out evaluation, decision rule."""

    hypothesis: str  # Hypothesis.key
    arms: list[Arm]
    seeds: list[int]
    steps: int  # training steps per run
    eval_family: str  # the task family whose held-out ("test") split judges every arm
    eval_episodes: int  # held-out tasks per run
    metric: str = "accuracy"  # mean held-out reward thresholded at 1.0
    decision_rule: str  # in words, fixed before any run starts
    min_effect: float = 0.05  # smallest treatment − control difference that counts
    budget_split: dict[str, float] = Field(default_factory=dict)  # phase -> share of budget


class RunResult(BaseModel):
    """One arm × seed: its training curve and held-out outcomes."""

    arm: str
    seed: int
    run: str  # the gateway run name
    curve: list[tuple[int, float]] = Field(default_factory=list)  # (step, reward/mean)
    eval_outcomes: list[float] = Field(default_factory=list)  # per held-out task: 1.0 or 0.0
    status: str = "finished"  # finished | failed | stopped
    note: str | None = None  # why it failed or was stopped


class Comparison(BaseModel):
    treatment: str
    control: str
    difference: float  # mean held-out metric, treatment − control
    ci_low: float  # bootstrap 95% interval of the difference
    ci_high: float
    effect_size: float  # Cohen's h on the pooled accuracies
    n_seeds: int


class Analysis(BaseModel):
    arm_means: dict[str, float]  # arm -> mean held-out metric over seeds
    arm_ci: dict[str, tuple[float, float]]  # arm -> bootstrap 95% interval
    comparisons: list[Comparison]
    verdict: Literal["supported", "refuted", "inconclusive"]
    summary: str  # one paragraph in words, applying the design's decision rule


class Decision(BaseModel):
    action: Literal["conclude", "refine"]
    reason: str
    follow_up: Hypothesis | None = None  # set when action == "refine"
    conclusion: str | None = None  # set when action == "conclude"
