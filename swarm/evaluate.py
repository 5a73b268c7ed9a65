"""Held-out evaluation: a workflow's own rollout on its test tasks, as plain inference.

Owns: `EvalEpisode` (what a rollout uses of `swarm.Episode` — `openai()`, `base_url`,
`api_key`, `model`, `models`, `env()`, `finish()` — bound to the gateway's OpenAI API
without an episode, so nothing is recorded or trained), its OpenAI client that samples at
temperature 0 unless the rollout sets one, `run_evaluation` (the rollout on each task at a
bounded concurrency: each task's reward, or the error it raised), `evaluate_workflow` (the
first N tasks of a workflow's split), `first_tasks`, `served_models`, and the summary
statistics `swarm eval` prints (`summarize`: the mean and a 95% interval — Wilson for 0/1
rewards, a percentile bootstrap otherwise).

A dict reward (`{policy: reward}`) scores the evaluated policy's entry (the part of the
model name after its run: `RUN/POLICY`), or the mean when it has no such entry. Must not
know about training runs, studies or the researcher. Never imports torch or numpy.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import math
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from swarm.episode import validate_reward
from swarm.errors import InvalidReward, WorkflowError
from swarm.workflow import RolloutFunction, Task, check_task, format_user_traceback, load_workflow

log = logging.getLogger(__name__)

DEFAULT_EPISODES = 100
BOOTSTRAP_RESAMPLES = 2000


class _GreedyCreate:
    """`create(**kwargs)` of a completions resource, with temperature 0 unless given."""

    def __init__(self, resource: Any):
        self._resource = resource

    async def create(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("temperature", 0.0)
        return await self._resource.create(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._resource, name)


class _GreedyChat:
    def __init__(self, chat: Any):
        self._chat = chat
        self.completions = _GreedyCreate(chat.completions)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._chat, name)


class GreedyOpenAI:
    """An `openai.AsyncOpenAI` whose `chat.completions.create` and `completions.create`
    sample at temperature 0 unless the call sets a temperature; everything else is the
    client's own."""

    def __init__(self, llm: Any):
        self._llm = llm
        self.chat = _GreedyChat(llm.chat)
        self.completions = _GreedyCreate(llm.completions)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llm, name)

    async def __aenter__(self) -> GreedyOpenAI:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._llm.close()


class EvalEpisode:
    """What a rollout uses of `swarm.Episode`, bound to plain inference on `model`.

    `finish(reward)` inside the rollout counts as its return value; `abort(reason)` as a
    failure. Its OpenAI client is closed when the task ends (`close()`).
    """

    evaluation = True  # a workflow may check this to tell held-out evaluation from training

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str,
        models: dict[str, str] | None = None,
        task_id: str = "",
    ):
        self.base_url = base_url
        self.api_key = api_key
        self.model = model
        self.models = dict(models or {policy_of(model): model})
        self.task_id = task_id
        self.episode_id = f"eval-{task_id}"
        self.policy_versions: dict[str, int] = {}
        self.status = "open"
        self.reward: Any = None
        self.abort_reason: str | None = None
        self._openai: GreedyOpenAI | None = None

    @property
    def is_open(self) -> bool:
        return self.status == "open"

    def env(self) -> dict[str, str]:
        return {"OPENAI_BASE_URL": self.base_url, "OPENAI_API_KEY": self.api_key}

    def openai(self, **options: Any) -> GreedyOpenAI:
        """As `swarm.Episode.openai`: the same client without options (closed at the end of
        the task), a new one the caller closes with options."""
        import openai

        if options:
            return GreedyOpenAI(
                openai.AsyncOpenAI(base_url=self.base_url, api_key=self.api_key, **options)
            )
        if self._openai is None:
            self._openai = GreedyOpenAI(
                openai.AsyncOpenAI(base_url=self.base_url, api_key=self.api_key, max_retries=3)
            )
        return self._openai

    async def finish(self, reward: Any, metrics: Any = None) -> None:
        self.reward, self.status = validate_reward(reward), "finished"

    async def abort(self, reason: str = "", **_options: Any) -> None:
        self.abort_reason, self.status = reason or "aborted by the rollout", "aborted"

    async def close(self) -> None:
        if self._openai is not None:
            llm, self._openai = self._openai, None
            await llm.close()


def policy_of(model: str) -> str:
    """`RUN/POLICY` → POLICY; a base model's name is its own policy name."""
    return model.split("/", 1)[1] if "/" in model else model


def score(reward: Any, policy: str) -> float:
    """A rollout's return value as one number: a float, or a dict's `policy` entry (the mean
    of its entries when it has none)."""
    checked = validate_reward(reward)
    if isinstance(checked, dict):
        if policy in checked:
            return checked[policy]
        return sum(checked.values()) / len(checked)
    return checked


@dataclass
class Evaluation:
    """Each task's reward, or the error its rollout ended with, in task order."""

    task_ids: list[str]
    rewards: list[float | None]  # None where the rollout failed
    errors: dict[str, str] = field(default_factory=dict)  # task id → the failure, in words

    @property
    def scored(self) -> list[float]:
        return [r for r in self.rewards if r is not None]


async def run_evaluation(
    tasks: Iterable[Task],
    rollout: RolloutFunction,
    *,
    gateway_url: str,
    model: str,
    api_key: str | None = None,
    models: dict[str, str] | None = None,
    concurrency: int = 8,
    timeout_s: float | None = None,
    on_done: Callable[[float | None], None] | None = None,
) -> Evaluation:
    """`rollout(task, EvalEpisode)` for every task, `concurrency` at once. A rollout that
    raises, aborts, times out or returns no reward is recorded as that task's error."""
    tasks = list(tasks)
    base_url = gateway_url.rstrip("/") + "/v1"
    key = api_key or "none"
    policy = policy_of(model)
    limit = asyncio.Semaphore(max(1, concurrency))
    evaluation = Evaluation([str(t["id"]) for t in tasks], [None] * len(tasks))

    async def one(index: int, task: Task) -> None:
        task_id = evaluation.task_ids[index]
        episode = EvalEpisode(
            base_url=base_url, api_key=key, model=model, models=models, task_id=task_id
        )
        async with limit:
            try:
                async with asyncio.timeout(timeout_s):
                    value = await rollout(task, episode)
                if episode.status == "aborted":
                    raise RuntimeError(f"the rollout aborted its episode: {episode.abort_reason}")
                evaluation.rewards[index] = score(
                    episode.reward if episode.status == "finished" else value, policy
                )
            except TimeoutError:
                evaluation.errors[task_id] = f"the rollout took over {timeout_s:g} s"
            except InvalidReward as error:
                evaluation.errors[task_id] = str(error)
            except Exception as error:  # the user's code: this task fails, the others go on
                evaluation.errors[task_id] = format_user_traceback(error)
            finally:
                await episode.close()
        if on_done is not None:
            on_done(evaluation.rewards[index])

    await asyncio.gather(*(one(i, task) for i, task in enumerate(tasks)))
    return evaluation


def first_tasks(tasks: Callable[..., Iterable[Task]], split: str, n: int) -> list[Task]:
    """The first `n` tasks of `tasks(split)` with distinct ids (a split that repeats ids,
    an endless generator over a small pool, is read up to `max(20n, 1000)` tasks for them);
    `WorkflowError` saying why when the workflow has no such split (it raised, or yielded
    nothing) or a task is not a dict with an id."""
    try:
        found: list[Task] = []
        seen: set[Any] = set()
        for task in itertools.islice(tasks(split), max(20 * n, 1000)):
            key = check_task(task, split)["id"]
            key = key if isinstance(key, str | int) else repr(key)  # a list id is no set key
            if key not in seen:
                seen.add(key)
                found.append(task)
                if len(found) == n:
                    break
    except WorkflowError:
        raise
    except Exception as error:
        raise WorkflowError(
            f"the workflow has no {split!r} split: tasks({split!r}) raised\n"
            f"{format_user_traceback(error)}"
        ) from error
    if not found:
        raise WorkflowError(
            f"the workflow has no {split!r} split: tasks({split!r}) yielded no tasks"
        )
    return [check_task(task, split) for task in found]


def _functions(workflow: ModuleType | str | Path) -> tuple[Callable[..., Iterable[Task]], Any]:
    if isinstance(workflow, (str, Path)):
        loaded = load_workflow(workflow)
        return loaded.tasks, loaded.rollout
    return workflow.tasks, workflow.rollout


def evaluate_workflow(
    workflow: ModuleType | str | Path,
    gateway_url: str,
    model: str,
    *,
    split: str = "test",
    episodes: int = DEFAULT_EPISODES,
    api_key: str | None = None,
    concurrency: int = 8,
    timeout_s: float | None = None,
) -> list[float]:
    """Each task's reward of `model` (`RUN/POLICY` or a base model) on the first `episodes`
    tasks of the workflow's `split`, at temperature 0 unless the rollout sets one. Tasks
    whose rollout failed are left out (logged as warnings); `swarm eval` counts them."""
    tasks, rollout = _functions(workflow)
    evaluation = asyncio.run(
        run_evaluation(
            first_tasks(tasks, split, episodes), rollout, gateway_url=gateway_url, model=model,
            api_key=api_key, concurrency=concurrency, timeout_s=timeout_s,
        )
    )  # fmt: skip
    for task_id, error in evaluation.errors.items():
        log.warning("task %s: %s", task_id, error)
    return evaluation.scored


async def served_models(gateway_url: str, api_key: str | None = None) -> list[str]:
    """The ids of the gateway's `GET /v1/models` (base models and runs' policies)."""
    import openai

    async with openai.AsyncOpenAI(
        base_url=gateway_url.rstrip("/") + "/v1", api_key=api_key or "none", max_retries=2
    ) as llm:
        return [card.id async for card in llm.models.list()]


def run_models(model: str, served: Iterable[str]) -> dict[str, str]:
    """Every policy of `model`'s run that the gateway serves (policy → model name), so a
    team's rollout finds its other policies in `episode.models` too."""
    if "/" not in model:
        return {model: model}
    run = model.split("/", 1)[0]
    found = {policy_of(name): name for name in served if name.startswith(run + "/")}
    return {**found, policy_of(model): model}


# -- summary statistics -----------------------------------------------------------------------


@dataclass(frozen=True)
class Summary:
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    interval: str  # "wilson" (every reward 0 or 1), "bootstrap", or "none"


def summarize(rewards: list[float], *, seed: int = 0) -> Summary:
    """The mean reward and a 95% interval of it."""
    n = len(rewards)
    if n == 0:
        return Summary(None, None, None, 0, "none")
    mean = sum(rewards) / n
    if all(r in (0.0, 1.0) for r in rewards):
        low, high = wilson_interval(sum(rewards), n)
        return Summary(mean, low, high, n, "wilson")
    low, high = bootstrap_interval(rewards, seed=seed)
    return Summary(mean, low, high, n, "bootstrap")


def wilson_interval(successes: float, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval of a proportion (95% by default)."""
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def bootstrap_interval(
    values: list[float], *, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0
) -> tuple[float, float]:
    """The percentile bootstrap 95% interval of the mean (deterministic for a seed)."""
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(rng.choices(values, k=n)) / n for _ in range(resamples))
    return means[int(0.025 * (resamples - 1))], means[int(math.ceil(0.975 * (resamples - 1)))]


def short_error(text: str) -> str:
    """The last line of a traceback (the error itself)."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else text
