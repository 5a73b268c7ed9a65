"""The shipped tasks: deterministic per seed, disjoint splits, exact verifiers, and reference
rollouts driven by a scripted stand-in for the model."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from openai.types.chat import ChatCompletion

from swarm.errors import InvalidExpression
from swarm.tasks import CATALOGUE, arithmetic, calculator, guess_number, learnable
from swarm.tasks.answers import first_integer, integers_in, last_integer
from swarm.workflow import TaskCycle, load_workflow

MODULES = {
    "learnable": learnable,
    "arithmetic": arithmetic,
    "calculator": calculator,
    "guess_number": guess_number,
}
CONTENT = {  # what makes two tasks the same task, whatever the phrasing
    "learnable": lambda task: task["prompt"],
    "arithmetic": lambda task: (task["operation"], *integers_in(task["question"])),
    "calculator": lambda task: task["expression"],
    "guess_number": lambda task: (task["high"], task["target"]),
}
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def sample(module, split: str, seed: int = 0, n: int = 40) -> list[dict[str, Any]]:
    return list(module.tasks(split, seed=seed, n=n))


# -- generation ------------------------------------------------------------------------------


REASONING_GYM = {"reasoning_gym", "countdown", "chain_sum", "basic_arithmetic", "letter_counting"}
GAMES = {"mastermind"}  # TextArena's: tested in test_mastermind_task.py
LIBRARY_FAMILIES = REASONING_GYM | GAMES | {"bfcl"}


def test_the_catalogue_names_every_task_module():
    # the library families are tested in test_reasoning_gym_tasks.py, test_mastermind_task.py
    # and test_bfcl_tasks.py
    assert set(CATALOGUE) == set(MODULES) | LIBRARY_FAMILIES


@pytest.mark.parametrize("name", sorted(MODULES))
def test_generation_is_deterministic_per_seed(name):
    module = MODULES[name]
    assert sample(module, "train", seed=1) == sample(module, "train", seed=1)
    assert sample(module, "train", seed=1) != sample(module, "train", seed=2)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_train_and_test_are_disjoint_across_seeds(name):
    module = MODULES[name]
    content = CONTENT[name]
    train = [task for seed in range(3) for task in sample(module, "train", seed=seed, n=20)]
    test = [task for seed in range(3) for task in sample(module, "test", seed=seed, n=20)]
    assert {t["id"] for t in train}.isdisjoint(t["id"] for t in test)
    assert {content(t) for t in train}.isdisjoint(content(t) for t in test)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_tasks_have_unique_ids_and_their_family(name):
    tasks = sample(MODULES[name], "train")
    assert len({t["id"] for t in tasks}) == len(tasks) == 40
    assert {t["family"] for t in tasks} == {name}


def test_an_unknown_split_is_refused():
    with pytest.raises(ValueError, match="unknown split 'dev'"):
        list(arithmetic.tasks("dev"))


def test_asking_for_more_tasks_than_a_split_has_is_refused():
    with pytest.raises(ValueError, match="only"):
        list(learnable.tasks("test", n=1000))


def test_tasks_are_right_by_construction():
    compute = {"add": int.__add__, "sub": int.__sub__, "mul": int.__mul__}
    for task in sample(arithmetic, "train", n=200):
        a, b = integers_in(task["question"])
        assert compute[task["operation"]](a, b) == task["answer"] >= 0
    for task in sample(calculator, "train", n=200):
        assert calculator.evaluate(task["expression"]) == task["answer"]
    for task in guess_number.tasks("train"):
        assert task["low"] <= task["target"] <= task["high"]


# -- verifiers ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The answer is 12.", [12]),
        ("-3 and 1,200 and 12.0", [-3, 1200, 12]),
        ("2.5 is not whole", []),
        ("7th place, abc12", []),
        ("", []),
        (None, []),
    ],
)
def test_integers_are_read_out_of_replies(text, expected):
    assert integers_in(text) == expected


def test_first_and_last_integer():
    assert (first_integer("5 then 9"), last_integer("5 then 9")) == (5, 9)
    assert first_integer("none") is None and last_integer(None) is None


BANANA = {"word": "banana"}


@pytest.mark.parametrize(
    ("reply", "reward"),
    [
        ("banana", 1.0),
        ("Sure! BANANA.", 1.0),
        ("I like bananas", 0.0),
        ("apple", 0.0),
        ("", 0.0),
        (None, 0.0),
        ("b a n a n a", 0.0),
    ],
)
def test_learnable_rewards_the_word_and_nothing_else(reply, reward):
    assert learnable.reward(reply, BANANA) == reward


SEVEN = {"answer": 7}


@pytest.mark.parametrize(
    ("reply", "reward"),
    [
        ("3 + 4 = 7", 1.0),
        ("The answer is 7.", 1.0),
        ("7 or maybe 8", 0.0),
        ("seven", 0.0),
        ("", 0.0),
        (None, 0.0),
        ("7.0", 1.0),
        ("%$#@", 0.0),
    ],
)
def test_arithmetic_reads_the_last_integer(reply, reward):
    assert arithmetic.reward(reply, SEVEN) == reward


@pytest.mark.parametrize(
    ("reply", "used_tool", "reward"),
    [
        ("It is 35.", True, 1.1),
        ("It is 35.", False, 1.0),
        ("36", True, 0.1),
        ("", False, 0.0),
        (None, True, 0.1),
    ],
)
def test_calculator_reward_is_the_answer_plus_a_bonus_for_a_good_tool_call(
    reply, used_tool, reward
):
    assert calculator.reward(reply, {"answer": 35}, used_tool) == pytest.approx(reward)


@pytest.mark.parametrize(
    ("expression", "value"),
    [("(3 + 4) * 5", 35), ("7 / 2", 3.5), ("10 / 5", 2), ("-3 - -2", -1), (" 2*(3+4) ", 14)],
)
def test_the_calculator_evaluates_arithmetic(expression, value):
    assert calculator.evaluate(expression) == value


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("__import__('os').system('echo hi')", "function calls"),
        ("abs(-3)", "function calls"),
        ("x + 1", "names"),
        ("(1).real", "attributes"),
        ("2 ** 10", "Pow"),
        ("[1, 2]", "List"),
        ("'a' * 3", "Constant"),
        ("True + 1", "Constant"),
        ("1 / 0", "division by zero"),
        ("1 +", "not an arithmetic expression"),
        ("1" * 300, "longer than"),
    ],
)
def test_the_calculator_refuses_anything_but_arithmetic(expression, message):
    with pytest.raises(InvalidExpression, match=message):
        calculator.evaluate(expression)


@pytest.mark.parametrize(
    ("name", "arguments", "content", "well_formed"),
    [
        ("calculator", '{"expression": "6 * 7"}', "42", True),
        ("calculator", '{"expression": "six"}', "error: names are not allowed", False),
        ("calculator", "6 * 7", "error: arguments must be JSON", False),
        ("calculator", '{"expr": "6 * 7"}', "error: arguments must be JSON", False),
        ("python", '{"expression": "6 * 7"}', "error: unknown tool", False),
    ],
)
def test_a_tool_call_is_answered_and_judged(name, arguments, content, well_formed):
    answer, ok = calculator.run_tool_call(name, arguments)
    assert answer.startswith(content) and ok is well_formed


def test_the_guessing_game_answers_higher_lower_and_scores_closeness():
    game = guess_number.GuessNumberGame(low=1, high=11, target=7, max_turns=3)
    assert game.play("I guess 5") == "Higher."
    assert game.play("hmm") == "Please reply with a number between 1 and 11."
    assert game.play("9, final answer") == "Lower."
    assert game.over and not game.won
    assert game.reward() == pytest.approx(0.5 * (1 - 2 / 10))


def test_the_guessing_game_pays_1_on_a_hit_and_0_without_a_guess():
    hit = guess_number.GuessNumberGame(low=1, high=10, target=4, max_turns=5)
    assert hit.play("4") == "Correct!" and hit.over and hit.reward() == 1.0
    silent = guess_number.GuessNumberGame(low=1, high=10, target=4, max_turns=1)
    silent.play("no idea")
    assert silent.over and silent.reward() == 0.0


# -- reference rollouts, with a scripted model ----------------------------------------------------


class ScriptedLLM:
    """Stands in for `openai.AsyncOpenAI`: answers each call with the next scripted message."""

    def __init__(self, replies: list[dict[str, Any]]):
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        self.chat = self
        self.completions = self

    async def create(self, **request: Any) -> ChatCompletion:
        self.requests.append(json.loads(json.dumps(request)))
        message = {"role": "assistant", **self.replies.pop(0)}
        return ChatCompletion.model_validate(
            {
                "id": "c",
                "object": "chat.completion",
                "created": 0,
                "model": request["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            }
        )


class ScriptedEpisode:
    model = "r/policy"

    def __init__(self, replies: list[dict[str, Any]]):
        self.llm = ScriptedLLM(replies)

    def openai(self) -> ScriptedLLM:
        return self.llm


def tool_call(arguments: str, call_id: str = "call_1") -> dict[str, Any]:
    return {
        "content": None,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": "calculator", "arguments": arguments},
            }
        ],
    }


def test_the_learnable_rollout_asks_briefly_and_scores_the_reply():
    task = next(learnable.tasks("train"))
    episode = ScriptedEpisode([{"content": f"{task['word'].upper()}!"}])
    assert asyncio.run(learnable.rollout(task, episode)) == 1.0
    (request,) = episode.llm.requests
    assert request["max_tokens"] == 24 and request["model"] == "r/policy"
    assert request["messages"] == [{"role": "user", "content": task["prompt"]}]


def test_the_arithmetic_rollout_scores_the_last_integer():
    task = {"id": "x", "question": "What is 3 plus 4?", "answer": 7}
    assert asyncio.run(arithmetic.rollout(task, ScriptedEpisode([{"content": "3 + 4 = 7"}]))) == 1.0


def test_the_calculator_rollout_runs_the_tool_then_scores_the_final_answer():
    task = {"id": "x", "question": "What is 6 * 7?", "expression": "6 * 7", "answer": 42}
    episode = ScriptedEpisode([tool_call('{"expression": "6 * 7"}'), {"content": "It is 42."}])
    assert asyncio.run(calculator.rollout(task, episode)) == pytest.approx(1.1)
    second = episode.llm.requests[1]["messages"]
    assert second[-2]["tool_calls"][0]["function"]["name"] == "calculator"
    assert second[-1] == {"role": "tool", "tool_call_id": "call_1", "content": "42"}
    assert episode.llm.requests[0]["tools"] == calculator.TOOLS


def test_the_calculator_rollout_stops_after_three_calls():
    task = {"id": "x", "question": "?", "expression": "1 + 1", "answer": 2}
    episode = ScriptedEpisode([tool_call("not json")] * 3)
    assert asyncio.run(calculator.rollout(task, episode)) == 0.0
    assert len(episode.llm.requests) == calculator.MAX_TURNS


def test_the_guessing_rollout_plays_until_the_hit():
    task = {"id": "x", "low": 1, "high": 10, "target": 6, "max_turns": 5}
    episode = ScriptedEpisode([{"content": "5"}, {"content": "8"}, {"content": "6"}])
    assert asyncio.run(guess_number.rollout(task, episode)) == 1.0
    assert [m["content"] for m in episode.llm.requests[-1]["messages"] if m["role"] == "user"][
        1:
    ] == ["Higher.", "Lower."]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MODULES))
def test_each_example_is_a_loadable_workflow_over_its_task(name):
    workflow = load_workflow(EXAMPLES / f"{name}.py")
    first = next(TaskCycle(workflow.tasks))
    assert first == next(MODULES[name].tasks("train", seed=0))
