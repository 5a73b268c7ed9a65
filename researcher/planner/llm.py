"""`LLMPlanner`: the planner on any OpenAI-compatible chat endpoint.

Each step renders a prompt from `prompts/planner/*.j2` (the workflow contract and the task
catalogue included), asks for one JSON object (or one ```python block for workflow code),
and parses it into the `researcher.plan` records. An unusable answer — invalid JSON, a
record that fails validation, code that does not parse, lacks `tasks` or an async `rollout`,
or imports something that is not installed — is sent back with the problem, at most
`max_attempts` times in all; then `PlannerOutputError` carries the last problem.

Must not know about LangGraph, the gateway's HTTP API or the database.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

import openai
from pydantic import ValidationError

import prompts
from researcher.errors import PlannerOutputError, UnmappableQuestion
from researcher.plan import Analysis, Arm, Decision, Design, Framing, Hypothesis
from researcher.planner import budget
from researcher.planner.families import FAMILIES, TASKS, unmappable_message
from researcher.planner.template import MAX_ROUNDS, check_question

T = TypeVar("T")
_PYTHON_BLOCK = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)


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
        self, question: str, *, served_models: list[str], model: str | None = None
    ) -> Framing:
        text = check_question(question)

        def parse(answer: str) -> Framing:
            fields = _json_object(answer)
            if "unmappable" in fields:
                raise UnmappableQuestion(
                    unmappable_message(text, planner=f"The planner {self.name}")
                    + f"\nIts reason: {fields['unmappable']}"
                )
            framing = Framing.model_validate(
                {
                    **fields,
                    "question": text,
                    "planner": self.name,
                    "served_models": list(served_models),
                }
            )
            if framing.model not in served_models:
                raise Unusable(
                    f"model {framing.model!r} is not served; pick one of {served_models}"
                )
            return framing

        prompt = self._render(
            "planner/frame.j2", question=text, served_models=served_models, model=model
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
        runs = 2 * max(1, seeds)

        def parse(answer: str) -> Design:
            design = Design.model_validate(_json_object(answer))
            roles = [arm.role for arm in design.arms]
            if roles.count("control") != 1 or "treatment" not in roles:
                raise Unusable("a design needs exactly one control arm and at least one treatment")
            unknown = {f for arm in design.arms for f in arm.tasks} - set(TASKS)
            if unknown or design.eval_family not in TASKS:
                raise Unusable(
                    f"tasks and eval_family must be shipped families ({', '.join(TASKS)}); "
                    f"got {sorted(unknown | {design.eval_family} - set(TASKS))}"
                )
            if not design.seeds or design.steps < 1 or design.eval_episodes < 1:
                raise Unusable("seeds must be non-empty; steps and eval_episodes at least 1")
            if design.hypothesis != hypothesis.key:
                raise Unusable(f"hypothesis must be {hypothesis.key!r}")
            return design

        prompt = self._render(
            "planner/design.j2",
            framing=framing,
            hypothesis=hypothesis,
            notes=notes,
            budget_s=budget_s,
            step_seconds=step_seconds,
            seeds=seeds,
            seed_list=list(range(max(1, seeds))),
            steps=budget.steps_for(budget_s, runs, step_seconds),
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
    ) -> Decision:
        def parse(answer: str) -> Decision:
            decision = Decision.model_validate(_json_object(answer))
            if decision.action == "refine":
                if decision.follow_up is None:
                    raise Unusable('"refine" needs a follow_up hypothesis')
                if round >= MAX_ROUNDS:
                    raise Unusable(f"round {round} is the last ({MAX_ROUNDS}): conclude")
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
            max_rounds=MAX_ROUNDS,
        )
        return self._ask(prompt, parse)

    # -- asking -------------------------------------------------------------------------------

    @staticmethod
    def _render(name: str, **variables: Any) -> str:
        return prompts.render(
            name,
            tasks=list(TASKS.values()),
            families=[family.key for family in FAMILIES],
            **variables,
        )

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
