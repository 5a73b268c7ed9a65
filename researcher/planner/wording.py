"""A design in words: the hypothesis and the pre-registered decision rule of a `Reading`, by
outcome (held-out accuracy, learning speed, final training reward, cost) and direction
(greater, less, two-sided, equivalence; three or more levels: dose-response), and the
reading as rows to show (`researcher plan`, `researcher start`, the frame event).

The statistics that apply the rule live in `researcher.analysis`; this module only states it,
with the same verdicts: supported, refuted, inconclusive. Must not know about the question's
words, LangGraph, the gateway or the database.
"""

from __future__ import annotations

from researcher.analysis import describe_rule
from researcher.plan import Design, Reading
from researcher.planner.budget import MIN_EVAL_EPISODES
from researcher.planner.catalogue import (
    FACTORS,
    LORA_LR,
    WORKFLOW_PREFIX,
    WORKFLOW_TASK,
    describe_level,
    task_words,
)
from researcher.planner.design_space import (
    MIN_EFFECT,
    format_level,
    format_number,
    is_dose_response,
    level_phrase,
)


def outcome_phrase(reading: Reading) -> str:
    task = "your workflow" if reading.task == WORKFLOW_TASK else reading.task
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
    if reading.task == WORKFLOW_TASK:
        return "held-out mean reward of your workflow (its test split)"
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
    """(statement, prediction, refuted_if) worded by direction, outcome and number of levels,
    the settings the question holds for every arm said in the statement."""
    statement, prediction, refuted_if = _hypothesis_text(reading)
    if reading.held:
        statement = f"{statement.rstrip('.')}, {held_words(reading)}."
    usual = usual_lr_words(reading)
    if usual:
        statement = f"{statement.rstrip('.')} ({usual})."
    if reading.negated:
        statement += " (The question asks the negation: 'supported' answers it no.)"
    return statement, prediction, refuted_if


def usual_lr_words(reading: Reading) -> str:
    """LoRA against full fine-tuning with no lr held: each arm trains at its method's usual
    lr, so the comparison is of the methods as usually run ("" otherwise)."""
    if reading.factor != "lora" or "lr" in reading.held or "full" not in reading.levels:
        return ""
    full = format_number(FACTORS["lr"].default)
    return f"each arm at its usual lr: LoRA {format_number(LORA_LR)}, full {full}"


def held_words(reading: Reading) -> str:
    """The held settings in words: "every arm at lr 1e-05 and algorithm rloo"."""
    held = " and ".join(f"{k} {format_level(v)}" for k, v in reading.held.items())
    return f"every arm at {held}" if held else ""


def _hypothesis_text(reading: Reading) -> tuple[str, str, str]:
    factor, outcome = reading.factor, outcome_phrase(reading)
    control = level_phrase(factor, reading.control)
    treatments = [level for level in reading.levels if level != reading.control]
    treated = " and ".join(level_phrase(factor, level) for level in treatments)
    margin = margin_text(reading)
    if reading.direction == "noninferior":
        every = "every one of " if len(treatments) > 1 else ""
        # steps to a threshold: fewer is better, so "no worse" is "not more steps by more"
        beyond, side, worse = (
            ("+", "below", "above") if _in_steps(reading) else ("−", "above", "below")
        )
        return (
            f"{every}{treated} is no worse than {control} on {outcome} by more than {margin} "
            "(non-inferiority).",
            f"The difference in {outcome} between {treated} and {control} lies {side} "
            f"{beyond}{margin}.",
            f"the difference is shown to lie {worse} {beyond}{margin} ({treated} is worse by "
            "more than the margin).",
        )
    if reading.direction == "equivalent":
        every = "every one of " if len(treatments) > 1 else ""
        return (
            f"{every}{treated} is within ±{margin} of {control} on {outcome} (equivalence).",
            f"The difference in {outcome} between {treated} and {control} lies inside ±{margin}.",
            f"the difference is shown to lie beyond ±{margin} (the equivalence test rejects "
            f"equivalence).",
        )
    ordered = reading.levels
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in ordered):
        ordered = sorted(ordered)  # a trend reads in the levels' order, not the control's
    levels = " → ".join(format_level(level) for level in ordered)
    label = factor.removeprefix(WORKFLOW_PREFIX)
    # a trend is judged only along 3+ numeric levels with a one-sided direction (analysis.py);
    # otherwise each treatment is compared with the control
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in reading.levels)
    trend = is_dose_response(reading) and numeric and reading.direction in ("greater", "less")
    if reading.direction == "two_sided":
        if is_dose_response(reading):
            across = levels if numeric else ", ".join(format_level(v) for v in reading.levels)
            return (
                f"{label} matters for {outcome} across {across}: at least one of {treated} "
                f"differs from {control}.",
                f"At least one of {treated} differs from {control} in {outcome} by at least the "
                "minimum effect, either way (each compared with the control).",
                f"every one of {treated} is within the minimum effect of {control}.",
            )
        return (
            f"{treated} changes {outcome} compared with {control}.",
            f"{treated} and {control} differ in {outcome} by at least the minimum effect, "
            f"either way.",
            f"{treated} and {control} are within the minimum effect of each other.",
        )
    does, compares, fails = _claim(reading)
    if trend:
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
    if _in_steps(reading):
        return float(max(1, round(0.1 * steps)))
    return MIN_EFFECT if reading.min_effect is None else reading.min_effect


def metric_sentence(reading: Reading, *, steps: int, eval_episodes: int) -> str:
    """How each run is scored, for the decision rule."""
    task = "workflow" if reading.task == WORKFLOW_TASK else task_words(reading.task, reading)
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
            f"are reported too)"
        )
    metric = (
        "the workflow's own reward, averaged (mean reward)"
        if reading.task == WORKFLOW_TASK
        else "accuracy (reward ≥ 1.0)"
    )
    return (
        f"after {steps_text} of training each run's policy answers {eval_episodes} held-out "
        f"{task} tasks (test split); the metric is {metric}"
    )


def _in_steps(reading: Reading) -> bool:
    """Learning speed scored as steps to a threshold, where fewer steps is faster."""
    return reading.outcome == "learning_speed" and reading.threshold is not None


def decision_rule(reading: Reading, design: Design) -> str:
    """The pre-registered rule in words: how each run is scored, then the rule itself as the
    analysis states it (`analysis.describe_rule`): one place decides what is supported."""
    rule = describe_rule(design)
    if reading.outcome != "heldout_accuracy":
        return rule  # the rule names the outcome and how it is scored
    metric = metric_sentence(reading, steps=design.steps, eval_episodes=design.eval_episodes)
    return f"{metric[0].upper()}{metric[1:]}. {rule}"


def summary_text(reading: Reading) -> str:
    if reading.summary:
        return reading.summary
    levels = " vs ".join(level_phrase(reading.factor, level) for level in reading.levels)
    task = "your workflow" if reading.task == WORKFLOW_TASK else reading.task
    margin = margin_text(reading)
    claim = {
        "greater": "the question expects it higher",
        "less": "the question expects it lower",
        "two_sided": "a difference either way counts",
        "equivalent": f"an equivalence test within ±{margin}",
        "noninferior": f"a non-inferiority test: no worse by more than {margin}",
    }[reading.direction]
    return f"{levels} on {task}, judged by {outcome_phrase(reading)}; {claim}."


def reading_rows(reading: Reading) -> list[tuple[str, str]]:
    """The reading as (field, value) rows, for `researcher plan` / `start` to show."""
    margin = "-" if reading.margin is None else format_number(reading.margin)
    rows = [
        ("factor", reading.factor),
        ("levels", ", ".join(describe_level(reading.factor, level) for level in reading.levels)),
        ("control", describe_level(reading.factor, reading.control)),
        (
            "task",
            reading.task
            + (f" (tasks named: {', '.join(reading.tasks)})" if len(reading.tasks) > 1 else ""),
        ),  # fmt: skip
        ("outcome", outcome_phrase(reading)),
        ("direction", reading.direction),
        ("margin", margin),
    ]
    if reading.min_effect is not None:
        rows.append(("min effect", format_number(reading.min_effect)))
    if reading.held:
        rows.append(("held", held_words(reading)))
    if reading.steps is not None:
        rows.append(("steps", str(reading.steps)))
    rows.append(("assumptions", "; ".join(reading.assumptions) or "-"))
    return rows


def with_small_test_split(reading: Reading, test_size: int) -> Reading:
    """`reading` with a word on the user's workflow's test split when it is too small to
    judge a run finely (fewer than `budget.MIN_EVAL_EPISODES` tasks): each run is judged on
    those few tasks, so its held-out score moves in steps of 1/n."""
    if test_size >= MIN_EVAL_EPISODES:
        return reading
    note = (
        f"your workflow's tasks('test') holds {test_size} task{'s' if test_size != 1 else ''}: "
        f"each run is judged on those {test_size}, so a run's held-out score moves in steps of "
        f"1/{test_size} and only large differences can be told apart (give the test split "
        f"{MIN_EVAL_EPISODES} or more tasks for a finer answer)"
    )
    if note in reading.assumptions:
        return reading
    return reading.model_copy(update={"assumptions": [*reading.assumptions, note]})
