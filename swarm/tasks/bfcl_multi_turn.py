"""The multi-turn part of the `bfcl` family: BFCL's `multi_turn_base` category against its
executable backends (a file system, a message and a posting API, a ticket system, a trading
bot, travel booking, vehicle control, a math API: Python classes in bfcl-eval, stateful per
conversation, nothing on the network).

A task is a conversation of 1-8 user turns; within a turn the model may call tools for at
most `MAX_STEPS_PER_TURN` steps (BFCL: 20); each step's calls run on this episode's own
backend instances and their results go back as `tool` messages; a reply without calls ends
the turn. Running past the step limit is BFCL's "force-terminated": reward 0.0.

Reward: BFCL's own `multi_turn_checker` on the calls made, per turn and step, in BFCL's
execution form (`name(arg=repr(value), ...)`, what BFCL's `convert_to_function_call` makes
of an OpenAI tool call): it re-runs the model's and the ground truth's calls on fresh
backends and compares their states and results after every turn. 1.0 when it accepts,
else 0.0.

BFCL runs a call by `eval` of that string, so a call is only run when its name is one of the
task's functions and its argument names are identifiers (its values are reprs of JSON
values): anything else gets an error result and is left out of what the checker re-runs,
where, having no effect on any backend's state, it would change nothing. BFCL keeps backend
instances in a module-level namespace keyed by a model name and the entry id; every episode
and every check uses a fresh name and removes its instances when done, so concurrent
episodes of one task never share a backend.

Must not know about the gateway: the rollout uses only `Episode`. `swarm.tasks.bfcl` serves
these tasks (`category="multi_turn_base"`) and dispatches its rollout and reward here.
"""

from __future__ import annotations

import ast
import keyword
import re
import uuid
from typing import Any

from swarm.tasks import bfcl

MAX_STEPS_PER_TURN = 5
MAX_TOKENS = 128


def _call_string(name: str, arguments: dict[str, Any]) -> str:
    """BFCL's execution form of a call (`convert_to_function_call`)."""
    return f"{name}({','.join(f'{k}={v!r}' for k, v in arguments.items())})"


def execution_calls(tool_calls: Any, allowed: set[str]) -> list[str | None] | None:
    """For each tool call, its execution string, or None when it may not run (a name not
    offered, an argument name that is not an identifier); None for calls BFCL's decoder
    refuses (no name, arguments that are not a JSON object), which end the turn."""
    decoded = bfcl.decode_tool_calls(tool_calls)
    if decoded is None:
        return None
    calls = [
        _call_string(name, arguments)
        if all(k.isidentifier() and not keyword.iskeyword(k) for k in arguments)
        else None
        for call in decoded
        for name, arguments in call.items()
    ]
    return [call if call is not None and is_safe_call(call, allowed) else None for call in calls]


def is_safe_call(call: str, allowed: set[str]) -> bool:
    """Whether BFCL may `eval` the call string: one call of an offered function whose
    arguments are all literals (what `execution_calls` makes, and BFCL's ground truth)."""
    try:
        node = ast.parse(call, mode="eval").body
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            return False
        for value in [*node.args, *(argument.value for argument in node.keywords)]:
            ast.literal_eval(value)
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return False
    return node.func.id in allowed and all(argument.arg is not None for argument in node.keywords)


class Backends:
    """This episode's (or check's) instances of BFCL's executable backends for one task."""

    def __init__(self, task: dict[str, Any]):
        self._utils = bfcl._import("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils")
        self._task = task
        self.name = f"swarmrl_{uuid.uuid4().hex}"

    def run(self, calls: list[str]) -> list[str]:
        results, _ = self._utils.execute_multi_turn_func_call(
            calls, self._task["initial_config"], self._task["involved_classes"], self.name,
            self._task["bfcl_id"], long_context=False, is_evaL_run=False,
        )  # fmt: skip
        return results

    def close(self) -> None:
        prefix = re.sub(r"[-./:]", "_", self.name)
        namespace = vars(self._utils)
        for key in [key for key in namespace if key.startswith(prefix)]:
            del namespace[key]


def check(calls_per_turn: list[list[list[str]]], task: dict[str, Any]) -> dict[str, Any]:
    """BFCL's verdict on the calls made: one list per turn of one list per step. A call
    BFCL may not `eval` (`is_safe_call`) is left out, as if it had failed to run."""
    if len(calls_per_turn) != len(task["ground_truth"]):
        return {"valid": False, "error_type": "multi_turn:force_terminated"}
    allowed = {function["name"] for function in task["functions"]}
    safe = [
        [kept for step in turn if (kept := [c for c in step if is_safe_call(c, allowed)])]
        for turn in calls_per_turn
    ]
    checker = bfcl._import("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker")
    backends = Backends(task)  # only for its fresh name and the clean-up
    entry = {key: task[key] for key in ("initial_config", "involved_classes")}
    try:
        return checker.multi_turn_checker(
            safe, task["ground_truth"], {**entry, "id": task["bfcl_id"]},
            task["category"], backends.name,
        )  # fmt: skip
    except Exception as error:  # the checker choking on a model's garbage: that is wrong
        return {"valid": False, "error_type": "checker_raised", "error_message": repr(error)}
    finally:
        backends.close()


async def rollout(task: dict[str, Any], episode) -> float:
    llm = episode.openai()
    allowed = {tool["function"]["name"] for tool in task["tools"]}
    backends = Backends(task)
    backends.run([])  # the backends start from the entry's initial state
    messages: list[dict[str, Any]] = []
    calls_per_turn: list[list[list[str]]] = []
    try:
        for turn in task["turns"]:
            messages.extend(turn)
            steps: list[list[str]] = []
            for _ in range(MAX_STEPS_PER_TURN):
                response = await llm.chat.completions.create(
                    model=episode.model, messages=messages, tools=task["tools"],
                    max_tokens=task.get("max_tokens", MAX_TOKENS),
                )  # fmt: skip
                message = response.choices[0].message
                calls = execution_calls(message.tool_calls, allowed)
                if not calls:  # a reply without (usable) calls ends the turn
                    messages.append({"role": "assistant", "content": message.content or ""})
                    break
                messages.append(message.model_dump(exclude_none=True))
                runnable = [call for call in calls if call is not None]
                results = iter(backends.run(runnable))
                for call, tool_call in zip(calls, message.tool_calls, strict=True):
                    content = next(results) if call is not None else (
                        f"Error during execution: {tool_call.function.name!r} is not one of the "
                        "offered functions, or an argument name is not an identifier")  # fmt: skip
                    messages.append({"role": "tool", "tool_call_id": tool_call.id, "content": content})  # fmt: skip
                if runnable:
                    steps.append(runnable)
            else:
                return 0.0  # past the step limit: BFCL's force-terminated
            calls_per_turn.append(steps)
    finally:
        backends.close()
    return 1.0 if check(calls_per_turn, task)["valid"] else 0.0
