"""The units a study's rewards are in, and the smallest effect restated in them.

Every default of the decision rule (the smallest effect that counts, 0.05; the default
equivalence margin; the held-out gain that counts as learning) is set in units of a 0-1
reward: accuracy. A user's workflow may score 0-100, or 0-5: there 0.05 is no effect at
all. `reward_range` says when the rewards seen (held-out items and training-reward means,
the untrained model's included) went beyond [0, 1]; `in_reward_units` then multiplies the
smallest effect (and a default margin) by the width of that range, once.

The pilot applies it before the comparison is sized (`researcher.pilot`); a study without
a pilot (`--no-pilot`, one seed) gets it from its own results when they are analysed
(`researcher.analysis`), and the summary says so. Before either, `units_words` is the rule's
promise that it will be (a study of the user's workflow, whose plan would otherwise show a
bare 0.05 for a reward scored 0-10). A smallest effect the question named as a bare number
("by at least 0.5") is in the workflow's units already and never rescaled; one named in
points ("by at least 1 point": 0.01 of a 0-1 reward) is that many of the workflow's own
units (1), and one named as a percent ("by 10%") that share of the rewards' range
(`Design.effect_units`; docs/reading.md, "Points, percents and the reward's units").

Pure arithmetic over plan records: knows nothing of the graph, the gateway or the database.
"""

from __future__ import annotations

import math

from researcher.learning import DEFAULT_MARGIN
from researcher.plan import MARGIN_DIRECTIONS, WORKFLOW_FAMILY, Design, RunResult


def reward_range(results: list[RunResult]) -> tuple[float, float] | None:
    """(lowest, highest) reward in `results` — held-out items and training-reward means —
    when they go beyond [0, 1]; None when all lie within it (the units every default is
    set in: accuracy, a reward of 0 to 1)."""
    values = [v for r in results for v in r.eval_outcomes]
    values += [v for r in results for _, v in r.curve]
    if not values or (min(values) >= 0.0 and max(values) <= 1.0):
        return None
    return float(min(values)), float(max(values))


def in_reward_units(design: Design, rewards: tuple[float, float] | None) -> Design:
    """`design` with its default smallest effect — and its equivalence margin, when that is
    the default — in the workflow's own reward units: multiplied by the width of the rewards'
    range when they went beyond [0, 1] (0.05 on a 0-100 reward is no effect; 5 is). A
    smallest effect or a margin the question named as a bare number ("by at least 0.5",
    "within 0.05", even where that equals the default) is in those units already and
    stays; scores in steps or seconds are not rewards and stay as they are; a design
    already scaled is returned as it is."""
    if rewards is None or design.reward_scale is not None or not _scored_in_rewards(design):
        return design
    scale = max(1.0, rewards[1] - rewards[0])
    named_as = {"points": 100.0, "percent": scale}.get(design.effect_units or "", 1.0)
    margin = design.margin
    if margin is not None and design.direction in MARGIN_DIRECTIONS and design.effect_units:
        margin = margin * named_as  # "within 0.5 points": 0.5 of the workflow's units
    elif margin is not None and not design.margin_named and math.isclose(margin, DEFAULT_MARGIN):
        margin = margin * scale
    min_effect = design.min_effect * (named_as if design.min_effect_named else scale)
    return design.model_copy(
        update={"min_effect": min_effect, "margin": margin, "reward_scale": scale}
    )


def reward_scale_words(
    design: Design, rewards: tuple[float, float] | None, seen_by: str = "The pilot's rewards"
) -> str:
    """`in_reward_units`'s change in words ("" when none); `seen_by` names whose rewards
    set the range."""
    if design.reward_scale is None or rewards is None:
        return ""
    seen = f" {seen_by} ran from {rewards[0]:g} to {rewards[1]:g}, beyond 0-1: the "
    if (named := _named_with_units(design)) is not None:
        value = named
        what = _margin_name(design, "margin") or "smallest difference"
        if design.effect_units == "points":
            return (
                f"{seen}{what} the question named in points is read in the workflow's own "
                f"units: {value:g} point{'s' if value != 1 else ''} is {value:g}."
            )
        return (
            f"{seen}{what} the question named as a percent is that share of the rewards' "
            f"range: {value:g} in the workflow's own units."
        )
    if design.direction in MARGIN_DIRECTIONS and design.margin_named:
        return (
            f"{seen}{_margin_name(design)} the question named, {design.margin:g}, is read in the "
            "workflow's own units, as written."
        )
    if design.min_effect_named:
        return (
            f"{seen}smallest difference the question named, {design.min_effect:g}, is read in "
            "the workflow's own units, as written."
        )
    unscaled = design.min_effect / design.reward_scale
    return (
        f"{seen}smallest difference that counts is {unscaled:g} of that range, "
        f"{design.min_effect:g} in the workflow's own units."
    )


def units_words(design: Design) -> str:
    """Before any reward is seen, the rule's words for a study of the user's own workflow
    whose reward may not run from 0 to 1: which of its numbers are set for rewards of 0 to 1
    and will be restated in the rewards' own units ("" when none would be, or they were)."""
    if (
        design.eval_family != WORKFLOW_FAMILY
        or design.reward_scale is not None
        or not _scored_in_rewards(design)
    ):
        return ""
    if (named := _named_with_units(design)) is not None:
        what = _margin_name(design) or "smallest difference"
        if design.effect_units == "points":
            points = named * 100
            return (
                f" The {what} the question named in points, {points:g}, is {named:g} on a "
                "reward of 0 to 1 (percentage points); when the rewards seen (the pilot's, or "
                "without one the study's own) go beyond [0, 1] it is read in their own units: "
                f"{points:g}."
            )
        return (
            f" The {what} the question named as a percent, {named:g} of a reward of 0 to 1, "
            "is that share of the rewards' range when the rewards seen (the pilot's, or without "
            f"one the study's own) go beyond [0, 1] (on a reward of 0 to 10: {named * 10:g})."
        )
    if design.direction in MARGIN_DIRECTIONS:  # the margin decides; a named one is the question's
        if (
            design.margin is None
            or design.margin_named
            or not math.isclose(design.margin, DEFAULT_MARGIN)
        ):
            return ""
        number = (f"the {_margin_name(design)}", design.margin)
    elif design.min_effect_named:
        return ""
    else:
        number = ("the smallest difference that counts", design.min_effect)
    return (
        f" Your workflow's reward need not run from 0 to 1: {number[0]}, {number[1]:g}, is set "
        "for rewards of 0 to 1, and when the rewards seen (the pilot's, or without one the "
        "study's own) go beyond [0, 1] it is restated in their units, multiplied by the width "
        f"of their range (on a reward of 0 to 10: {number[1] * 10:g})."
    )


def _margin_name(design: Design, plain: str = "") -> str:
    """The margin's name for the design's test ("equivalence margin"; `plain` when given and
    the test is equivalence, as the words have always said it); "" for a difference test."""
    if design.direction == "equivalent":
        return plain or "equivalence margin"
    return "non-inferiority margin" if design.direction == "noninferior" else ""


def _named_with_units(design: Design) -> float | None:
    """The smallest effect (or, for an equivalence test, the margin) the question named in
    points or as a percent; None when it named none that way."""
    if not design.effect_units:
        return None
    if design.direction in MARGIN_DIRECTIONS:
        return design.margin
    return design.min_effect if design.min_effect_named else None


def _scored_in_rewards(design: Design) -> bool:
    if design.outcome in ("heldout_accuracy", "final_train_reward"):
        return True
    return design.outcome == "learning_speed" and design.threshold is None
