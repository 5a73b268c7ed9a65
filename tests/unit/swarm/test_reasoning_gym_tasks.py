"""The reasoning-gym task families: deterministic per seed, disjoint splits (by question
text), rewards that are the library's own `score_answer` on the reply's answer, a reference
rollout that asks for "Answer: ...", the example workflows, and no network at run time."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from swarm.tasks import (
    CATALOGUE,
    basic_arithmetic,
    chain_sum,
    countdown,
    letter_counting,
    reasoning_gym,
)
from swarm.tasks.reasoning_gym import extract_answer
from swarm.workflow import TaskCycle, load_workflow
from tests.unit.swarm.test_tasks import ScriptedEpisode

FAMILIES = {
    module.FAMILY: module
    for module in (countdown, chain_sum, basic_arithmetic, letter_counting, reasoning_gym)
}
REPO = Path(__file__).resolve().parents[3]


def sample(module, split: str, seed: int = 0, n: int = 30, **params) -> list[dict]:
    return list(module.tasks(split, seed=seed, n=n, **params))


def library_score(task: dict, answer: str) -> float:
    """The dataset's own scorer, called directly on a freshly built reasoning-gym dataset."""
    import reasoning_gym as rg

    dataset = rg.create_dataset(task["dataset"], seed=0, size=10, **task["config"])
    entry = {"question": task["question"], "answer": task["answer"], "metadata": task["metadata"]}
    return dataset.score_answer(answer, entry)


def test_every_family_is_in_the_catalogue():
    assert set(FAMILIES) <= set(CATALOGUE)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_generation_is_deterministic_per_seed(name):
    module = FAMILIES[name]
    assert sample(module, "train", seed=1) == sample(module, "train", seed=1)
    assert sample(module, "train", seed=1) != sample(module, "train", seed=2)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_train_and_test_are_disjoint_across_seeds(name):
    module = FAMILIES[name]
    train = [t for seed in range(3) for t in sample(module, "train", seed=seed, n=20)]
    test = [t for seed in range(3) for t in sample(module, "test", seed=seed, n=20)]
    assert {t["id"] for t in train}.isdisjoint(t["id"] for t in test)
    assert {t["question"] for t in train}.isdisjoint(t["question"] for t in test)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_tasks_have_unique_ids_their_family_and_survive_json(name):
    tasks = sample(FAMILIES[name], "train")
    assert len({t["id"] for t in tasks}) == len(tasks) == 30
    assert {t["family"] for t in tasks} == {name}
    assert json.loads(json.dumps(tasks)) == tasks


@pytest.mark.slow
def test_levels_and_knobs_change_the_problems():
    easy = sample(countdown, "train", level="easy")
    assert all(len(t["metadata"]["numbers"]) == 3 for t in easy)
    assert all(max(t["metadata"]["numbers"]) <= 10 for t in easy)
    standard = sample(countdown, "train", level="standard")
    assert all(4 <= len(t["metadata"]["numbers"]) <= 6 for t in standard)
    assert all(100 <= t["metadata"]["target"] <= 999 for t in standard)
    five = sample(countdown, "train", level="standard", min_numbers=5, max_numbers=5)
    assert all(len(t["metadata"]["numbers"]) == 5 for t in five)
    named = sample(reasoning_gym, "train", dataset="countdown", min_numbers=2, max_numbers=2)
    assert all(len(t["metadata"]["numbers"]) == 2 for t in named)
    assert {t["family"] for t in named} == {"reasoning_gym"}


def test_a_small_split_yields_what_it_has_and_refuses_more_when_asked():
    test_split = list(chain_sum.tasks("test"))  # two 1-digit terms: ~200 problems in all
    assert 10 < len(test_split) < 100
    assert len({t["question"] for t in test_split}) == len(test_split)
    with pytest.raises(ValueError, match="only"):
        list(chain_sum.tasks("test", n=500))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: countdown.tasks(level="impossible"), "unknown level 'impossible'"),
        (
            lambda: list(reasoning_gym.tasks(dataset="no_such_game", n=1)),
            "no reasoning-gym dataset",
        ),
        (lambda: list(countdown.tasks(n=1, min_numbers=1)), "min_numbers"),
        (lambda: list(countdown.tasks(n=1, no_such_knob=3)), "no_such_knob"),
    ],
)
def test_bad_levels_datasets_and_knobs_are_refused_by_name(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# -- rewards: the library's own scorer ------------------------------------------------------


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_the_known_answer_scores_1_and_a_malformed_reply_0(name):
    for task in sample(FAMILIES[name], "test", n=10):
        assert FAMILIES[name].reward(f"Let me see.\nAnswer: {task['answer']}", task) == 1.0
        for malformed in (None, "", "   "):
            assert FAMILIES[name].reward(malformed, task) == 0.0


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_the_reward_is_the_librarys_score_of_the_extracted_answer(name):
    replies = ("Answer: 12345", "Answer: 3 + 4", "I think it is 7.", "no idea", "Answer: 1")
    for task in sample(FAMILIES[name], "test", n=10):
        numeric = task["answer"].lstrip("-").isdigit()
        for reply in replies:
            expected = library_score(task, extract_answer(reply, numeric=numeric))
            assert FAMILIES[name].reward(reply, task) == expected


def test_numeric_answers_score_0_when_wrong():
    for module in (chain_sum, basic_arithmetic, letter_counting):
        for task in sample(module, "test", n=10):
            wrong = int(task["answer"]) + 7
            assert module.reward(f"Answer: {wrong}", task) < 1.0
    for task in sample(chain_sum, "test", n=10):
        assert chain_sum.reward(f"Answer: {int(task['answer']) + 7}", task) == 0.0


def test_countdown_accepts_any_correct_expression_not_only_the_reference_one():
    task = next(t for t in countdown.tasks("train", level="tiny") if "+" in t["answer"])
    a, b = task["metadata"]["numbers"]
    assert countdown.reward(f"Answer: {b} + {a}", task) == 1.0  # swapped: still right
    assert countdown.reward(f"Answer: {a} + {b} + 1", task) == 0.05  # wrong numbers: library's
    assert countdown.reward("Answer: ((", task) == 0.01  # unparsable: library's 0.01
    assert countdown.reward("I give up", task) == 0.01  # the last line is the answer


@pytest.mark.parametrize(
    ("reply", "numeric", "answer"),
    [
        ("Answer: 42", True, "42"),
        ("3 + 4 = 7\nAnswer: **7**.", True, "7"),
        ("The answer is 12 apples", True, "12"),
        ("answer = -3", True, "-3"),
        ("so <answer>7*5*1</answer>", False, "7*5*1"),
        ("First 7*5.\nAnswer: 7*5*1", False, "7*5*1"),
        ("7*5*1", False, "7*5*1"),
        ("first line\n`7 + 3`", False, "7 + 3"),
        ("no number here", True, None),
        ("", False, None),
        (None, True, None),
    ],
)
def test_the_answer_is_read_out_of_the_reply(reply, numeric, answer):
    assert extract_answer(reply, numeric=numeric) == answer


# -- the reference rollout and the example workflows -----------------------------------------


def test_the_reference_rollout_asks_for_an_answer_line_and_scores_it():
    task = next(countdown.tasks("test"))
    episode = ScriptedEpisode([{"content": f"Answer: {task['answer']}"}])
    assert asyncio.run(countdown.rollout(task, episode)) == 1.0
    (request,) = episode.llm.requests
    assert request["max_tokens"] == countdown.MAX_TOKENS and request["model"] == "r/policy"
    assert request["messages"][0] == {"role": "system", "content": reasoning_gym.SYSTEM_PROMPT}
    assert request["messages"][1] == {"role": "user", "content": task["question"]}


@pytest.mark.parametrize(
    ("example", "first"),
    [
        ("countdown", lambda: next(countdown.tasks("train", seed=0))),
        ("reasoning_gym_any", lambda: next(reasoning_gym.tasks("train", seed=0, dataset="chain_sum",
                                                           min_terms=3, max_terms=3,
                                                           min_digits=1, max_digits=1))),
    ],
)  # fmt: skip
def test_each_example_is_a_loadable_workflow_over_its_task(example, first):
    workflow = load_workflow(REPO / "examples" / f"{example}.py")
    assert next(TaskCycle(workflow.tasks)) == first()


def test_the_countdown_example_rollout_scores_like_the_reference_one():
    workflow = load_workflow(REPO / "examples" / "countdown.py")
    task = next(TaskCycle(workflow.tasks))
    for reply in (f"Answer: {task['answer']}", "Answer: 1 + 1", "nothing"):
        ours = asyncio.run(workflow.rollout(task, ScriptedEpisode([{"content": reply}])))
        reference = asyncio.run(countdown.rollout(task, ScriptedEpisode([{"content": reply}])))
        assert ours == reference


OFFLINE = """
import socket

def refuse(*args, **kwargs):
    raise OSError("network blocked in this test")

socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
from swarm.tasks import basic_arithmetic, chain_sum, countdown, letter_counting, reasoning_gym
for module in (countdown, chain_sum, basic_arithmetic, letter_counting):
    for level in module.LEVELS:
        task = next(module.tasks("test", level=level))
        assert module.reward("Answer: " + task["answer"], task) == 1.0, (module, level)
for name in ("spell_backward", "word_sorting", "propositional_logic"):
    task = next(reasoning_gym.tasks("test", dataset=name))
    assert reasoning_gym.reward(None, task) == 0.0
print("ok")
"""


@pytest.mark.slow
def test_generation_and_scoring_need_no_network():
    result = subprocess.run(
        [sys.executable, "-c", OFFLINE], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_family_resolves_modules_and_any_reasoning_gym_dataset_by_name():
    import swarm.tasks
    from swarm.tasks import countdown

    assert swarm.tasks.family("countdown") is countdown
    leg = swarm.tasks.family("leg_counting")
    train = list(leg.tasks("train", seed=0, n=40))
    test = list(leg.tasks("test", seed=0, n=40))
    assert {t["family"] for t in train + test} == {"leg_counting"}
    assert not {t["question"] for t in train} & {t["question"] for t in test}
    assert [t["id"] for t in leg.tasks("test", seed=0, n=40)] == [t["id"] for t in test]
    with pytest.raises(LookupError, match="no task family 'gsm8k'"):
        swarm.tasks.family("gsm8k")
