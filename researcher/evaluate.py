"""Held-out evaluation of a trained policy through the gateway's OpenAI API.

Owns: `evaluate_policy` — the eval family's reference rollout (`swarm.tasks.<family>`) on
the first N tasks of its held-out "test" split, sent as plain inference (no episode, so
nothing is recorded or trained) to `model` (a run's `<run>/<policy>` or a base model), at
temperature 0 unless the rollout sets one. Each task scores 1.0 when its reward reaches
1.0, else 0.0. Knows nothing of studies or the database.
"""

from __future__ import annotations

import asyncio
import importlib
import itertools
from typing import Any

import openai

from researcher.errors import ResearcherError


class UnknownTaskFamily(ResearcherError):
    """The design names an eval family that `swarm.tasks` does not ship."""


class _Greedy:
    """`chat.completions.create` with temperature 0 unless the rollout asks otherwise."""

    def __init__(self, llm: openai.AsyncOpenAI):
        self._llm = llm
        self.chat = self
        self.completions = self

    async def create(self, **kwargs: Any):
        kwargs.setdefault("temperature", 0.0)
        return await self._llm.chat.completions.create(**kwargs)


class EvalEpisode:
    """What a reference rollout uses of `swarm.Episode`, bound to plain inference."""

    def __init__(self, llm: openai.AsyncOpenAI, base_url: str, api_key: str, model: str):
        self._llm = _Greedy(llm)
        self.base_url = base_url
        self.api_key = api_key
        self.model = model
        self.models = {"policy": model}

    def openai(self, **_options: Any) -> _Greedy:
        return self._llm


def task_module(family: str):
    try:
        return importlib.import_module(f"swarm.tasks.{family}")
    except ModuleNotFoundError:
        raise UnknownTaskFamily(f"no task family {family!r} in swarm.tasks") from None


async def _evaluate(
    gateway_url: str, model: str, family: str, n: int, api_key: str | None, concurrency: int
) -> list[float]:
    module = task_module(family)
    tasks = list(itertools.islice(module.tasks("test", seed=0), n))
    base_url = gateway_url.rstrip("/") + "/v1"
    key = api_key or "none"
    limit = asyncio.Semaphore(concurrency)
    async with openai.AsyncOpenAI(base_url=base_url, api_key=key, max_retries=3) as llm:
        episode = EvalEpisode(llm, base_url, key, model)

        async def one(task: dict) -> float:
            async with limit:
                reward = await module.rollout(task, episode)
            return 1.0 if float(reward) >= 1.0 else 0.0

        return list(await asyncio.gather(*(one(task) for task in tasks)))


def evaluate_policy(
    gateway_url: str,
    model: str,
    *,
    family: str,
    n: int,
    api_key: str | None = None,
    concurrency: int = 8,
) -> list[float]:
    """Per-task outcomes (1.0 / 0.0) of `model` on the first `n` held-out tasks of `family`."""
    return asyncio.run(_evaluate(gateway_url, model, family, n, api_key, concurrency))
