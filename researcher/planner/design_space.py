"""The design space: a `Reading` (one factor over levels, on a task, judged by an outcome in a
direction) turned into arms — one per level, control first, each the task's full run settings
with the level applied.

Owns the base run settings of each shipped task (`base_run`), how a factor's level reaches an
arm (a `POST /runs` field, a LoRA spec, a sampling setting or workflow parameter, the task
mix, the base model), and arm names ("kl_coef-0.5", "lora-r16", "arithmetic+calculator").
The hypothesis and decision rule in words are `wording.py`'s.

Must not know about the question's words (that is `reading/`), LangGraph, the gateway's HTTP
API or the database.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from researcher.plan import Arm, Level, Reading
from researcher.planner.catalogue import LORA_LR, WORKFLOW_PREFIX, WORKFLOW_TASK

# what the demo trains SmolLM2-135M with on CPU: small groups, short completions
BASE_RUN: dict[str, Any] = {
    "algorithm": "grpo",
    "lr": 2e-5,
    "group_size": 4,
    "batch_groups": 4,
    "kl_coef": 0.0,
}
LEARNABLE_RUN: dict[str, Any] = {**BASE_RUN, "group_size": 8}
MIN_EFFECT = 0.05  # in the outcome's units (accuracy, reward); relative for cost
SAMPLING = ("temperature", "max_tokens")  # sent with every chat call of an episode
WORKFLOW_SETTINGS = (*SAMPLING, "max_turns")  # given to the workflow, not to the run

FactorKind = Literal["run", "lora", "workflow", "task_mix", "base_model"]


def base_run(task: str) -> dict[str, Any]:
    return dict(LEARNABLE_RUN if task == "learnable" else BASE_RUN)


def factor_kind(factor: str) -> FactorKind:
    """Where a factor's level goes: an arm's `run`, its `workflow_params`, or its tasks."""
    if factor in ("lora", "task_mix", "base_model"):
        return factor  # type: ignore[return-value]
    if factor in WORKFLOW_SETTINGS or factor.startswith(WORKFLOW_PREFIX):
        return "workflow"
    return "run"


def is_dose_response(reading: Reading) -> bool:
    return len(reading.levels) >= 3


# -- levels in words and names ----------------------------------------------------------------


def format_number(value: float | int) -> str:
    """0.0 → "0", 5e-06 → "5e-6", 0.5 → "0.5"."""
    text = f"{value:g}"
    return re.sub(
        r"e([+-])0*(\d)", lambda m: f"e{'-' if m.group(1) == '-' else ''}{m.group(2)}", text
    )


def format_level(level: Level) -> str:
    if isinstance(level, bool):
        return str(level).lower()
    if isinstance(level, int | float):
        return format_number(level)
    if isinstance(level, dict):
        return " + ".join(f"{k} {format_number(v)}" for k, v in level.items())
    return "default" if level is None else str(level)


def _slug(text: str, limit: int = 40) -> str:
    return re.sub(r"[^a-z0-9_.+-]+", "-", text.lower()).strip("-.")[:limit].strip("-.") or "x"


def lora_rank(level: Level) -> int | None:
    """The LoRA rank a `lora` level asks for; None for full fine-tuning."""
    if isinstance(level, dict):
        return int(level["r"])
    if isinstance(level, bool) or level is None:
        return None
    if isinstance(level, int | float):
        return int(level)
    match = re.fullmatch(r"\s*r?\s*=?\s*(\d+)\s*", str(level).lower())
    return int(match.group(1)) if match else None


def _mix(level: Level) -> dict[str, float]:
    assert isinstance(level, dict), f"a task_mix level is a {{task: weight}} dict, got {level!r}"
    return {str(k): float(v) for k, v in level.items() if float(v) > 0}


def _mix_name(mix: dict[str, float], *, weighted: bool) -> str:
    if len(mix) == 1:
        return f"{next(iter(mix))}-only"
    if weighted:
        return "+".join(f"{k}{format_number(v)}" for k, v in mix.items())
    return "+".join(mix)


def arm_names(factor: str, levels: list[Level]) -> list[str]:
    """One file- and URL-safe name per level, unique within the design."""
    if factor == "task_mix":
        mixes = [_mix(level) for level in levels]
        plain = [_mix_name(mix, weighted=False) for mix in mixes]
        weighted = len(set(plain)) < len(plain)
        names = [_slug(_mix_name(mix, weighted=weighted), 60) for mix in mixes]
    elif factor == "base_model":
        names = [_slug(str(level).split("/")[-1]) for level in levels]
    elif factor == "lora":
        names = [
            "lora-full" if lora_rank(level) is None else f"lora-r{lora_rank(level)}"
            for level in levels
        ]
    else:
        label = factor.removeprefix(WORKFLOW_PREFIX)
        names = [_slug(f"{label}-{format_level(level)}") for level in levels]
        if any(isinstance(level, str) and len(level) > 16 for level in levels):
            # long texts (prompts) make unreadable names: the control, then v1, v2, ...
            names = [
                _slug(f"{label}-{'control' if i == 0 else f'v{i}'}") for i in range(len(levels))
            ]
    unique: list[str] = []
    for name in names:
        candidate, n = name, 2
        while candidate in unique:
            candidate, n = f"{name}-{n}", n + 1
        unique.append(candidate)
    return unique


def level_phrase(factor: str, level: Level) -> str:
    """A level in words: "kl_coef 0.5", "LoRA r=16", "full fine-tuning", "base model X"."""
    if factor == "lora":
        rank = lora_rank(level)
        return "full fine-tuning" if rank is None else f"LoRA r={rank}"
    if factor == "task_mix":
        mix = _mix(level)
        if len(mix) == 1:
            return f"{next(iter(mix))} alone"
        return "a mix of " + " + ".join(f"{k} {format_number(v)}" for k, v in mix.items())
    if factor == "base_model":
        return f"base model {level}"
    if factor.startswith(WORKFLOW_PREFIX):
        name = factor.removeprefix(WORKFLOW_PREFIX)
        if not isinstance(level, str):  # a number or a flag reads as itself: few_shot=3
            return f"{name}={format_level(level)}"
        # head and tail: prompts that differ only in an added sentence stay told apart
        text = level if len(level) <= 40 else f"{level[:18]}…{level[-20:]}"
        return f"{name}={text!r}"
    return f"{factor} {format_level(level)}"


# -- arms ---------------------------------------------------------------------------------------


def build_arms(reading: Reading) -> list[Arm]:
    """One arm per level, control first: the task's full base run with the level applied."""
    names = arm_names(reading.factor, reading.levels)
    control = reading.levels.index(reading.control) if reading.control in reading.levels else 0
    order = [control, *[i for i in range(len(reading.levels)) if i != control]]
    return [
        _arm(reading, reading.levels[i], names[i], "control" if i == control else "treatment")
        for i in order
    ]


def _arm(reading: Reading, level: Level, name: str, role: str) -> Arm:
    factor, task = reading.factor, reading.task
    kind = factor_kind(factor)
    tasks = _mix(level) if kind == "task_mix" else {task: 1.0}
    run = base_run(task)
    if task != WORKFLOW_TASK:
        run["task_mix"] = dict(tasks)  # the user's workflow tags no task families
    workflow_params: dict[str, Any] = {}
    description = level_phrase(factor, level)
    if kind == "run":
        if level is None:
            run.pop(factor, None)
        else:
            run[factor] = level
        if factor == "group_size" and isinstance(level, int) and level >= 1:
            description = _group_size(run, base_run(task), level, reading.episodes_per_step)
        elif factor == "batch_groups" and isinstance(level, int) and reading.episodes_per_step:
            # a fixed total: the group size follows the number of groups (2 at least: a
            # group of one has no variance to learn from)
            run["group_size"] = max(2, round(reading.episodes_per_step / level))
            description += f" x group_size {run['group_size']}"
    elif kind == "lora":
        rank = lora_rank(level)
        held_lr = reading.held.get("lr")  # "at lr 1e-4": one lr for both methods
        if rank is None:
            lr = format_number(held_lr if held_lr is not None else run["lr"])
            description = f"full fine-tuning (all parameters, lr {lr})"
        else:
            run["lora"] = dict(level) if isinstance(level, dict) else {"r": rank, "alpha": 2 * rank}
            alpha = run["lora"].get("alpha", 2 * rank)
            if held_lr is not None:
                description = f"LoRA adapters r={rank}, alpha={alpha}, lr {format_number(held_lr)}"
            else:
                run["lr"] = LORA_LR  # (a note "lr X" still sets every arm's lr)
                description = (
                    f"LoRA adapters r={rank}, alpha={alpha}, lr {format_number(run['lr'])} (the "
                    f"usual higher LoRA learning rate; full fine-tuning keeps "
                    f"{format_number(base_run(task)['lr'])})"
                )
    elif kind == "workflow":
        if level is not None:
            workflow_params[factor.removeprefix(WORKFLOW_PREFIX)] = level
        elif factor == "max_turns":
            description = "max_turns: the task's own turn budget"
    elif kind == "base_model":
        run["base_model"] = level
    for setting, value in reading.held.items():  # "at lr 1e-5": every arm, whatever its level
        if setting == factor:
            continue
        if factor_kind(setting) == "workflow":  # a sampling setting or PARAM: "at few_shot=3"
            workflow_params[setting.removeprefix(WORKFLOW_PREFIX)] = value
        elif setting == "lora":  # "with LoRA rank 8": adapters, at LoRA's usual lr
            rank = lora_rank(value)
            if rank is None:
                run.pop("lora", None)
            else:
                run["lora"] = {"r": rank, "alpha": 2 * rank}
                if factor != "lr" and "lr" not in reading.held:
                    run["lr"] = LORA_LR
            description += f" with {level_phrase('lora', value)}"
        else:
            run[setting] = value
    episodes = reading.episodes_per_step
    if (
        episodes
        and factor not in ("group_size", "batch_groups")
        and "batch_groups" not in reading.held
    ):
        run["batch_groups"] = max(1, round(episodes / run["group_size"]))
        description += f" ({run['group_size']} x {run['batch_groups']} episodes per step)"
    role_note = " (control)" if role == "control" else ""
    return Arm(
        name=name,
        role=role,  # type: ignore[arg-type]
        description=description + role_note,
        tasks=tasks,
        run=run,
        workflow_params=workflow_params,
        level=level,
    )


def _group_size(run: dict[str, Any], base: dict[str, Any], size: int, episodes: int | None) -> str:
    """Groups of `size` at about the episodes per step the question fixes (else the base
    run's): batch_groups adjusted."""
    episodes = episodes or base["group_size"] * base["batch_groups"]
    run["batch_groups"] = max(1, round(episodes / size))
    return (
        f"group_size {size} x batch_groups {run['batch_groups']} (about {episodes} episodes "
        f"per step, as every arm)"
    )
