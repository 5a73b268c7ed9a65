"""Held-out evaluation of a trained policy through the gateway's OpenAI API.

Owns: `evaluate_policy` — a rollout on the first N tasks of a held-out "test" split, sent as
plain inference (no episode, so nothing is recorded or trained) to `model` (a run's
`<run>/<policy>` or a base model) at temperature 0 unless the rollout sets one, on top of
`swarm.evaluate`. Two kinds of outcome:

- a shipped family (`family=`): its reference rollout (`swarm.tasks.<family>`); each task
  scores 1.0 when its reward reaches 1.0, else 0.0 (accuracy = the mean);
- the user's own workflow (`workflow=` a workflow file: the arm's generated wrapper around
  it): each task's outcome is the workflow's own raw reward, so "accuracy" is the mean
  reward. It runs as `swarm eval --json` in a contained process of its own (the user's code
  never runs in the researcher, and one that hangs is ended after `timeout_s`); rollouts
  that fail are left out, and an evaluation where every one failed is an error.

Knows nothing of studies or the database.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
from pathlib import Path
from typing import Any

from researcher.errors import ResearcherError
from swarm.evaluate import run_evaluation, short_error
from swarm.tasks import family as task_family


class UnknownTaskFamily(ResearcherError):
    """The design names an eval family that `swarm.tasks` does not ship."""


class EvaluationFailed(ResearcherError):
    """The held-out evaluation produced no outcome (every rollout failed, or it hung)."""


def task_module(family: str):
    try:
        return task_family(family)
    except LookupError as error:
        raise UnknownTaskFamily(str(error)) from None


def held_out_available(family: str, at_most: int, params: dict[str, Any] | None = None) -> int:
    """How many of a shipped family's held-out ("test") tasks exist (drawn with `params`, a
    difficulty level), up to `at_most` (a procedural family's split may be endless): a design
    never promises more items than its evaluation can score. `at_most` for a family this
    cannot read."""
    try:
        drawn = task_module(family).tasks("test", seed=0, **(params or {}))
        return sum(1 for _ in itertools.islice(drawn, at_most))
    except Exception:  # an unknown family or one whose split needs parameters: not capped
        return at_most


def _evaluate_family(
    gateway_url: str,
    model: str,
    family: str,
    n: int,
    api_key: str | None,
    concurrency: int,
    params: dict[str, Any],
) -> list[float]:
    module = task_module(family)
    tasks = list(itertools.islice(module.tasks("test", seed=0, **params), n))
    evaluation = asyncio.run(
        run_evaluation(tasks, module.rollout, gateway_url=gateway_url, model=model,
                       api_key=api_key, concurrency=concurrency)
    )  # fmt: skip
    if evaluation.errors:  # a reference rollout raises only when the gateway is the trouble
        task_id, error = next(iter(evaluation.errors.items()))
        raise EvaluationFailed(f"held-out {family} task {task_id} failed: {short_error(error)}")
    return [1.0 if float(reward) >= 1.0 else 0.0 for reward in evaluation.scored]


def _evaluate_workflow(
    gateway_url: str,
    model: str,
    workflow: str,
    n: int,
    api_key: str | None,
    concurrency: int,
    timeout_s: float,
) -> list[float]:
    from researcher.launcher.local import client_env, run_contained

    path = Path(workflow)
    command = [
        sys.executable, "-m", "swarm.cli", "eval", str(path), "--gateway", gateway_url,
        "--model", model, "--split", "test", "--episodes", str(n),
        "--concurrency", str(concurrency), "--json",
    ]  # fmt: skip
    # plain inference on a gateway with an admin key needs that key (an episode key is for
    # recorded calls): the user's own workflow sees it, as the user's own `swarm eval` does
    env = client_env({"SWARMRL_API_KEY": api_key} if api_key else {})
    returncode, output = run_contained(command, cwd=path.parent, env=env, timeout_s=timeout_s)
    if returncode is None:
        raise EvaluationFailed(
            f"the held-out evaluation with {path.name} did not end within {timeout_s:g} s"
            f"\n{output[-2000:]}"
        )
    result = _last_json_object(output)
    if returncode != 0 or result is None:
        raise EvaluationFailed(
            f"swarm eval {path.name} exited {returncode}: {output.strip()[-2000:]}"
        )
    return [float(reward) for reward in result["rewards"]]


def _last_json_object(output: str) -> dict | None:
    for line in reversed(output.splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    return None


def evaluate_policy(
    gateway_url: str,
    model: str,
    *,
    family: str,
    n: int,
    api_key: str | None = None,
    concurrency: int = 8,
    workflow: str | None = None,
    timeout_s: float = 1800.0,
    params: dict[str, Any] | None = None,
) -> list[float]:
    """Per-task outcomes of `model` on the first `n` held-out tasks: of `family` drawn with
    `params` (a difficulty level; 1.0 / 0.0), or, with `workflow`, of that workflow file's
    `tasks("test")` (its raw rewards)."""
    if workflow is not None:
        return _evaluate_workflow(gateway_url, model, workflow, n, api_key, concurrency, timeout_s)
    return _evaluate_family(gateway_url, model, family, n, api_key, concurrency, params or {})
