"""The planner interface: what the graph asks of whoever designs the experiments.

Two implementations: `TemplatePlanner` (deterministic, from the task catalogue and
`prompts/workflows/`) and `LLMPlanner` (any OpenAI-compatible chat endpoint). Both return
the typed records of `researcher.plan`. Must not know about LangGraph, the gateway's HTTP
API or the database.
"""

from __future__ import annotations

from typing import Any, Protocol

from researcher.plan import Analysis, Arm, Decision, Design, Framing, Hypothesis


class Planner(Protocol):
    name: str  # "template" or "llm:<model>@<url>": every report says who planned

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
        """The question read (`Framing.reading`) and restated, on a served model. With
        `workflow` (the user's workflow file, absolute path) and its `workflow_params`
        (its PARAMS defaults) the study trains that workflow: the reading's task is
        "workflow" and its factor may be "workflow:<PARAM>"; a workflow without a test
        split (`workflow_has_test` False) is refused (`UnreadableQuestion`);
        `workflow_test_size` (the tasks its test split holds) bounds the held-out tasks each
        run is judged on."""
        ...

    def hypotheses(self, framing: Framing, *, notes: list[str]) -> list[Hypothesis]: ...

    def design(
        self,
        framing: Framing,
        hypothesis: Hypothesis,
        *,
        budget_s: float,
        seeds: int,
        step_seconds: float,
        notes: list[str],
    ) -> Design: ...

    def write_workflow(
        self, framing: Framing, design: Design, arm: Arm, *, seed: int, feedback: str | None = None
    ) -> str:
        """The Python source of a workflow file (DESIGN.md's contract) for one arm × seed."""
        ...

    def decide(
        self,
        framing: Framing,
        hypothesis: Hypothesis,
        analysis: Analysis,
        *,
        notes: list[str],
        budget_left_s: float,
        round: int,
    ) -> Decision: ...
