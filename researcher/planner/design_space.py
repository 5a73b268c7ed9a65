"""The design space: a `Reading` (one factor over levels, on a task, judged by an outcome in a
direction) turned into arms, a hypothesis and a pre-registered decision rule, in words.

Owns the base run settings of each shipped task (`base_run`), how a factor's level reaches an
arm (a `POST /runs` field, a LoRA spec, a sampling setting or workflow parameter, the task
mix, the base model), arm names ("kl_coef-0.5", "lora-r16", "arithmetic+calculator"), and
the wording of hypotheses and decision rules by outcome and direction. The statistics that
apply the rule live in `researcher.analysis`; this module only states it.

Must not know about the question's words (that is `reader.py`), LangGraph, the gateway's HTTP
API or the database.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from researcher.plan import Arm, Level, Reading
from researcher.planner.catalogue import WORKFLOW_PREFIX, WORKFLOW_TASK

# what the demo trains SmolLM2-135M with on CPU: small groups, short completions
BASE_RUN: dict[str, Any] = {
    "algorithm": "grpo",
    "lr": 2e-5,
    "group_size": 4,
    "batch_groups": 4,
    "kl_coef": 0.0,
}
LEARNABLE_RUN: dict[str, Any] = {**BASE_RUN, "group_size": 8}
LORA_LR = 1e-4  # LoRA adapters train with a higher lr than full fine-tuning, as usual
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
        text = format_level(level)
        text = text if len(text) <= 40 else text[:37] + "..."
        return f"{factor.removeprefix(WORKFLOW_PREFIX)}={text!r}"
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
            description = _group_size(run, base_run(task), level)
    elif kind == "lora":
        rank = lora_rank(level)
        if rank is None:
            description = f"full fine-tuning (all parameters, lr {format_number(run['lr'])})"
        else:
            run["lora"] = dict(level) if isinstance(level, dict) else {"r": rank, "alpha": 2 * rank}
            if factor != "lr":
                run["lr"] = LORA_LR
            description = (
                f"LoRA adapters r={rank}, alpha={run['lora'].get('alpha', 2 * rank)}, lr "
                f"{format_number(run['lr'])} (the usual higher LoRA learning rate; full "
                f"fine-tuning keeps {format_number(base_run(task)['lr'])})"
            )
    elif kind == "workflow":
        if level is not None:
            workflow_params[factor.removeprefix(WORKFLOW_PREFIX)] = level
        elif factor == "max_turns":
            description = "max_turns: the task's own turn budget"
    elif kind == "base_model":
        run["base_model"] = level
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


def _group_size(run: dict[str, Any], base: dict[str, Any], size: int) -> str:
    """Groups of `size` at about the control's episodes per step: batch_groups adjusted."""
    episodes = base["group_size"] * base["batch_groups"]
    run["batch_groups"] = max(1, round(episodes / size))
    return (
        f"group_size {size} x batch_groups {run['batch_groups']} (about {episodes} episodes "
        f"per step, as every arm)"
    )


# -- the hypothesis and the decision rule, in words ------------------------------------------


def outcome_phrase(reading: Reading) -> str:
    task = "the user's workflow" if reading.task == WORKFLOW_TASK else reading.task
    if reading.outcome == "learning_speed":
        how = (
            f"training steps to reach a training reward of {format_number(reading.threshold)}"
            if reading.threshold is not None
            else "area under the training-reward curve"
        )
        return f"learning speed on {task} ({how})"
    if reading.outcome == "final_train_reward":
        return f"final training reward on {task}"
    if reading.outcome == "cost":
        return f"training cost on {task} (wall time per run; tokens generated also reported)"
    return f"held-out {task} accuracy"


def margin_text(reading: Reading) -> str:
    """The equivalence margin in words: a number, or for cost a share of the control's mean."""
    margin = reading.margin if reading.margin is not None else MIN_EFFECT
    if reading.outcome == "cost":
        return f"{margin:.0%} (relative to the control)"
    return format_number(margin)


def _claim(reading: Reading) -> tuple[str, str, str]:
    """(what the treatment does, how it compares, how it fails to) for the direction and
    outcome: ("slows learning on learnable (area under ...)", "learns slower", "does not
    learn slower")."""
    up, outcome = reading.direction == "greater", outcome_phrase(reading)
    if reading.outcome == "learning_speed":
        how = outcome[outcome.index("(") :]
        task = outcome[len("learning speed on ") : outcome.index(" (")]
        pace = "faster" if up else "slower"
        verb = "speeds up" if up else "slows"
        return f"{verb} learning on {task} {how}", f"learns {pace}", f"does not learn {pace}"
    if reading.outcome == "cost":
        more = "more" if up else "less"
        verb = "raises" if up else "lowers"
        return f"{verb} the {outcome}", f"costs {more}", f"does not cost {more}"
    more = "higher" if up else "lower"
    verb = "improves" if up else "lowers"
    return f"{verb} {outcome}", f"reaches {more} {outcome}", f"does not reach {more} {outcome}"


def hypothesis_text(reading: Reading) -> tuple[str, str, str]:
    """(statement, prediction, refuted_if) worded by direction, outcome and number of levels."""
    factor, outcome = reading.factor, outcome_phrase(reading)
    control = level_phrase(factor, reading.control)
    treatments = [level for level in reading.levels if level != reading.control]
    treated = " and ".join(level_phrase(factor, level) for level in treatments)
    margin = margin_text(reading)
    if reading.direction == "equivalent":
        every = "every one of " if len(treatments) > 1 else ""
        return (
            f"{every}{treated} is within ±{margin} of {control} on {outcome} (equivalence).",
            f"The difference in {outcome} between {treated} and {control} lies inside ±{margin}.",
            f"the difference is shown to lie beyond ±{margin} (the equivalence test rejects "
            f"equivalence).",
        )
    levels = " → ".join(format_level(level) for level in reading.levels)
    label = factor.removeprefix(WORKFLOW_PREFIX)
    if reading.direction == "two_sided":
        if is_dose_response(reading):
            return (
                f"{label} changes {outcome} across {levels} (dose-response: a monotone trend, "
                f"either way).",
                f"{outcome} moves steadily one way as {label} goes {levels}.",
                f"no monotone trend in {outcome} across the levels beyond the minimum effect.",
            )
        return (
            f"{treated} changes {outcome} compared with {control}.",
            f"{treated} and {control} differ in {outcome} by at least the minimum effect, "
            f"either way.",
            f"{treated} and {control} are within the minimum effect of each other.",
        )
    does, compares, fails = _claim(reading)
    if is_dose_response(reading):
        return (
            f"{label} {does}, in a dose-response: a monotone trend along {levels}.",
            f"Each later level of {label} ({levels}) {compares}, the last one by at least the "
            f"minimum effect over {control}.",
            f"the trend along {levels} is flat or goes the other way.",
        )
    return (
        f"{treated} {does}, compared with {control}.",
        f"{treated} {compares} than {control}.",
        f"{treated} {fails} than {control} by at least the minimum effect.",
    )


def min_effect_for(reading: Reading, steps: int) -> float:
    """The smallest difference that counts, in the outcome's units."""
    if reading.outcome == "learning_speed" and reading.threshold is not None:
        return float(max(1, round(0.1 * steps)))  # steps to the threshold
    return MIN_EFFECT


def metric_sentence(reading: Reading, *, steps: int, eval_episodes: int) -> str:
    """How each run is scored, for the decision rule."""
    task = "the workflow's" if reading.task == WORKFLOW_TASK else reading.task
    if reading.factor == "max_steps":
        steps_text = "its own max_steps"  # each arm trains for its level
    else:
        steps_text = f"{steps} steps"
    if reading.outcome == "learning_speed":
        if reading.threshold is not None:
            return (
                f"each run is scored by the training steps its reward/mean takes to first reach "
                f"{format_number(reading.threshold)} within {steps_text} (a run that never "
                f"does counts as its steps + 1; fewer steps is faster learning)"
            )
        return (
            f"each run is scored by the area under its training-reward curve (mean reward/mean "
            f"over {steps_text}; larger is faster learning)"
        )
    if reading.outcome == "final_train_reward":
        return f"each run is scored by its training reward (reward/mean) at the end of {steps_text}"
    if reading.outcome == "cost":
        return (
            f"each run is scored by its training wall time over {steps_text} (tokens generated "
            f"are reported too); differences are relative to the control's mean"
        )
    return (
        f"after {steps_text} of training each run's policy answers {eval_episodes} held-out "
        f"{task} tasks (test split); the metric is accuracy (reward ≥ 1.0)"
    )


def rule_sentence(
    reading: Reading, *, key: str, control: str, treatments: list[str], n_seeds: int,
    min_effect: float,
) -> str:  # fmt: skip
    """When `key` is supported, refuted or inconclusive, by direction (and dose-response)."""
    effect = format_number(min_effect)
    if reading.outcome == "cost":
        effect = f"{min_effect:.0%} of the control's mean"
    elif reading.outcome == "learning_speed" and reading.threshold is not None:
        effect = f"{effect} step(s)"
    diff = f"{' / '.join(treatments)} − {control} (means over {n_seeds} seed(s))"
    if reading.direction == "equivalent":
        margin = margin_text(reading)
        each = "every treatment arm's" if len(treatments) > 1 else "the"
        return (
            f"{key} is supported if {each} 90% interval of {diff} lies within ±{margin} (two "
            f"one-sided tests at 5%); refuted if the 95% interval lies entirely beyond ±{margin}; "
            f"inconclusive otherwise (a superiority test is not used)."
        )
    if is_dose_response(reading):
        order = " → ".join([control, *treatments])
        way = {
            "greater": "rises",
            "less": "falls",
            "two_sided": "moves monotonically (either way)",
        }[reading.direction]
        if reading.outcome == "learning_speed" and reading.threshold is not None:
            way = {
                "greater": "falls (fewer steps: faster learning)",
                "less": "rises (more steps: slower learning)",
            }.get(  # fmt: skip
                reading.direction, way
            )
        if reading.direction == "two_sided":
            slope, against = "excludes 0", "contains 0 and the whole trend is within " + effect
        else:
            in_steps = reading.outcome == "learning_speed" and reading.threshold is not None
            rising = (reading.direction == "greater") != in_steps  # fewer steps is faster
            slope = f"lies {'above' if rising else 'below'} 0"
            against = f"lies on the other side of 0 or the whole trend is within {effect}"
        return (
            f"Dose-response over the levels in the order {order}: {key} is supported if the "
            f"metric {way} — a monotone trend: the 95% bootstrap interval of the slope over the "
            f"levels' ranks {slope}, and the last level differs from {control} by at least "
            f"{effect}; refuted if the slope's interval {against}; inconclusive otherwise."
        )
    if reading.direction == "two_sided":
        return (
            f"{key} is supported if the 95% bootstrap interval of {diff} excludes 0 and "
            f"|difference| ≥ {effect}; refuted if the interval lies within ±{effect}; "
            f"inconclusive otherwise."
        )
    # steps to a threshold: fewer is faster, so "greater" (faster) wants a negative difference
    in_steps = reading.outcome == "learning_speed" and reading.threshold is not None
    if (reading.direction == "less") != in_steps:
        fewer = " (fewer steps)" if in_steps else ""
        return (
            f"{key} is supported if {diff} is at most −{effect} and the 95% bootstrap interval "
            f"of that difference lies below 0{fewer}; refuted if the interval's lower end is "
            f"above −{effect}; inconclusive otherwise."
        )
    more = " (more steps)" if in_steps else ""
    return (
        f"{key} is supported if {diff} is at least {effect} and the 95% bootstrap interval of "
        f"that difference lies above 0{more}; refuted if the interval's upper end is below "
        f"{effect}; inconclusive otherwise."
    )


def decision_rule(
    reading: Reading, *, key: str, arm_names: list[str], n_seeds: int, steps: int,
    eval_episodes: int, min_effect: float,
) -> str:  # fmt: skip
    """The pre-registered rule in words: how runs are scored, then when `key` is supported,
    refuted or inconclusive (arm_names: control first)."""
    metric = metric_sentence(reading, steps=steps, eval_episodes=eval_episodes)
    rule = rule_sentence(
        reading, key=key, control=arm_names[0], treatments=arm_names[1:], n_seeds=n_seeds,
        min_effect=min_effect,
    )  # fmt: skip
    return f"{metric[0].upper()}{metric[1:]}. {rule}"


def summary_text(reading: Reading) -> str:
    if reading.summary:
        return reading.summary
    levels = " vs ".join(level_phrase(reading.factor, level) for level in reading.levels)
    task = "the user's workflow" if reading.task == WORKFLOW_TASK else reading.task
    margin = margin_text(reading)
    claim = {
        "greater": "the question expects it higher",
        "less": "the question expects it lower",
        "two_sided": "a difference either way counts",
        "equivalent": f"an equivalence test within ±{margin}",
    }[reading.direction]
    return f"{levels} on {task}, judged by {outcome_phrase(reading)}; {claim}."


def reading_rows(reading: Reading) -> list[tuple[str, str]]:
    """The reading as (field, value) rows, for `researcher plan` / `start` to show."""
    margin = "-" if reading.margin is None else format_number(reading.margin)
    rows = [
        ("factor", reading.factor),
        ("levels", ", ".join(format_level(level) for level in reading.levels)),
        ("control", format_level(reading.control)),
        (
            "task",
            reading.task
            + (f" (tasks named: {', '.join(reading.tasks)})" if len(reading.tasks) > 1 else ""),
        ),  # fmt: skip
        ("outcome", outcome_phrase(reading)),
        ("direction", reading.direction),
        ("margin", margin),
    ]
    if reading.steps is not None:
        rows.append(("steps", str(reading.steps)))
    rows.append(("assumptions", "; ".join(reading.assumptions) or "-"))
    return rows
