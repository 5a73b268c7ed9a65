"""`reasoning_gym`: any of reasoning-gym's ~100 procedural datasets as a task family.

`tasks(split, seed, n, dataset="chain_sum", **params)` draws items of the named dataset with
its own difficulty knobs as `params` (e.g. `dataset="countdown", min_numbers=3`); the split
is a function of the question text (`swarm.tasks.splits`), so train and test are disjoint
for every seed and every difficulty level. The prompt asks the model to end its reply with
"Answer: <answer>"; `extract_answer` reads that line out of the reply and `reward` is the
dataset's own `score_answer` on it (never a re-implementation), or 0.0 when the reply has no
answer in it. Some scorers give partial credit: countdown's pays 0.05 for a wrong
expression over the right numbers and 0.01 for one that does not parse; the library's
default scorer gives len(right) / len(given) to an answer that contains the right one.

Generation is offline and fast (items are built from `Random(seed + index)`; nothing is
downloaded). `countdown`, `chain_sum`, `basic_arithmetic` and `letter_counting` are the
first-class families built on this module, each with named difficulty levels.

Must not know about the gateway: the rollout uses only `Episode`. reasoning-gym is imported
on first use, so `import swarm.tasks.reasoning_gym` stays cheap.
"""

from __future__ import annotations

import functools
import importlib
import json
import re
from collections.abc import Iterator
from typing import Any

from swarm.tasks.splits import check_split, rng_for, split_of, task_id

FAMILY = "reasoning_gym"
DEFAULT_DATASET = "chain_sum"
MAX_TOKENS = 128
SYSTEM_PROMPT = (
    "Solve the problem. Keep it short. End your reply with a line of the form "
    "'Answer: <your answer>'."
)
INDEX_SPACE = 100_000  # items are drawn from this many indices of the dataset
DEFAULT_N = 1000  # tasks per call when `n` is None (fewer when the split has fewer)
GIVE_UP_AFTER = 2000  # consecutive draws with nothing new: the split is exhausted

_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.IGNORECASE | re.DOTALL)
_ANSWER_LINE = re.compile(r"\banswer\s*(?:is\s*)?[:=]\s*(.+)", re.IGNORECASE)
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def _import(module: str):
    """reasoning-gym's `module`; it is optional in the client-only install (client/)."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as missing:
        if missing.name != "reasoning_gym":
            raise
        raise ModuleNotFoundError(
            "the reasoning-gym task families need reasoning-gym: pip install 'reasoning-gym"
            ">=0.1.25,<0.2' (or the client with its tasks extra: pip install './client[tasks]')",
            name="reasoning_gym",
        ) from missing


def _library():
    return _import("reasoning_gym")


def dataset_names() -> list[str]:
    """Every dataset name `dataset=` accepts."""
    return sorted(_import("reasoning_gym.factory").DATASETS)


@functools.lru_cache(maxsize=64)
def _dataset(dataset: str, config_json: str):
    config = json.loads(config_json)
    if dataset not in dataset_names():
        raise ValueError(
            f"no reasoning-gym dataset {dataset!r}; known: {', '.join(dataset_names())}"
        )
    try:
        return _library().create_dataset(dataset, seed=0, size=INDEX_SPACE, **config)
    except (TypeError, AssertionError, ValueError) as error:  # an unknown or bad knob
        raise ValueError(f"reasoning-gym {dataset} with {config}: {error}") from None


def dataset_for(dataset: str, config: dict[str, Any]):
    """The reasoning-gym dataset object of `dataset` with difficulty knobs `config`."""
    return _dataset(dataset, json.dumps(config, sort_keys=True))


def _plain(value: Any) -> Any:
    """A JSON-shaped copy (tuples become lists) so a task survives a round trip unchanged."""
    return json.loads(json.dumps(value, default=str))


def draw(
    family: str,
    dataset: str,
    split: str,
    seed: int,
    n: int | None,
    config: dict[str, Any],
    max_tokens: int,
) -> Iterator[dict[str, Any]]:
    """`n` distinct tasks of `split` from reasoning-gym's `dataset` with knobs `config`;
    `n=None`: up to DEFAULT_N, fewer when the split has fewer. Raises ValueError when an
    explicit `n` is more than the split has."""
    split = check_split(split)
    source = dataset_for(dataset, config)
    rng = rng_for(f"{family}/{dataset}", split, seed)
    wanted = DEFAULT_N if n is None else n
    seen: set[str] = set()
    misses = 0
    while len(seen) < wanted:
        entry = source[rng.randrange(INDEX_SPACE)]
        key = entry["question"]
        if key in seen or split_of(family, key) != split:
            misses += 1
            if misses > GIVE_UP_AFTER:
                if n is None:
                    return
                raise ValueError(
                    f"{family}: only {len(seen)} distinct {split} tasks, asked for {n}"
                )
            continue
        misses = 0
        seen.add(key)
        yield {
            "id": task_id(family, key),
            "family": family,
            "dataset": dataset,
            "config": _plain(config),
            "question": entry["question"],
            "answer": str(entry["answer"]),
            "metadata": _plain(entry.get("metadata", {})),
            "max_tokens": max_tokens,
        }


def draw_at_level(
    family: str,
    dataset: str,
    levels: dict[str, dict[str, Any]],
    level: str,
    split: str,
    seed: int,
    n: int | None,
    params: dict[str, Any],
    max_tokens: int,
) -> Iterator[dict[str, Any]]:
    """`draw` for a first-class family: `level`'s knobs (one of `levels`), with `params`
    overriding them; an unknown level is a ValueError naming the known ones."""
    if level not in levels:
        raise ValueError(f"{family}: unknown level {level!r}; known: {', '.join(levels)}")
    return draw(family, dataset, split, seed, n, {**levels[level], **params}, max_tokens)


def tasks(
    split: str = "train",
    seed: int = 0,
    n: int | None = None,
    dataset: str = DEFAULT_DATASET,
    **params: Any,
) -> Iterator[dict[str, Any]]:
    """Tasks of any reasoning-gym `dataset`; `params` are its config's difficulty knobs."""
    return draw(FAMILY, dataset, split, seed, n, params, MAX_TOKENS)


def _is_number(text: str) -> bool:
    return bool(re.fullmatch(r"\s*-?\d[\d,]*(?:\.\d+)?\s*", text))


def extract_answer(reply: str | None, numeric: bool = False) -> str | None:
    """The answer in `reply`: the last "<answer>…</answer>" or "Answer: …" line; without
    one, for a numeric task the last number in the reply, else the last non-empty line.
    None when the reply is empty."""
    text = (reply or "").strip()
    if not text:
        return None
    tagged = _ANSWER_TAG.findall(text)
    lines = _ANSWER_LINE.findall(text)
    if tagged:
        answer = tagged[-1]
    elif lines:
        answer = lines[-1]
    elif numeric:
        numbers = _NUMBER.findall(text)
        answer = numbers[-1] if numbers else ""
    else:
        answer = text.splitlines()[-1]
    answer = answer.strip().strip("*`$ ").rstrip(".").strip()
    if numeric and not _is_number(answer):  # "Answer: 7 apples" -> "7"
        numbers = _NUMBER.findall(answer)
        answer = numbers[-1] if numbers else answer
    return answer or None


def reward(reply: str | None, task: dict[str, Any]) -> float:
    """The dataset's own `score_answer` on the answer in `reply`; 0.0 when there is none."""
    answer = extract_answer(reply, numeric=_is_number(task["answer"]))
    if answer is None:
        return 0.0
    entry = {"question": task["question"], "answer": task["answer"], "metadata": task["metadata"]}
    try:
        score = dataset_for(task["dataset"], task["config"]).score_answer(answer, entry)
    except Exception:  # a scorer that chokes on a model's garbage: that reply is wrong
        return 0.0
    return float(score or 0.0)


def messages(task: dict[str, Any]) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": task["question"]},
    ]


async def rollout(task: dict[str, Any], episode) -> float:
    llm = episode.openai()
    response = await llm.chat.completions.create(
        model=episode.model,
        messages=messages(task),
        max_tokens=task.get("max_tokens", MAX_TOKENS),
    )
    return reward(response.choices[0].message.content, task)


class Dataset:
    """One reasoning-gym dataset as a task family of its own name (`swarm.tasks.family(
    "leg_counting")`), at the dataset's default difficulty: what a study of a dataset that
    has no first-class module trains and evaluates on. Its tasks carry `"family": dataset`,
    so a run's `task_mix` names the dataset."""

    def __init__(self, dataset: str) -> None:
        if dataset not in dataset_names():
            raise ValueError(f"no reasoning-gym dataset {dataset!r}")
        self.FAMILY = self.DATASET = dataset
        self.MAX_TOKENS = MAX_TOKENS

    def __repr__(self) -> str:
        return f"reasoning_gym.Dataset({self.DATASET!r})"

    def tasks(
        self, split: str = "train", seed: int = 0, n: int | None = None, **params: Any
    ) -> Iterator[dict[str, Any]]:
        """`n` tasks of `split` (default: up to 1,000); `params` are the dataset's knobs."""
        return draw(self.FAMILY, self.DATASET, split, seed, n, params, MAX_TOKENS)

    reward = staticmethod(reward)
    messages = staticmethod(messages)

    @staticmethod
    async def rollout(task: dict[str, Any], episode) -> float:
        return await rollout(task, episode)
