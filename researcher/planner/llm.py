"""`LLMPlanner`: the planner on any OpenAI-compatible chat endpoint.

Each step renders a prompt from `prompts/planner/*.j2` (the workflow contract and the task
catalogue included), asks for one JSON object (or one ```python block for workflow code),
and parses it into the `researcher.plan` records. Framing asks for the same `Reading` the
template planner gives (factor, levels, control, task, outcome, direction, margin), checked
against the same schema and catalogue; a design must give one arm per level, and each arm's
settings carry its level where the factor lives. An unusable answer — invalid JSON, a
reading or record that fails validation, arms that do not match the levels, code that does
not parse, lacks `tasks` or an async `rollout`, or imports something that is not installed —
is sent back with the problem, at most `max_attempts` times in all; then
`PlannerOutputError` carries the last problem.

Must not know about LangGraph, the gateway's HTTP API or the database.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
from collections.abc import Callable
from typing import Any, TypeVar, get_args

import openai
from pydantic import ValidationError

import prompts
from researcher.errors import (
    PlannerOutputError,
    ResearcherError,
    UnmappableQuestion,
    UnreadableQuestion,
)
from researcher.plan import (
    Analysis,
    Arm,
    Decision,
    Design,
    Direction,
    Framing,
    Hypothesis,
    Level,
    Outcome,
    Reading,
)
from researcher.planner import budget, wording
from researcher.planner.catalogue import (
    FACTORS,
    TASKS,
    WORKFLOW_PREFIX,
    WORKFLOW_TASK,
    Factor,
    check_reading,
    describe_level,
    is_task,
    reading_task_params,
)
from researcher.planner.design_space import factor_kind, lora_rank
from researcher.planner.learnability import with_prior
from researcher.planner.reader import DEFAULT_MARGIN
from researcher.planner.template import MAX_ROUNDS, check_question, look_of, not_testable_decision

T = TypeVar("T")
_PYTHON_BLOCK = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)
ASK_LIKE = "does a KL penalty of 0.5 slow learning on the easy single-turn task?"


class Unusable(ValueError):
    """An answer the planner cannot use; its message goes back to the model."""


class LLMPlanner:
    def __init__(
        self,
        base_url: str,
        api_key: str,
        model: str,
        *,
        client: Any = None,
        max_attempts: int = 3,
    ) -> None:
        assert max_attempts >= 1
        self.name = f"llm:{model}@{base_url}"
        self.model = model
        self.max_attempts = max_attempts
        self.client = client or openai.OpenAI(base_url=base_url, api_key=api_key)

    # -- the planner interface ---------------------------------------------------------------

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
        text = check_question(question)
        if not served_models:
            raise ResearcherError("the gateway serves no models: nothing to train")
        params = dict(workflow_params or {})
        if workflow and not workflow_has_test:
            raise UnreadableQuestion(
                f"your workflow {workflow} has no test split: the held-out evaluation runs "
                f"its rollout on tasks('test'), so `tasks(split)` must yield tasks for "
                f"split='test' (kept apart from split='train')"
            )

        def parse(answer: str) -> Framing:
            fields = _json_object(answer)
            if "unmappable" in fields:
                raise UnmappableQuestion(self._refusal(text, str(fields["unmappable"])))
            if not isinstance(fields.get("reading"), dict):
                raise Unusable(
                    'expected {"reading": {...}, "model": ..., "summary": ...} '
                    'or {"unmappable": "<why>"}'
                )
            reading = _checked_reading(
                Reading.model_validate(fields["reading"]),
                served_models=served_models,
                workflow_params=params if workflow else None,
            )
            framing = Framing.model_validate(
                {
                    "summary": fields.get("summary") or reading.summary,
                    "model_requested": fields.get("model_requested"),
                    # a study of base models trains each arm's; the control's names it
                    "model": (
                        reading.control if reading.factor == "base_model" else fields.get("model")
                    ),
                    "substitution": fields.get("substitution"),
                    "question": text,
                    "family": reading.factor,
                    "planner": self.name,
                    "served_models": list(served_models),
                    "reading": reading,
                    "workflow": workflow,
                    "workflow_params": params,
                    "workflow_test_size": workflow_test_size if workflow else None,
                }
            )
            if framing.model not in served_models:
                raise Unusable(
                    f"model {framing.model!r} is not served; pick one of {served_models}"
                )
            reading_ = with_prior(reading, framing.model)
            if workflow and workflow_test_size is not None:
                reading_ = wording.with_small_test_split(reading_, workflow_test_size)
            if workflow:
                from researcher.user_workflow import with_sampling_reach

                reading_ = with_sampling_reach(reading_, workflow, params)
            return framing.model_copy(update={"reading": reading_})

        prompt = self._render(
            "planner/frame.j2",
            question=text,
            served_models=served_models,
            model=model,
            factors={name: _factor_line(factor) for name, factor in FACTORS.items()},
            outcomes=list(get_args(Outcome)),
            directions=list(get_args(Direction)),
            default_margin=DEFAULT_MARGIN,
            workflow=workflow,
            workflow_params=params,
        )
        return self._ask(prompt, parse)

    def hypotheses(self, framing: Framing, *, notes: list[str]) -> list[Hypothesis]:
        def parse(answer: str) -> list[Hypothesis]:
            found = _json_object(answer).get("hypotheses")
            if not isinstance(found, list) or not found:
                raise Unusable('expected {"hypotheses": [...]} with at least one hypothesis')
            return [Hypothesis.model_validate(item) for item in found]

        return self._ask(self._render("planner/hypotheses.j2", framing=framing, notes=notes), parse)

    def design(
        self,
        framing: Framing,
        hypothesis: Hypothesis,
        *,
        budget_s: float,
        seeds: int,
        step_seconds: float,
        notes: list[str],
    ) -> Design:
        reading = framing.reading
        runs = (len(reading.levels) if reading else 2) * max(1, seeds)
        steps = budget.steps_for(budget_s, runs, step_seconds)
        if reading is not None and reading.steps:
            steps = reading.steps
        families = set(TASKS) | ({WORKFLOW_TASK} if framing.workflow else set())
        if reading is not None:  # a reasoning-gym dataset the question named
            families |= {task for task in reading.tasks if is_task(task)}

        def parse(answer: str) -> Design:
            design = Design.model_validate(_json_object(answer))
            # every round is one look of the sequential rule, whatever the model said
            design = design.model_copy(
                update={"look": look_of(hypothesis), "max_looks": MAX_ROUNDS}
            )
            if framing.workflow and framing.workflow_test_size:  # never more than it holds
                eval_episodes = min(design.eval_episodes, framing.workflow_test_size)
                design = design.model_copy(update={"eval_episodes": eval_episodes})
            if reading is not None:
                design = with_reading(design, reading)
            roles = [arm.role for arm in design.arms]
            if roles.count("control") != 1 or "treatment" not in roles:
                raise Unusable("a design needs exactly one control arm and at least one treatment")
            unknown = {f for arm in design.arms for f in arm.tasks} - families
            if unknown or design.eval_family not in families:
                raise Unusable(
                    f"tasks and eval_family must be shipped families ({', '.join(families)}); "
                    f"got {sorted(unknown | {design.eval_family} - families)}"
                )
            if not design.seeds or design.steps < 1 or design.eval_episodes < 1:
                raise Unusable("seeds must be non-empty; steps and eval_episodes at least 1")
            if design.hypothesis != hypothesis.key:
                raise Unusable(f"hypothesis must be {hypothesis.key!r}")
            return design

        prompt = self._render(
            "planner/design.j2",
            framing=framing,
            reading=reading,
            hypothesis=hypothesis,
            notes=notes,
            budget_s=budget_s,
            step_seconds=step_seconds,
            seeds=seeds,
            seed_list=list(range(max(1, seeds))),
            arms=runs // max(1, seeds),
            steps=steps,
            eval_episodes=budget.eval_episodes_for(budget_s, runs, step_seconds, 16),
            budget_split=budget.BUDGET_SPLIT,
        )
        return self._ask(prompt, parse)

    def write_workflow(
        self, framing: Framing, design: Design, arm: Arm, *, seed: int, feedback: str | None = None
    ) -> str:
        prompt = self._render(
            "planner/workflow.j2",
            framing=framing,
            design=design,
            arm=arm,
            seed=seed,
            feedback=feedback,
            planner=self.name,
        )
        return self._ask(prompt, checked_workflow, code=True)

    def decide(
        self,
        framing: Framing,
        hypothesis: Hypothesis,
        analysis: Analysis,
        *,
        notes: list[str],
        budget_left_s: float,
        round: int,
        design: Design | None = None,
    ) -> Decision:
        """The model weighs the analysis; it may refine (the next look) while looks remain:
        the design's (`look` < `max_looks`, sized after the pilot), else MAX_ROUNDS rounds."""
        if analysis.verdict == "not_testable":  # no arm learned: nothing for the model to weigh
            return not_testable_decision(hypothesis, analysis)
        last = MAX_ROUNDS
        if design is not None:  # the pilot round is no look: count looks, not rounds
            round, last = design.look, design.max_looks

        def parse(answer: str) -> Decision:
            decision = Decision.model_validate(_json_object(answer))
            if decision.action == "refine":
                if decision.follow_up is None:
                    raise Unusable('"refine" needs a follow_up hypothesis')
                if round >= last:
                    raise Unusable(f"round {round} is the last ({last}): conclude")
            elif not decision.conclusion:
                raise Unusable('"conclude" needs a conclusion sentence')
            return decision

        prompt = self._render(
            "planner/decide.j2",
            framing=framing,
            hypothesis=hypothesis,
            analysis=analysis,
            notes=notes,
            budget_left_s=budget_left_s,
            round=round,
            max_rounds=last,
        )
        return self._ask(prompt, parse)

    # -- asking -------------------------------------------------------------------------------

    def _refusal(self, question: str, why: str) -> str:
        return (
            f"The planner {self.name} cannot read {question!r} as a training experiment: "
            f"{why}\nAsk about one run setting (lr, kl_coef, group_size, lora, ...), sampling "
            f"setting, task mix, base model or workflow PARAM, on a task, judged by an outcome, "
            f"e.g. {ASK_LIKE!r}."
        )

    @staticmethod
    def _render(name: str, **variables: Any) -> str:
        return prompts.render(name, tasks=list(TASKS.values()), **variables)

    def _ask(self, prompt: str, parse: Callable[[str], T], *, code: bool = False) -> T:
        messages = [
            {"role": "system", "content": prompts.render("planner/system.j2")},
            {"role": "user", "content": prompt},
        ]
        problem = "no answer"
        for _ in range(self.max_attempts):
            try:
                response = self.client.chat.completions.create(
                    model=self.model, messages=messages, temperature=0.0
                )
            except openai.OpenAIError as error:
                raise PlannerOutputError(f"{self.name} could not be asked: {error}") from error
            answer = (response.choices[0].message.content or "") if response.choices else ""
            try:
                return parse(answer)
            except (Unusable, ValidationError) as error:
                problem = str(error)
            messages += [
                {"role": "assistant", "content": answer},
                {
                    "role": "user",
                    "content": prompts.render("planner/retry.j2", error=problem, code=code),
                },
            ]
        raise PlannerOutputError(
            f"{self.name} gave no usable answer in {self.max_attempts} attempt(s); "
            f"the last problem: {problem}"
        )


def _factor_line(factor: Factor) -> str:
    """A factor for the frame prompt: "the KL coefficient; default 0; >= 0 and <= 1000"."""
    default = describe_level(factor.name, factor.default)
    limits = factor.bounds_text() or ", ".join(factor.choices)
    return "; ".join(
        part for part in (factor.what, default != "None" and f"default {default}", limits) if part
    )


def _checked_reading(
    reading: Reading, *, served_models: list[str], workflow_params: dict[str, Any] | None
) -> Reading:
    """The reading, once it names a known factor with levels in bounds on a known task."""
    try:
        return check_reading(reading, served_models=served_models, workflow_params=workflow_params)
    except ResearcherError as error:
        raise Unusable(f"the reading does not fit the catalogue: {error}") from error


def with_reading(design: Design, reading: Reading) -> Design:
    """`design` with one arm per level of `reading` (control first), each arm's settings at
    its level wherever the factor lives, and the reading's outcome, direction, margin,
    threshold, judged task (and steps, when the question fixes them)."""
    steps = reading.steps or design.steps
    by_level: dict[str, Arm] = {}
    for arm in design.arms:
        level = arm.level if arm.level is not None else level_of(arm, reading.factor)
        key = _level_key(level)
        if key in by_level:
            raise Unusable(f"two arms have the level {level!r}: one arm per level")
        by_level[key] = arm.model_copy(update={"level": level})
    wanted = {_level_key(level): level for level in reading.levels}
    if set(by_level) != set(wanted):
        got = [arm.level for arm in by_level.values()]
        raise Unusable(
            f"the arms' levels of {reading.factor} are {got}; give exactly one arm per level "
            f'of the reading, {reading.levels}, each with its "level"'
        )
    arms = []
    for key, level in wanted.items():
        arm = at_level(by_level[key], reading.factor, level)
        role = "control" if _level_key(level) == _level_key(reading.control) else "treatment"
        run = {**arm.run, "max_steps": steps, "task_mix": dict(arm.tasks)}
        if reading.task == WORKFLOW_TASK:
            run.pop("task_mix")  # the user's workflow tags no task families to weigh
        arms.append(arm.model_copy(update={"role": role, "run": run}))
    named = {}  # the question's own smallest effect, whatever the model chose
    if reading.min_effect is not None and reading.outcome != "cost":
        named = {"min_effect": wording.min_effect_for(reading, steps), "min_effect_named": True}
    fixed = design.model_copy(
        update={
            **named,
            "arms": arms,
            "steps": steps,
            "eval_family": reading.task,
            "task_params": reading_task_params(reading),
            "metric": "mean reward" if reading.task == WORKFLOW_TASK else "accuracy",
            "outcome": reading.outcome,
            "direction": reading.direction,
            "margin": reading.margin,
            "margin_named": reading.margin_named,
            "threshold": reading.threshold,
            "effect_units": reading.effect_units if reading.outcome != "cost" else None,
        }
    )
    # the rule the analysis applies, whatever words the model chose
    return fixed.model_copy(update={"decision_rule": wording.decision_rule(reading, fixed)})


def at_level(arm: Arm, factor: str, level: Level) -> Arm:
    """`arm` set to `level` of `factor` where that factor lives (`design_space.factor_kind`):
    a `POST /runs` field or the base model in `run`; `lora` as {"r", "alpha": 2r} in `run`
    (full fine-tuning: none); sampling settings and workflow PARAMS in `workflow_params`
    (a None level: the setting's own default, so no key); `task_mix` as the arm's tasks."""
    run, params, tasks = dict(arm.run), dict(arm.workflow_params), dict(arm.tasks)
    kind = factor_kind(factor)
    if kind == "lora":
        run.pop("lora", None)
        if (rank := lora_rank(level)) is not None:
            run["lora"] = dict(level) if isinstance(level, dict) else {"r": rank, "alpha": 2 * rank}
    elif kind == "workflow":
        params.pop(factor.removeprefix(WORKFLOW_PREFIX), None)
        if level is not None:
            params[factor.removeprefix(WORKFLOW_PREFIX)] = level
    elif kind == "task_mix":
        assert isinstance(level, dict), level  # check_reading made it a {task: weight} mix
        tasks = {family: float(weight) for family, weight in level.items()}
    elif level is None:
        run.pop(factor, None)
    else:
        run[factor] = level
    return arm.model_copy(
        update={"run": run, "workflow_params": params, "tasks": tasks, "level": level}
    )


def level_of(arm: Arm, factor: str) -> Level:
    """The level of `factor` an arm's settings hold (the inverse of `at_level`)."""
    kind = factor_kind(factor)
    if kind == "lora":
        return lora_rank(arm.run.get("lora")) or "full"
    if kind == "workflow":
        return arm.workflow_params.get(factor.removeprefix(WORKFLOW_PREFIX))
    if kind == "task_mix":
        return dict(arm.tasks)
    return arm.run.get(factor)


def _level_key(level: Level) -> str:
    """A level's identity: 0 and 0.0 are one level, so are {"a": 1} and {"a": 1.0}."""

    def plain(value: Any) -> Any:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, dict):
            return {str(k): plain(v) for k, v in value.items()}
        return value

    return json.dumps(plain(level), sort_keys=True)


def _json_object(answer: str) -> dict[str, Any]:
    """The JSON object in an answer (a ```json fence or prose around it is tolerated)."""
    start, end = answer.find("{"), answer.rfind("}")
    if start < 0 or end < start:
        raise Unusable("no JSON object found")
    try:
        value = json.loads(answer[start : end + 1])
    except json.JSONDecodeError as error:
        raise Unusable(f"invalid JSON: {error}") from error
    if not isinstance(value, dict):
        raise Unusable("expected a JSON object")
    return value


def checked_workflow(answer: str) -> str:
    """The workflow source in an answer, if it parses, defines `tasks` and an async `rollout`
    at top level, and every module it imports at top level is installed."""
    blocks = _PYTHON_BLOCK.findall(answer)
    if len(blocks) != 1:
        raise Unusable(f"expected exactly one ```python block, found {len(blocks)}")
    source = blocks[0]
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        raise Unusable(f"the code does not parse: {error}") from error
    defined = {node.name: node for node in tree.body if hasattr(node, "name")}
    if not isinstance(defined.get("tasks"), ast.FunctionDef | ast.AsyncFunctionDef):
        raise Unusable("the code must define a top-level function tasks(split='train')")
    if not isinstance(defined.get("rollout"), ast.AsyncFunctionDef):
        raise Unusable("the code must define a top-level `async def rollout(task, episode)`")
    for node in tree.body:
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            if not _importable(name):
                raise Unusable(f"the code imports {name!r}, which is not installed")
    return source


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False
