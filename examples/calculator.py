"""Multi-turn tool use: compute an expression with the help of a `calculator` tool.

    swarm run examples/calculator.py --gateway http://127.0.0.1:8400 --run calculator

The rollout is the task's reference one (`swarm/tasks/calculator.py`): it offers the tool
through the OpenAI `tools` field, answers each `tool_calls` entry with a `tool` message
(a safe evaluator, never `eval`), and stops at a reply without tool calls or after 3 calls.
Reward: 1.0 for the right number in the final answer, +0.1 for a well-formed tool call.
"""

from swarm.tasks import calculator
from swarm.tasks.calculator import rollout  # noqa: F401  (the workflow's `rollout`)


def tasks(split: str = "train"):
    return calculator.tasks(split, seed=0)  # {"id", "question", "expression", "answer"}
