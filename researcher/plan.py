"""The researcher's plan records: what a planner proposes and what analysis concludes.

Owns the typed (pydantic) values that pass between the graph's nodes, the planners, the
analysis and the report writer: the framing of a question, hypotheses, an experiment design
with its arms and pre-registered decision rule, per-arm results, the analysis and the
decision. They are plain data — JSON round-trips them into the LangGraph checkpoint and
the study database — and know nothing of HTTP, LangGraph or SQL.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, Field

Outcome = Literal["heldout_accuracy", "learning_speed", "final_train_reward", "cost"]
Direction = Literal["greater", "less", "two_sided", "equivalent", "noninferior"]
# the directions judged against a margin: equivalence (both sides) and non-inferiority (the
# treatment is not worse than the control by more than the margin: one side)
MARGIN_DIRECTIONS = ("equivalent", "noninferior")
# the task family (Design.eval_family, Reading.task) of a study of the user's own workflow
WORKFLOW_FAMILY = "workflow"
Level = bool | int | float | str | dict[str, Any] | None


class Reading(BaseModel):
    """What a question asks, read before anything runs: one *factor* varied over two or
    more *levels* on a *task*, judged by an *outcome* in a *direction*.

    `factor` is a `POST /runs` field name (`lr`, `kl_coef`, `group_size`, `batch_groups`,
    `algorithm`, `clip_eps`, `max_staleness`, `merge`, `max_steps`, ...), `lora` (levels:
    "full" or a rank), a rollout sampling setting (`temperature`, `max_tokens`), the
    shipped guessing game's `max_turns`, `task_mix` (levels: {task: weight} dicts),
    `base_model` (levels: served model names) or `workflow:<PARAM>` for a parameter the
    user's workflow declares in `PARAMS`. `levels` hold every level, the control's
    included, in the order the design's arms take (control first); `control` is the level
    every other is compared with. The record is printed by `researcher start` and
    `researcher plan`, stored with the study and shown at the top of the report.
    """

    factor: str
    levels: list[Level] = Field(min_length=2)
    control: Level
    task: str  # the judged task: a shipped family, or "workflow" for the user's own agent
    tasks: list[str] = Field(default_factory=list)  # every task the question names
    outcome: Outcome = "heldout_accuracy"
    direction: Direction = "greater"
    # the equivalence (or non-inferiority) margin; set when direction is one of MARGIN_DIRECTIONS
    margin: float | None = None
    # the question named the margin ("within 0.05"): in the outcome's units as written, never
    # restated in a workflow's reward units even when it equals the default
    margin_named: bool = False
    steps: int | None = None  # training steps the question fixes ("within 20 steps")
    threshold: float | None = None  # learning_speed as steps to reach this training reward
    # the smallest difference that counts when the question names one ("improve accuracy
    # by at least 5 points": 0.05); None: the planner's default
    min_effect: float | None = None
    # how the smallest effect or margin the question named was written (docs/reading.md,
    # "Points, percents and the reward's units"): "points" ("by at least 1 point": N/100 of
    # a 0-1 reward, N in a workflow's own units once its rewards go beyond [0, 1]), "percent"
    # ("by 10%", "5 percentage points": a share of a 0-1 reward, or of the rewards' range
    # beyond it); None: a bare number in the outcome's units as written, or none named
    effect_units: Literal["points", "percent"] | None = None
    # the question asks the negation of its test ("does RLOO not beat GRPO?"): the test is
    # the positive one, and the summary says what "supported" and "refuted" answer
    negated: bool = False
    # run settings the question fixes for every arm ("does group size 8 help at lr 1e-5?":
    # {"lr": 1e-05}); never the factor
    held: dict[str, Level] = Field(default_factory=dict)
    # episodes per training step the question fixes for every arm ("at a fixed batch of 64
    # episodes", "4 groups of 16 vs 16 groups of 4"): group_size x batch_groups, the one not
    # varied or held set to keep it; None: each arm's own settings
    episodes_per_step: int | None = Field(default=None, ge=1, le=1024 * 4096)
    # a difficulty level the question names for a task that has levels (family -> the
    # family's `level`, or BFCL's `category`: "countdown": "tiny"); others run at their default
    task_levels: dict[str, str] = Field(default_factory=dict)
    # every default the reader filled in, in words ("KL 0 is the control: only 0.5 named")
    assumptions: list[str] = Field(default_factory=list)
    summary: str = ""  # one sentence: what is compared, on what, judged how, which way


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
    reading: Reading | None = None  # None only in studies framed before readings existed
    workflow: str | None = None  # the user's workflow file (absolute path) when one is studied
    workflow_params: dict[str, Any] = Field(default_factory=dict)  # its PARAMS defaults
    # tasks in its tasks("test") (counted up to 1000; None: not counted): no run is judged
    # on more held-out tasks than that
    workflow_test_size: int | None = None


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
    # what the workflow is given that is no run setting: sampling ({"temperature": 1.2}),
    # the guessing game's {"max_turns": 2}, or a user workflow's PARAMS ({"system_prompt": ...})
    workflow_params: dict[str, Any] = Field(
        default_factory=dict, validation_alias=AliasChoices("workflow_params", "workflow")
    )
    level: Level = None  # the factor's level this arm trains with


class Design(BaseModel):
    """A pre-registered experiment: arms × seeds, held-out evaluation, decision rule."""

    hypothesis: str  # Hypothesis.key
    arms: list[Arm]
    seeds: list[int]
    steps: int  # training steps per run
    eval_family: str  # the task family whose held-out ("test") split judges every arm
    eval_episodes: int  # held-out tasks per run
    # family -> the keyword arguments its `tasks()` is drawn with (a difficulty level: the
    # reading's `task_levels`), in training and in the held-out evaluation alike
    task_params: dict[str, dict[str, Any]] = Field(default_factory=dict)
    metric: str = "accuracy"  # mean held-out reward thresholded at 1.0
    decision_rule: str  # in words, fixed before any run starts
    min_effect: float = 0.05  # smallest treatment − control difference that counts
    # the question named it ("by at least 0.5"): in the outcome's own units as written, so
    # never restated in a workflow's reward units (`researcher.reward_units`)
    min_effect_named: bool = False
    # how the named smallest effect (or equivalence margin) was written: `Reading.effect_units`
    effect_units: Literal["points", "percent"] | None = None
    outcome: Outcome = "heldout_accuracy"  # what each run is scored on (Reading.outcome)
    direction: Direction = "greater"  # which way the hypothesis says it moves
    margin: float | None = None  # the margin when direction is one of MARGIN_DIRECTIONS
    # the question named it (`Reading.margin_named`): kept as written, like a named min_effect
    margin_named: bool = False
    threshold: float | None = None  # learning_speed: steps to reach this training reward
    budget_split: dict[str, float] = Field(default_factory=dict)  # phase -> share of budget
    # sequential seeds (`researcher.sequential`): this design is look `look` of up to
    # `max_looks`; its verdict reads the interval at that look's alpha-spending level
    look: int = Field(default=1, ge=1)
    max_looks: int = Field(default=1, ge=1)
    seeds_per_look: int = Field(default=1, ge=1)  # seeds per arm each later look adds
    # the smallest true difference (outcome units) this design detects with 80% power at
    # its last look, from the pilot's variance (None before a pilot measured it)
    mde: float | None = None
    # "pilot": the control arm's first seeds, checking the settings before the comparison
    phase: Literal["pilot", "main"] = "main"
    mde_basis: str = ""  # how `mde` was computed, in words
    pilot: Pilot | None = None
    parallel_runs: int | None = None  # runs trained at once, as chosen for this machine
    # the width of the rewards' range the pilot saw when they went beyond [0, 1] (a user's
    # workflow scoring 0-100): min_effect (and a default margin) were multiplied by it
    reward_scale: float | None = None

    def task_words(self, family: str) -> str:
        """A task as this design draws it: "countdown", or "countdown (level tiny)" at a
        level the question named."""
        params = self.task_params.get(family) or {}
        shown = ", ".join(f"{knob} {value}" for knob, value in params.items())
        return f"{family} ({shown})" if shown else family

    @property
    def eval_task(self) -> str:
        """The judged task in words (`task_words` of `eval_family`)."""
        return self.task_words(self.eval_family)

    def _own_steps(self) -> dict[str, int]:
        return {a.name: int(a.run.get("max_steps") or self.steps) for a in self.arms}

    @property
    def arm_steps(self) -> str:
        """The training steps per run: "40", or each arm's own when an arm sets `max_steps`
        ("10 (max_steps-10), 40 (max_steps-40)")."""
        own = self._own_steps()
        if len(set(own.values())) <= 1:
            return str(next(iter(own.values()), self.steps))
        return ", ".join(f"{steps} ({name})" for name, steps in own.items())

    @property
    def steps_words(self) -> str:
        """ "40 steps per run", or "steps per run: 10 (max_steps-10), 40 (max_steps-40)"."""
        if len(set(self._own_steps().values())) <= 1:
            return f"{self.arm_steps} steps per run"
        return f"steps per run: {self.arm_steps}"


class Pilot(BaseModel):
    """What the pilot found before the comparison ran (`researcher.pilot`): the control arm's
    first seeds at the design's settings. They show whether the task is learnable at these
    settings, what a step really costs, and how much seeds and held-out items vary — from
    which the minimum detectable effect is stated before the treatment runs."""

    runs: list[str] = Field(default_factory=list)  # the pilot's gateway runs
    steps: int = 0  # training steps each pilot run took
    step_seconds: float | None = None  # measured wall time of one training step
    learned: Literal["learned", "did not learn", "unclear"] = "unclear"
    evidence: str = ""  # the learned-or-not reason, in words, with its numbers
    seed_sd: float | None = None  # seed-to-seed SD of the outcome over the pilot's seeds
    item_sd: float | None = None  # item-to-item SD of held-out outcomes
    # settings the question leaves free that were changed because nothing learned:
    # {"lr": [2e-05, 6e-05]}; never the factor under study
    retuned: dict[str, list[Any]] = Field(default_factory=dict)
    kept: bool = True  # the pilot runs count as the control's first seeds (same settings)
    # the budget the pilot used per run: training, held-out evaluation and start-up
    run_seconds: float | None = None
    # the training work each pilot run was set to do, in episodes (steps x episodes a step;
    # `pilot.training_work`): what `run_seconds` is scaled from for an arm that trains more
    work: int | None = None
    # (lowest, highest) reward the pilot saw, held-out and in training, untrained baseline
    # included, when beyond [0, 1]; None when every reward lay within it
    reward_range: tuple[float, float] | None = None


class RunResult(BaseModel):
    """One arm × seed: its training curve and held-out outcomes."""

    arm: str
    seed: int
    run: str  # the gateway run name
    curve: list[tuple[int, float]] = Field(default_factory=list)  # (step, reward/mean)
    eval_outcomes: list[float] = Field(default_factory=list)  # per held-out task: 1.0 or 0.0
    wall_s: float | None = None  # the run's training wall time (outcome "cost")
    tokens: int | None = None  # tokens the run generated in training (outcome "cost")
    status: str = "finished"  # finished | failed | stopped | baseline (the untrained policy)
    note: str | None = None  # why it failed or was stopped
    # batches the trainer took but trained nothing from (every sample dropped), by reason
    # ({"zero_variance": 3}): not steps, and the first sign that an arm is not learning
    dropped_batches: dict[str, int] = Field(default_factory=dict)
    # a baseline's workflow PARAMS in a user-workflow study ({}: the control's, or none):
    # an arm is asked "did it learn?" against the baseline evaluated with its own PARAMS
    eval_params: dict[str, Any] = Field(default_factory=dict)


class Comparison(BaseModel):
    treatment: str
    control: str
    difference: float  # mean outcome (Design.outcome), treatment − control
    ci_low: float  # 95% interval of the difference
    ci_high: float
    effect_size: float  # Cohen's h for accuracy; otherwise see effect_measure (0.0: none)
    n_seeds: int
    effect_measure: str = "Cohen's h"  # what effect_size is, in words
    verdict: str | None = None  # this comparison's verdict by the design's rule
    decision_ci: tuple[float, float] | None = None  # the interval the verdict used (90% TOST,
    # Bonferroni-widened with several treatments, at a sequential look's level), when it
    # differs from the 95% one


class Trend(BaseModel):
    """A dose-response slope: the outcome against the arms' numeric levels (3+ levels)."""

    factor: str  # what the slope is per: "lr" or "log10(lr)"
    slope: float  # outcome units per unit of `factor`
    ci_low: float  # 95% interval of the slope
    ci_high: float
    change: float  # the fitted change from the control's level to the farthest level
    log_scale: bool = False
    n_runs: int = 0
    verdict: str | None = None


class Learning(BaseModel):
    """Did one arm learn? Its held-out mean against the untrained baseline (with the
    difference's 95% interval) and the trend of its training reward over steps (the slope
    with its 95% interval), read together into a verdict (see `researcher.learning`)."""

    verdict: Literal["learned", "did not learn", "unclear"]
    reason: str  # the verdict with its numbers, in words
    heldout: float | None = None  # the arm's mean held-out score over seeds
    baseline: float | None = None  # the untrained policy's held-out score it is compared with
    gain: float | None = None  # heldout − baseline
    gain_ci: tuple[float, float] | None = None  # 95% interval of the gain
    slope: float | None = None  # training reward per step, within seeds
    slope_ci: tuple[float, float] | None = None  # 95% interval of the slope
    rise: float | None = None  # the fitted change of training reward over the steps trained
    steps: int = 0  # the most training steps a seed of the arm logged


class Analysis(BaseModel):
    arm_means: dict[str, float]  # arm -> mean score on the design's outcome over seeds
    arm_ci: dict[str, tuple[float, float]]  # arm -> 95% interval
    comparisons: list[Comparison]
    # "not_testable": no arm learned, so the comparison says nothing about the hypothesis
    verdict: Literal["supported", "refuted", "inconclusive", "not_testable"]
    summary: str  # one paragraph in words, applying the design's decision rule
    outcome: str = "heldout_accuracy"  # what the arms were scored on (Design.outcome)
    outcome_label: str = "held-out accuracy"  # the outcome in words, with its unit
    direction: str = "greater"  # the hypothesis's direction (Design.direction)
    trend: Trend | None = None  # set for a dose-response design (3+ numeric levels)
    # the untrained policy (step 0) on the same held-out items: None when not evaluated
    baseline: float | None = None
    baseline_ci: tuple[float, float] | None = None  # 95% interval over its items
    baseline_n: int = 0  # held-out items it was scored on
    baseline_model: str | None = None  # the base model evaluated
    learned: dict[str, Learning] = Field(default_factory=dict)  # arm -> did it learn?
    # set when every run failed before it produced a score (why, in words): the verdict is
    # then "not_testable" for that reason, not because no arm learned
    failed_runs: str | None = None
    # what limits the verdict, as sentences the plain answer repeats after it: arms trained
    # unequal lengths (runs stopped early), a control at the ceiling of held-out accuracy
    caveats: list[str] = Field(default_factory=list)
    # the plain-language answer for the top of the report: "Yes: …, because …" / "No: …" /
    # "Can't tell: …"
    answer: str = ""


class Decision(BaseModel):
    action: Literal["conclude", "refine"]
    reason: str
    follow_up: Hypothesis | None = None  # set when action == "refine"
    conclusion: str | None = None  # set when action == "conclude"
