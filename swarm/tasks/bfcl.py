"""`bfcl`: function calling from the Berkeley Function Calling Leaderboard (bfcl-eval).

`tasks(split, seed, n, category="simple")` serves the entries of one of BFCL's single-turn
Python categories, read from the data files that the `bfcl-eval` wheel ships (nothing is
downloaded): "simple" (BFCL v4's `simple_python`, 400 entries: one function offered, one
call expected), "multiple" (200: several functions offered, one call), "parallel" (200: one
function, several calls) and "parallel_multiple" (200). A task's split is a function of
its BFCL id (`swarm.tasks.splits`), so train (~80%) and test (~20%) are disjoint for every
seed; the seed only orders a split.

The reference rollout sends the entry's question as the chat messages and its functions as
OpenAI `tools` (BFCL's own type table, `GORILLA_TO_OPENAPI`; "." in a function name becomes
"_", as BFCL does for OpenAI-style models, since the tools API refuses dots) and reads the
reply's `tool_calls`. The reward is BFCL's own AST checker
(`bfcl_eval.eval_checker.ast_eval.ast_checker`) on those calls, decoded the way BFCL's
OpenAI function-calling handler decodes them (`[{name: json.loads(arguments)}]`): 1.0 when
the checker accepts them, 0.0 when it does not, and 0.0 — never an exception — for no call,
arguments that are not a JSON object, or anything the checker chokes on.

Installing: bfcl-eval declares ~60 dependencies (model-vendor SDKs, sentence-transformers,
faiss, a numpy==1.26.4 pin) for its leaderboard runner; its checker and data need none of
them, so it is installed without them: `pip install --no-deps 'bfcl-eval==2026.3.23'`
(`make install` does). The checker module imports BFCL's model registry only to read one
flag of the scored model (`underscore_to_dot`), and that registry imports every vendor SDK,
so the checker is loaded beside a stand-in registry holding the one entry scored here
(`CHECKER_MODEL`, an OpenAI function-calling model, whose flag is True, as in BFCL's); the
checker's code is BFCL's, unchanged.

Must not know about the gateway: the rollout uses only `Episode`. bfcl-eval is imported on
first use, so `import swarm.tasks.bfcl` stays cheap and works without it.
"""

from __future__ import annotations

import functools
import importlib
import json
import re
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from swarm.tasks.splits import shuffled_tasks

FAMILY = "bfcl"
REQUIREMENT = "bfcl-eval==2026.3.23"  # installed with --no-deps (see the docstring)
CATEGORIES = {  # our name -> BFCL's category (its data file and the checker's dispatch)
    "simple": "simple_python",
    "multiple": "multiple",
    "parallel": "parallel",
    "parallel_multiple": "parallel_multiple",
    "multi_turn_base": "multi_turn_base",  # the executable backends: bfcl_multi_turn.py
}
DEFAULT_CATEGORY = "simple"
MAX_TOKENS = 128  # one call's JSON; the parallel categories get PARALLEL_MAX_TOKENS
PARALLEL_MAX_TOKENS = 256
CHECKER_MODEL = "gpt-4o-2024-11-20-FC"  # a BFCL registry entry: OpenAI tools, dots as "_"
_REGISTRY = "bfcl_eval.constants.model_config"


def _import(module: str):
    """bfcl-eval's `module`; it is optional (installed with --no-deps, see above)."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as missing:
        if missing.name != "bfcl_eval":
            raise
        raise ModuleNotFoundError(
            f"the bfcl task family needs bfcl-eval, installed without its dependencies (its "
            f"checker and data need none of them): pip install --no-deps '{REQUIREMENT}' "
            f"(`make install` does)",
            name="bfcl_eval",
        ) from missing


def _bfcl_category(category: str) -> str:
    if category in CATEGORIES:
        return CATEGORIES[category]
    if category in CATEGORIES.values():
        return category
    raise ValueError(f"bfcl: unknown category {category!r}; known: {', '.join(CATEGORIES)}")


def _data_file(folder: Path, category: str) -> Path:
    """The newest `BFCL_v<N>_<category>.json` in `folder` (not `..._live_<category>.json`)."""
    name = re.compile(rf"BFCL_v(\d+)_{re.escape(category)}\.json")
    found = sorted(
        (int(match.group(1)), path)
        for path in folder.glob("BFCL_v*.json")
        if (match := name.fullmatch(path.name))
    )
    if not found:
        raise FileNotFoundError(f"bfcl-eval ships no {category} data in {folder}")
    return found[-1][1]


def _json_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@functools.lru_cache(maxsize=8)
def entries(category: str) -> tuple[tuple[dict[str, Any], list[dict[str, Any]]], ...]:
    """(entry, ground truth) for each entry of BFCL's `category`, in BFCL's order."""
    data = Path(_import("bfcl_eval").__file__).parent / "data"
    answers = {a["id"]: a["ground_truth"] for a in _json_lines(_data_file(data / "possible_answer", category))}  # fmt: skip
    return tuple((entry, answers[entry["id"]]) for entry in _json_lines(_data_file(data, category)))


def _openai_schema(node: dict[str, Any], types_: dict[str, str]) -> dict[str, Any]:
    """A BFCL parameter schema as JSON Schema: its types through BFCL's table, nested too."""
    schema = dict(node)
    schema["type"] = types_.get(node.get("type", "string"), "string")
    if isinstance(node.get("properties"), dict):
        schema["properties"] = {k: _openai_schema(v, types_) for k, v in node["properties"].items()}
    if isinstance(node.get("items"), dict):
        schema["items"] = _openai_schema(node["items"], types_)
    return schema


def openai_tools(functions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """BFCL function documents as OpenAI `tools` (what BFCL's OpenAI handler sends)."""
    types_ = _import("bfcl_eval.constants.type_mappings").GORILLA_TO_OPENAPI
    tools = []
    for function in functions:
        parameters = _openai_schema(function.get("parameters", {}), types_)
        parameters["type"] = "object"
        tool = {**function, "name": function["name"].replace(".", "_"), "parameters": parameters}
        tools.append({"type": "function", "function": tool})
    return tools


def _function_docs(involved_classes: list[str]) -> list[dict[str, Any]]:
    """The documents of a multi-turn entry's functions: those of its backend classes (BFCL's
    `populate_test_cases_with_predefined_functions`)."""
    files = _import(
        "bfcl_eval.constants.executable_backend_config"
    ).MULTI_TURN_FUNC_DOC_FILE_MAPPING
    folder = Path(_import("bfcl_eval").__file__).parent / "data" / "multi_turn_func_doc"
    return [doc for name in involved_classes for doc in _json_lines(folder / files[name])]


def _task_fields(category: str, entry: dict[str, Any], truth: list[Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {"category": category, "bfcl_id": entry["id"]}
    if category.startswith("multi_turn"):
        functions = _function_docs(entry["involved_classes"])
        fields.update(turns=entry["question"], initial_config=entry["initial_config"],
                      involved_classes=entry["involved_classes"])  # fmt: skip
    else:
        functions = entry["function"]
        fields.update(messages=entry["question"][0])  # single-turn: the first (only) turn
    max_tokens = PARALLEL_MAX_TOKENS if "parallel" in category else MAX_TOKENS
    tools = openai_tools(functions)
    # one call is always right in these categories: "required" has the gateway constrain the
    # reply to one well-formed call of an offered function, so the checker judges its values
    # (with "auto" a small model mostly answers in prose: no call, no reward, no signal)
    choice = "auto" if "parallel" in category or category.startswith("multi_turn") else "required"
    return {**fields, "functions": functions, "tools": tools, "ground_truth": truth,
            "max_tokens": max_tokens, "tool_choice": choice}  # fmt: skip


def tasks(
    split: str = "train",
    seed: int = 0,
    n: int | None = None,
    category: str = DEFAULT_CATEGORY,
) -> Iterator[dict[str, Any]]:
    """The tasks of `split` of BFCL's `category` in a seed-dependent order (the first `n`;
    default: all of them). Each carries the BFCL id, its chat `messages` (multi-turn: its
    `turns`, `initial_config` and `involved_classes`), the BFCL `functions` and the same as
    OpenAI `tools`, and the `ground_truth` the checker reads."""
    bfcl_category = _bfcl_category(category)
    space = [(entry["id"], _task_fields(bfcl_category, entry, truth))
             for entry, truth in entries(bfcl_category)]  # fmt: skip
    return shuffled_tasks(FAMILY, split, seed, space, n)


# -- the reward: BFCL's own AST checker -------------------------------------------------------


class _Registry(dict):
    """The stand-in for BFCL's model registry: CHECKER_MODEL's entry, and any other model's
    looked up in BFCL's own registry (which needs the vendor SDKs)."""

    def __missing__(self, model: str):
        return importlib.import_module(_REGISTRY).MODEL_CONFIG_MAPPING[model]


@functools.cache
def _ast_checker():
    """BFCL's `ast_checker`. Unless BFCL's registry is loaded already, the checker module is
    imported beside the stand-in registry, which is taken out of sys.modules again."""
    _import("bfcl_eval")
    name = "bfcl_eval.eval_checker.ast_eval.ast_checker"
    if name in sys.modules or _REGISTRY in sys.modules:
        return importlib.import_module(name).ast_checker
    stand_in = types.ModuleType(_REGISTRY)
    stand_in.MODEL_CONFIG_MAPPING = _Registry({CHECKER_MODEL: types.SimpleNamespace(underscore_to_dot=True)})  # fmt: skip
    sys.modules[_REGISTRY] = stand_in
    try:
        return importlib.import_module(name).ast_checker
    finally:
        del sys.modules[_REGISTRY]


def decode_tool_calls(tool_calls: Any) -> list[dict[str, dict[str, Any]]] | None:
    """OpenAI tool calls (SDK objects or their dicts) in the form BFCL's checker reads,
    `[{name: {argument: value}}]`; None when a call is malformed (no name, or arguments
    that are not a JSON object)."""
    decoded = []
    for call in tool_calls or []:
        function = (
            call.get("function") if isinstance(call, dict) else getattr(call, "function", None)
        )
        if isinstance(function, dict):
            name, arguments = function.get("name"), function.get("arguments")
        else:
            name, arguments = getattr(function, "name", None), getattr(function, "arguments", None)
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                return None
        if not isinstance(name, str) or not isinstance(arguments, dict):
            return None
        decoded.append({name: arguments})
    return decoded


def check(tool_calls: Any, task: dict[str, Any]) -> dict[str, Any]:
    """BFCL's verdict on `tool_calls` for `task`: {"valid": bool, "error": [...], ...}."""
    if "turns" in task:
        raise ValueError(f"{task['bfcl_id']} is multi-turn: score it with multi_turn_reward")
    decoded = decode_tool_calls(tool_calls)
    if decoded is None:
        return {"valid": False, "error": ["malformed tool call"], "error_type": "decode"}
    if not decoded:
        return {"valid": False, "error": ["no tool call"], "error_type": "decode"}
    language = _import("bfcl_eval.constants.enums").Language.PYTHON
    try:
        return _ast_checker()(
            task["functions"],
            decoded,
            task["ground_truth"],
            language,
            task["category"],
            CHECKER_MODEL,
        )
    except Exception as error:  # the checker choking on a model's garbage: that call is wrong
        return {"valid": False, "error": [repr(error)], "error_type": "checker_raised"}


def reward(tool_calls: Any, task: dict[str, Any]) -> float:
    """1.0 when BFCL's AST checker accepts the calls, else 0.0 (no call, malformed: 0.0).
    A multi-turn task's reward is `multi_turn_reward`."""
    return 1.0 if check(tool_calls, task)["valid"] else 0.0


def multi_turn_reward(calls_per_turn: list[list[list[str]]], task: dict[str, Any]) -> float:
    """1.0 when BFCL's multi-turn checker accepts the calls made (per turn, per step, in
    BFCL's execution form `name(arg=value, ...)`), else 0.0."""
    from swarm.tasks import bfcl_multi_turn

    return 1.0 if bfcl_multi_turn.check(calls_per_turn, task)["valid"] else 0.0


async def rollout(task: dict[str, Any], episode) -> float:
    if "turns" in task:  # multi-turn, against BFCL's executable backends
        from swarm.tasks import bfcl_multi_turn

        return await bfcl_multi_turn.rollout(task, episode)
    llm = episode.openai()
    response = await llm.chat.completions.create(
        model=episode.model,
        messages=task["messages"],
        tools=task["tools"],
        tool_choice=task.get("tool_choice", "auto"),
        max_tokens=task.get("max_tokens", MAX_TOKENS),
    )
    return reward(response.choices[0].message.tool_calls, task)
