"""`calculator`: multi-turn tool use — compute an expression with a `calculator` tool.

The rollout offers one OpenAI tool, `calculator({"expression": str})`, and loops for at most
`MAX_TURNS` model calls: when the reply has `tool_calls`, each is evaluated by `evaluate`
(an AST walk over numbers, + - * / and parentheses — never `eval`) and answered with a
`tool` message; a reply without tool calls is the final answer.

Reward: 1.0 when the final answer contains the right number, plus `TOOL_BONUS` (0.1) when
the episode made at least one well-formed tool call (the right name, JSON arguments with a
string "expression", and an expression the calculator accepts) — a small shaping term so a
policy is nudged towards the tool before it gets answers right. Range: 0.0 to 1.1.

Must not know about the gateway: the rollout uses only `Episode`.
"""

from __future__ import annotations

import ast
import json
import math
import operator
import random
from collections.abc import Callable, Iterator
from typing import Any

from swarm.errors import InvalidExpression
from swarm.tasks.answers import integers_in
from swarm.tasks.splits import draw_tasks

FAMILY = "calculator"
MAX_TURNS = 3
MAX_TOKENS = 96
TOOL_BONUS = 0.1
MAX_EXPRESSION_CHARS = 200
SYSTEM_PROMPT = (
    "You can use the calculator tool. Call it with the expression to compute, "
    "then answer with the result."
)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "calculator",
            "description": "Evaluate an arithmetic expression: numbers, + - * / and parentheses.",
            "parameters": {
                "type": "object",
                "properties": {
                    "expression": {"type": "string", "description": "e.g. (12 + 7) * 3"}
                },
                "required": ["expression"],
            },
        },
    }
]
SHAPES: tuple[tuple[str, Callable[[int, int, int], int | None]], ...] = (
    ("{a} * {b} + {c}", lambda a, b, c: a * b + c),
    ("{a} * {b} - {c}", lambda a, b, c: a * b - c),
    ("({a} + {b}) * {c}", lambda a, b, c: (a + b) * c),
    ("({a} - {b}) * {c}", lambda a, b, c: (a - b) * c),
    ("{a} * ({b} + {c})", lambda a, b, c: a * (b + c)),
    ("{a} / {b} + {c}", lambda a, b, c: a // b + c if a % b == 0 else None),
)
QUESTIONS = (
    "What is {expression}?",
    "Compute {expression}.",
    "Use the calculator to find {expression}.",
)

# -- the calculator -------------------------------------------------------------------------

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}


def evaluate(expression: str) -> int | float:
    """The value of an arithmetic expression; `InvalidExpression` for anything else
    (names, calls, attributes, powers, …), for division by zero and for overflow."""
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise InvalidExpression(f"expression longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as error:
        raise InvalidExpression(f"not an arithmetic expression: {expression!r}") from error
    try:
        value = _evaluate(tree.body)
    except OverflowError as error:
        raise InvalidExpression("the result is too large") from error
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidExpression("the result is too large")
        if value.is_integer():
            return int(value)
    return value


def _evaluate(node: ast.AST) -> int | float:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Div) and right == 0:
            raise InvalidExpression("division by zero")
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    refused = {
        ast.Name: "names are",
        ast.Call: "function calls are",
        ast.Attribute: "attributes are",
    }
    what = refused.get(type(node)) or f"{type(node).__name__} nodes are"
    if isinstance(node, ast.BinOp | ast.UnaryOp):
        what = f"the operator {type(node.op).__name__} is"
    raise InvalidExpression(f"{what} not allowed; use numbers, + - * / and parentheses")


def run_tool_call(name: str, arguments: str) -> tuple[str, bool]:
    """(the tool message's content, whether the call was well formed)."""
    if name != "calculator":
        return f"error: unknown tool {name!r}; the tool is 'calculator'", False
    try:
        expression = json.loads(arguments).get("expression")
    except (ValueError, AttributeError):
        return 'error: arguments must be JSON like {"expression": "2 + 3"}', False
    if not isinstance(expression, str):
        return 'error: arguments must be JSON like {"expression": "2 + 3"}', False
    try:
        return str(evaluate(expression)), True
    except InvalidExpression as error:
        return f"error: {error}", False


# -- tasks, reward, rollout -------------------------------------------------------------------


def _make(rng: random.Random) -> tuple[str, dict[str, Any]]:
    while True:
        shape, compute = rng.choice(SHAPES)
        a, b, c = rng.randint(2, 99), rng.randint(2, 99), rng.randint(2, 99)
        answer = compute(a, b, c)
        if answer is not None:
            break
    expression = shape.format(a=a, b=b, c=c)
    question = rng.choice(QUESTIONS).format(expression=expression)
    return expression, {"question": question, "expression": expression, "answer": answer}


def tasks(split: str = "train", seed: int = 0, n: int = 500) -> Iterator[dict[str, Any]]:
    """`n` distinct expressions of `split`, deterministic per `seed`."""
    return draw_tasks(FAMILY, split, seed, n, _make)


def reward(final_reply: str | None, task: dict[str, Any], used_tool_well: bool) -> float:
    """1.0 if the final reply contains the answer, plus TOOL_BONUS for a well-formed call."""
    correct = task["answer"] in integers_in(final_reply)
    return (1.0 if correct else 0.0) + (TOOL_BONUS if used_tool_well else 0.0)


async def rollout(task: dict[str, Any], episode) -> float:
    llm = episode.openai()
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": task["question"]},
    ]
    used_tool_well, final_reply = False, ""
    for _ in range(MAX_TURNS):
        response = await llm.chat.completions.create(
            model=episode.model, messages=messages, tools=TOOLS, max_tokens=MAX_TOKENS
        )
        message = response.choices[0].message
        if not message.tool_calls:
            final_reply = message.content or ""
            break
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            content, well_formed = run_tool_call(call.function.name, call.function.arguments)
            used_tool_well = used_tool_well or well_formed
            messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
    return reward(final_reply, task, used_tool_well)
