"""The `mastermind` family (TextArena's Mastermind): deterministic, disjoint splits of env
seeds; rewards and termination decided by TextArena's own env (a cracked code scores 1, a
losing game TextArena's partial score, malformed moves 0 without raising); a reference
rollout that grows one conversation turn by turn; its example workflow; a clear error
without TextArena; and no network at run time.

TextArena is the `games` extra: the tests that play a game skip, saying so, without it.
    PYTHONPATH=$PWD .venv/bin/python -m pytest -q tests/unit/swarm/test_mastermind_task.py
"""

from __future__ import annotations

import asyncio
import importlib.util
import itertools
import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from researcher.planner.catalogue import TASKS
from swarm.tasks import CATALOGUE, mastermind
from swarm.workflow import TaskCycle, load_workflow
from tests.unit.swarm.test_tasks import ScriptedEpisode

REPO = Path(__file__).resolve().parents[3]
needs_textarena = pytest.mark.skipif(
    importlib.util.find_spec("textarena") is None,
    reason="TextArena is not installed (the `games` extra: pip install 'swarmrl[games]')",
)


def sample(split: str, seed: int = 0, n: int = 30, **params) -> list[dict]:
    return list(mastermind.tasks(split, seed=seed, n=n, **params))


def guess(code: list[int]) -> str:
    return "[" + " ".join(map(str, code)) + "]"


def losing_guesses(task: dict, secret: list[int], last: list[int]) -> list[str]:
    """max_turns + 1 distinct wrong guesses (all TextArena allows), ending with `last`."""
    digits = range(1, task["num_numbers"] + 1)
    wrong = [
        list(code)
        for code in itertools.permutations(digits, task["code_length"])
        if list(code) not in (secret, last)
    ]
    return [guess(code) for code in wrong[: task["max_turns"]]] + [guess(last)]


def test_the_family_is_in_the_swarm_and_researcher_catalogues():
    assert "mastermind" in CATALOGUE
    info = TASKS["mastermind"]
    assert info.multi_turn and info.max_tokens == mastermind.MAX_TOKENS
    assert "multi turn games?" in " ".join(info.synonyms)


def test_generation_is_deterministic_per_seed():
    assert sample("train", seed=1) == sample("train", seed=1)
    assert sample("train", seed=1) != sample("train", seed=2)


def test_train_and_test_are_disjoint_across_seeds_and_levels():
    def games(split: str) -> list[dict]:
        return [
            t for seed in range(3) for level in mastermind.LEVELS
            for t in sample(split, seed=seed, n=20, level=level)
        ]  # fmt: skip

    train, test = games("train"), games("test")
    assert {t["id"] for t in train}.isdisjoint(t["id"] for t in test)
    settings = [*mastermind.KNOBS, "env_seed"]
    assert {tuple(t[k] for k in settings) for t in train}.isdisjoint(
        tuple(t[k] for k in settings) for t in test
    )
    assert len(test) == len(train) == 3 * 20 * len(mastermind.LEVELS)


def test_tasks_have_unique_ids_their_family_and_survive_json():
    tasks = sample("train")
    assert len({t["id"] for t in tasks}) == len(tasks) == 30
    assert {t["family"] for t in tasks} == {"mastermind"}
    assert json.loads(json.dumps(tasks)) == tasks
    assert len(list(mastermind.tasks("test"))) == mastermind.DEFAULT_N


def test_levels_and_knobs_set_the_game():
    assert {(t["code_length"], t["num_numbers"], t["max_turns"]) for t in sample("train")} == {
        (2, 4, 6)
    }
    standard = sample("test", level="standard", n=5)
    assert {(t["code_length"], t["num_numbers"], t["max_turns"]) for t in standard} == {(4, 6, 20)}
    longer = sample("test", level="easy", n=5, max_turns=3, duplicate_numbers=True)
    assert {(t["code_length"], t["max_turns"], t["duplicate_numbers"]) for t in longer} == {
        (3, 3, True)
    }


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"level": "impossible"}, "unknown level 'impossible'"),
        ({"colours": 3}, "unknown knob colours"),
        ({"code_length": 5, "num_numbers": 4}, "num_numbers >= 5"),
        ({"max_turns": 0}, "must be >= 1"),
    ],
)
def test_bad_levels_and_knobs_are_refused_by_name(params, message):
    with pytest.raises(ValueError, match=message):
        mastermind.tasks(**params)


# -- rewards and termination: TextArena's own env ----------------------------------------------


@needs_textarena
@pytest.mark.parametrize("level", sorted(mastermind.LEVELS))
def test_the_cracked_code_scores_textarenas_win(level):
    for task in sample("test", n=5, level=level):
        secret = mastermind.MastermindGame(task).secret
        assert len(secret) == task["code_length"]
        assert mastermind.reward([guess(secret)], task) == 1.0
        assert mastermind.reward([guess(secret), "ignored: the game is over"], task) == 1.0


@needs_textarena
def test_the_hidden_code_is_a_function_of_the_env_seed():
    task = sample("test", n=1)[0]
    assert mastermind.MastermindGame(task).secret == mastermind.MastermindGame(task).secret
    codes = {tuple(mastermind.MastermindGame(t).secret) for t in sample("train", n=40)}
    assert len(codes) > 4  # the seeds hide different codes (12 exist at "tiny")


@needs_textarena
def test_a_lost_game_scores_textarenas_partial_credit_for_the_last_guess():
    import textarena

    for task in sample("test", n=5):
        secret = mastermind.MastermindGame(task).secret
        swapped = secret[::-1]  # right digits, wrong places: 2 white pegs of 2
        moves = losing_guesses(task, secret, swapped)
        assert mastermind.reward(moves, task) == 0.5
        assert mastermind.reward(moves[:-1], task) == 0.0  # not over yet: no reward
        env = textarena.make("Mastermind-v0-raw", code_length=2, num_numbers=4, max_turns=6)
        env.reset(num_players=1, seed=task["env_seed"])
        for move in moves:
            done, _ = env.step(move)
        rewards, info = env.close()
        assert done and rewards == {0: 0.5}, info  # what TextArena itself says


@needs_textarena
@pytest.mark.parametrize(
    "moves", [["hello", "no idea"], [None, None], ["", "[9 9]"], ["[1 1]", "[1 2 3]"]]
)
def test_malformed_moves_end_the_game_at_0_without_raising(moves):
    task = sample("test", n=1)[0]
    game = mastermind.MastermindGame(task)
    game.observation()
    assert "invalid move" in game.play(moves[0])  # the first one is forgiven, with a warning
    assert game.play(moves[1]) == "" and game.done  # the second in a row ends the game
    assert game.reward() == 0.0
    assert mastermind.reward(moves, task) == 0.0


@needs_textarena
def test_one_forgiven_invalid_move_still_lets_the_code_be_cracked():
    task = sample("test", n=1)[0]
    secret = mastermind.MastermindGame(task).secret
    assert mastermind.reward(["let me think", guess(secret)], task) == 1.0
    assert mastermind.reward([], task) == 0.0  # no move: the game is not over


@needs_textarena
def test_playing_a_game_leaves_the_process_random_stream_alone():
    task = sample("test", n=1)[0]
    random.seed(7)
    expected = [random.random() for _ in range(3)]
    random.seed(7)
    mastermind.reward(["[1 2]"], task)
    assert [random.random() for _ in range(3)] == expected


# -- the reference rollout and the example workflow -------------------------------------------


@needs_textarena
def test_the_rollout_plays_turn_by_turn_on_one_growing_conversation():
    task = sample("test", n=1)[0]
    secret = mastermind.MastermindGame(task).secret
    wrong = next(c for c in itertools.permutations(range(1, 5), 2) if list(c) != secret)
    replies = [{"content": "I guess " + guess(list(wrong))}, {"content": "hmm"},
               {"content": guess(secret)}]  # fmt: skip
    episode = ScriptedEpisode(replies)
    assert asyncio.run(mastermind.rollout(task, episode)) == 1.0
    requests = episode.llm.requests
    assert len(requests) == 3
    assert all(
        r["max_tokens"] == mastermind.MAX_TOKENS and r["model"] == "r/policy" for r in requests
    )
    assert all(r["response_format"] == task["response_format"] for r in requests)
    first, second, third = (r["messages"] for r in requests)
    assert len(first) == 1 and "You are playing Mastermind" in first[0]["content"]
    assert second[: len(first)] == first and third[: len(second)] == second  # one timeline
    assert second[1] == {"role": "assistant", "content": replies[0]["content"]}
    assert second[2]["role"] == "user" and "Feedback:" in second[2]["content"]
    assert "invalid move" in third[-1]["content"]


@needs_textarena
def test_a_rollout_that_never_cracks_the_code_ends_when_textarena_ends_it():
    task = sample("test", n=1)[0]
    secret = mastermind.MastermindGame(task).secret
    moves = losing_guesses(task, secret, secret[::-1])
    episode = ScriptedEpisode([{"content": move} for move in moves])
    assert asyncio.run(mastermind.rollout(task, episode)) == 0.5
    assert len(episode.llm.requests) == task["max_turns"] + 1 < mastermind.max_calls(task)


@pytest.mark.slow
def test_the_example_is_a_loadable_workflow_over_the_family():
    workflow = load_workflow(REPO / "examples" / "mastermind.py")
    assert workflow.rollout is mastermind.rollout
    assert next(TaskCycle(workflow.tasks)) == next(mastermind.tasks("train", seed=0))


WITHOUT_TEXTARENA = """
import sys

class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "textarena":
            raise ModuleNotFoundError("No module named 'textarena'", name="textarena")
        return None

sys.meta_path.insert(0, Block())
from swarm.tasks import mastermind
task = next(mastermind.tasks("test"))  # drawing games needs no TextArena
try:
    mastermind.reward(["[1 2]"], task)
except ModuleNotFoundError as error:
    print(error)
"""


def test_without_textarena_playing_fails_naming_the_extra():
    result = subprocess.run(
        [sys.executable, "-c", WITHOUT_TEXTARENA], cwd=REPO, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "pip install 'swarmrl[games]'" in result.stdout


OFFLINE = """
import socket

def refuse(*args, **kwargs):
    raise OSError("network blocked in this test")

socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
from swarm.tasks import mastermind
for level in mastermind.LEVELS:
    task = next(mastermind.tasks("test", level=level))
    secret = mastermind.MastermindGame(task).secret
    assert mastermind.reward(["[" + " ".join(map(str, secret)) + "]"], task) == 1.0, level
    assert mastermind.reward(["?", "?"], task) == 0.0, level
print("ok")
"""


@pytest.mark.slow
@needs_textarena
def test_games_are_played_and_scored_with_the_network_blocked():
    result = subprocess.run(
        [sys.executable, "-c", OFFLINE], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


@pytest.mark.parametrize(
    ("level", "right", "wrong"),
    [("tiny", ["[2 1]", "[4 4]"], ["[2 5]", "[2 1 3]", "2 1", "[21]", "I guess [2 1]"]),
     ("standard", ["[1 6 2 3]"], ["[1 7 2 3]", "[1 2 3]"]),
     ("hard", ["[8 1 2 3]"], ["[9 1 2 3]"])],
)  # fmt: skip
def test_the_guess_format_admits_exactly_a_well_formed_guess(level, right, wrong):
    task = sample("test", n=1, level=level)[0]
    pattern = task["response_format"]["json_schema"]["schema"]["pattern"]
    assert all(re.fullmatch(pattern, g) for g in right)
    assert not any(re.fullmatch(pattern, g) for g in wrong)


def test_constrained_false_leaves_the_reply_free():
    task = sample("test", n=1, constrained=False)[0]
    assert "response_format" not in task
    assert {k: v for k, v in sample("test", n=1)[0].items() if k != "response_format"} == task
