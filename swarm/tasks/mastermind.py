"""`mastermind`: TextArena's Mastermind, a multi-turn code-breaking game, as a task family.

The game is TextArena's own (`textarena.make("Mastermind-v0-raw", ...)`, the env without
TextArena's observation wrappers, so the rollout keeps the chat itself): a hidden code of
`code_length` digits from 1..`num_numbers`; each guess ("[2 1]") is answered with black pegs
(right digit, right place) and white pegs (right digit, wrong place); the game ends on the
code, when its turn limit is reached, or on a second invalid move in a row (one is forgiven
with a warning). TextArena 0.7's turn counter lets `max_turns` + 1 guesses be made (the
prompt says `max_turns`); that is the library's rule and is kept. TextArena's env decides termination and the reward, never a re-implementation:
1 for cracking the code, else its "percentage completion" of the last valid guess,
(black + 0.5 × white) / code_length, and 0.0 when no valid guess was made.

A task is an env seed plus the game's settings; the seed fixes the hidden code. The model
never sees the code, only feedback, so a held-out game is a held-out seed: the split is a
function of (settings, seed) (`swarm.tasks.splits`), disjoint for every `seed=` of
`tasks`. At the small levels train and test games share codes (tiny has 12 codes in all);
what differs is the game, not a memorisable answer.

Levels (`level=`, or any knob below as a param):
- "tiny" (default): 2 digits of 1..4, no repeats, 6 guesses (12 codes; random valid play
  wins about half the games);
- "easy": 3 digits of 1..5, 8 guesses;
- "standard": TextArena's Mastermind-v0 (4 digits of 1..6, 20 guesses);
- "hard": TextArena's Mastermind-v0-hard (4 digits of 1..8, 30 guesses).

TextArena (`pip install 'swarmrl[games]'`) is imported on first use, so importing this
module stays cheap; it runs offline (no download, no API key). Must not know about the
gateway: the rollout uses only `Episode`.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Iterator
from typing import Any

from swarm.tasks.splits import draw_tasks

FAMILY = "mastermind"
ENV_ID = "Mastermind-v0-raw"
MAX_TOKENS = 24
KNOBS = ("code_length", "num_numbers", "max_turns", "duplicate_numbers")
LEVELS: dict[str, dict[str, Any]] = {
    "tiny": {"code_length": 2, "num_numbers": 4, "max_turns": 6, "duplicate_numbers": False},
    "easy": {"code_length": 3, "num_numbers": 5, "max_turns": 8, "duplicate_numbers": False},
    "standard": {"code_length": 4, "num_numbers": 6, "max_turns": 20, "duplicate_numbers": False},
    "hard": {"code_length": 4, "num_numbers": 8, "max_turns": 30, "duplicate_numbers": False},
}
DEFAULT_LEVEL = "tiny"
DEFAULT_N = 1000  # tasks per call when `n` is None
ENV_SEEDS = 2**31  # env seeds are drawn from range(ENV_SEEDS)
EXTRA = "pip install 'swarmrl[games]' (or: pip install 'textarena>=0.7.4,<0.8')"


def _textarena():
    """The textarena package; it is an optional extra."""
    try:
        return importlib.import_module("textarena")
    except ModuleNotFoundError as missing:
        raise ModuleNotFoundError(
            f"the mastermind task family needs TextArena (the `games` extra): {EXTRA}; "
            f"missing module: {missing.name}",
            name=missing.name,
        ) from missing


def settings_for(level: str, params: dict[str, Any]) -> dict[str, Any]:
    """`level`'s knobs with `params` overriding them; a ValueError names an unknown level,
    an unknown knob, or a game TextArena could not set up."""
    if level not in LEVELS:
        raise ValueError(f"{FAMILY}: unknown level {level!r}; known: {', '.join(LEVELS)}")
    unknown = sorted(set(params) - set(KNOBS))
    if unknown:
        raise ValueError(f"{FAMILY}: unknown knob {', '.join(unknown)}; known: {', '.join(KNOBS)}")
    settings = {**LEVELS[level], **params}
    length, numbers = settings["code_length"], settings["num_numbers"]
    if not (length >= 1 and numbers >= 1 and settings["max_turns"] >= 1):
        raise ValueError(f"{FAMILY}: code_length, num_numbers and max_turns must be >= 1")
    if not settings["duplicate_numbers"] and length > numbers:
        raise ValueError(
            f"{FAMILY}: a code of {length} distinct digits needs num_numbers >= {length}"
        )
    return settings


def tasks(
    split: str = "train",
    seed: int = 0,
    n: int | None = None,
    level: str = DEFAULT_LEVEL,
    **params: Any,
) -> Iterator[dict[str, Any]]:
    """`n` games of `split` (default DEFAULT_N) at `level`; `params` override its knobs.
    `constrained` (default True): each game carries a `response_format` that has the gateway
    constrain every reply to a well-formed guess (`guess_format`)."""
    constrained = bool(params.pop("constrained", True))
    settings = settings_for(level, params)
    response_format = guess_format(settings) if constrained else None
    shape = "{code_length}x{num_numbers}{dup}t{max_turns}".format(
        **settings, dup="d" if settings["duplicate_numbers"] else ""
    )

    def make(rng: random.Random) -> tuple[str, dict[str, Any]]:
        env_seed = rng.randrange(ENV_SEEDS)
        fields = {"env_id": ENV_ID, "env_seed": env_seed, **settings, "max_tokens": MAX_TOKENS}
        if response_format is not None:
            fields["response_format"] = response_format
        return f"{shape}:{env_seed}", fields

    return draw_tasks(FAMILY, split, seed, DEFAULT_N if n is None else n, make)


def guess_format(settings: dict[str, Any]) -> dict[str, Any] | None:
    """A JSON-schema `response_format` whose one value is a guess as TextArena reads it
    ("[2 1]": `code_length` digits of 1..`num_numbers`): the reply is that JSON string, whose
    brackets the game finds. Without it a small model mostly writes prose, which the game
    rejects, so every game scores 0 and a GRPO group has nothing to learn from. None when
    the digits do not fit one character each (more than 9 numbers)."""
    numbers, length = settings["num_numbers"], settings["code_length"]
    if numbers > 9:
        return None
    digit = f"[1-{numbers}]"
    pattern = rf"^\[{digit}( {digit}){{{length - 1}}}\]$"
    schema = {"type": "string", "pattern": pattern}
    return {
        "type": "json_schema",
        "json_schema": {"name": "guess", "schema": schema, "strict": True},
    }


class MastermindGame:
    """One game of TextArena's Mastermind set up from a task, played move by move."""

    def __init__(self, task: dict[str, Any]):
        # TextArena seeds the process-wide `random` (State.__init__) and draws the code from
        # it (importing it draws too): keep everyone else's random stream as it was
        outside = random.getstate()
        try:
            textarena = _textarena()
            self._player_action = textarena.ObservationType.PLAYER_ACTION
            self.env = textarena.make(
                task.get("env_id", ENV_ID), **{knob: task[knob] for knob in KNOBS}
            )
            self.env.reset(num_players=1, seed=task["env_seed"])
        finally:
            random.setstate(outside)
        self.done = False
        self.moves = 0

    @property
    def secret(self) -> list[int]:
        return list(self.env.state.game_state["secret_code"])

    def observation(self) -> str:
        """What the game said since the last move (the rules, at the start)."""
        _, messages = self.env.get_observation()
        said = [text for _, text, kind in messages if kind != self._player_action]
        return "\n".join(said).strip()

    def play(self, move: str | None) -> str:
        """Make `move` (a reply of the model); the game's answer ("" once it is over)."""
        assert not self.done, "the game is over"
        self.done, _ = self.env.step(move or "")
        self.moves += 1
        return "" if self.done else self.observation()

    def reward(self) -> float:
        """TextArena's reward for the finished game; 0.0 for one that is not over."""
        if not self.done:
            return 0.0
        rewards, _ = self.env.close()
        return float(rewards[0])


def reward(moves: list[str | None], task: dict[str, Any]) -> float:
    """TextArena's reward for playing `moves` in order in the task's game (moves after the
    game ended are ignored; a game the moves do not finish scores 0.0)."""
    game = MastermindGame(task)
    for move in moves:
        if game.done:
            break
        game.play(move)
    return game.reward()


def max_calls(task: dict[str, Any]) -> int:
    """A bound on model calls: each of the max_turns + 1 guesses TextArena allows may follow
    one forgiven invalid move, and a second invalid move ends the game."""
    return 2 * (task["max_turns"] + 1) + 1


async def rollout(task: dict[str, Any], episode) -> float:
    llm = episode.openai()
    game = MastermindGame(task)
    messages = [{"role": "user", "content": game.observation()}]
    while not game.done:
        assert game.moves < max_calls(task), "TextArena did not end the game"
        constraint = (
            {"response_format": task["response_format"]} if task.get("response_format") else {}
        )
        response = await llm.chat.completions.create(
            model=episode.model,
            messages=messages,
            max_tokens=task.get("max_tokens", MAX_TOKENS),
            **constraint,
        )
        reply = response.choices[0].message.content or ""
        answer = game.play(reply)
        if not game.done:
            messages += [
                {"role": "assistant", "content": reply},
                {"role": "user", "content": answer},
            ]
    return game.reward()
