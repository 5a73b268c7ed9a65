"""BFCL function calling: answer a request by calling the offered functions (OpenAI tools).

    swarm run examples/bfcl.py --gateway http://127.0.0.1:8400 --run bfcl

One chat call per task: the request from the Berkeley Function Calling Leaderboard's data
(shipped in the bfcl-eval wheel: `pip install --no-deps 'bfcl-eval==2026.3.23'`, which
`make install` does) with its functions as `tools`; the reward is BFCL's own AST checker on
the reply's `tool_calls` (1.0 when it accepts them, 0.0 otherwise, also for no call or
arguments that are not JSON). CATEGORY picks the BFCL category: "simple" (one function, one
call; the default), "multiple" (pick one of several functions), "parallel" (several calls
of one function), "parallel_multiple", or "multi_turn_base": conversations of 1-8 turns
against BFCL's executable backends (a file system, trading bot, travel booking, ...), run by
the family's reference rollout and scored by BFCL's multi-turn checker; its tools alone are
4-8k tokens, more than the bundled model's context holds.
"""

import swarm
from swarm.tasks import bfcl

CATEGORY = "simple"


def tasks(split: str = "train"):
    # {"id", "bfcl_id", "category", "messages", "functions", "tools", "ground_truth",
    #  "max_tokens", "tool_choice"}
    return bfcl.tasks(split, seed=0, category=CATEGORY)


async def rollout(task: dict, episode: swarm.Episode) -> float:
    if "turns" in task:  # multi_turn_base: tool calls run on BFCL's backends, turn by turn
        return await bfcl.rollout(task, episode)
    llm = episode.openai()  # an AsyncOpenAI whose calls are recorded into this episode
    response = await llm.chat.completions.create(
        model=episode.model,
        messages=task["messages"],
        tools=task["tools"],
        tool_choice=task["tool_choice"],  # "required" for simple/multiple: one constrained call
        max_tokens=task["max_tokens"],
    )
    return bfcl.reward(response.choices[0].message.tool_calls, task)
