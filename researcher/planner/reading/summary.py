"""The reading in one sentence (`Reading.summary`): what is compared, on what, judged how,
which way, and the settings held for every arm.

Must not know how the reading was found, nor arms, budgets, the gateway or the database.
"""

from __future__ import annotations

from researcher.plan import Reading
from researcher.planner.catalogue import (
    FACTORS,
    WORKFLOW_PREFIX,
    WORKFLOW_TASK,
    describe_level,
    task_info,
    task_words,
)

_OUTCOME_NOUN = {
    "heldout_accuracy": "held-out accuracy",
    "learning_speed": "learning speed",
    "final_train_reward": "final training reward",
    "cost": "training cost",
}

_DIRECTION_VERB = {
    "greater": "raises",
    "less": "lowers",
    "two_sided": "changes",
}


def summarise(reading: Reading) -> str:
    """One sentence: what is compared, on what, judged how, which way."""
    factor = reading.factor
    if factor.startswith(WORKFLOW_PREFIX):
        what = f"your workflow's {factor[len(WORKFLOW_PREFIX) :]}"
    else:
        what = FACTORS[factor].what
    control = describe_level(factor, reading.control)
    others = [describe_level(factor, level) for level in reading.levels[1:]]
    if reading.task == WORKFLOW_TASK:
        on = "your workflow (its own reward)"
    else:
        info = task_info(reading.task)
        level = reading.task_levels.get(reading.task)
        at = f" at {info.level_knob} {level}" if info and level else ""
        on = f"{reading.task}{at} ({info.description if info else 'a task'})"
    judged = _OUTCOME_NOUN[reading.outcome]
    if reading.outcome == "heldout_accuracy":
        judged = (
            "your workflow's mean reward on its test split"
            if reading.task == WORKFLOW_TASK
            else f"held-out {task_words(reading.task, reading)} accuracy"
        )
    if reading.outcome == "learning_speed":
        judged += (
            f" (steps to a training reward of {reading.threshold:g})"
            if reading.threshold is not None
            else " (area under the training-reward curve)"
        )
    if reading.outcome == "cost":
        judged += " (wall time and tokens)"
    treatment = " / ".join(others)
    noun = _OUTCOME_NOUN[reading.outcome]
    if reading.outcome == "heldout_accuracy" and reading.task == WORKFLOW_TASK:
        noun = "the held-out mean reward"
    if reading.direction == "equivalent":
        way = f"{treatment} keeps {noun} within ±{reading.margin:g} of the control"
    elif reading.direction == "noninferior":
        way = (
            f"{treatment} keeps {noun} no lower than the control's by more than "
            f"{reading.margin:g} (non-inferiority)"
        )
    else:
        way = f"{treatment} {_DIRECTION_VERB[reading.direction]} {noun}"
        if reading.direction == "two_sided":
            way += " either way"
    held = " and ".join(f"{k} {describe_level(k, v)}" for k, v in reading.held.items())
    if reading.episodes_per_step:
        held = " and ".join(filter(None, [held, f"{reading.episodes_per_step} episodes per step"]))
    negated = (
        f" The question is negated: 'supported' means {treatment} does raise {noun} (the "
        "answer to it is no), 'refuted' that it does not (yes)."
        if reading.negated
        else ""
    )
    return (
        f"Compares {what} {treatment} against the control {control} on {on}"
        + (f" (every arm at {held})" if held else "")
        + f", judged by {judged}; asks whether {way}."
        + negated
    )
