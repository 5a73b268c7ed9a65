"""Effect sizes and margins: "by at least 5 points", "5 points better", "by 10%" are the
smallest difference that counts (`Reading.min_effect`), never levels; so is a margin named
beside a difference test ("margin 2 points"). An equivalence question ("as good as",
"match", "no worse than", "comparable", "get away with", "without hurting") gets its margin:
0.05, or "within 3 points" → 0.03, "within 0.02" → 0.02, or 10% of the control's cost for
cost.

A number of points or a percent is recorded with its unit (`Reading.effect_units`): the
reader cannot know a workflow's reward range, so "1 point" is 0.01 of a 0-1 reward until
the rewards seen (the pilot's, or the study's own) go beyond [0, 1], where it is 1 in the
workflow's own units (`researcher.reward_units`); "10%" is a share (of the rewards' range
beyond 0-1). A scale the question states ("on the 0-10 rubric", "out of 10") fixes the units
at once: "1 point" is then 1, as written.

Must not know the levels or the task, nor arms, budgets, the gateway or the database.
"""

from __future__ import annotations

import re

from researcher.planner.catalogue import EQUIVALENT_WORDS
from researcher.planner.reading.numbers import percent_change
from researcher.planner.reading.question import Question

DEFAULT_MARGIN = 0.05  # equivalence margin on accuracy / reward when the question gives none

COST_MARGIN = 0.10  # equivalence margin for cost: 10% of the control's cost


def min_effect(q: Question, outcome: str, threshold: float | None) -> float | None:
    """The smallest difference the question names ("by at least 5 points"), as a
    fraction; None when it names none, or when the outcome is counted in steps."""
    effects = [m for m in q.of("aside", "effect") if percent_change(q.text, m) is None]
    effects += q.of("aside", "effect_abs")
    if not effects and q.direction not in ("equivalent", "noninferior"):
        # "does lr 1e-4 vs 2e-5 matter, margin 2 points?": no equivalence test, so the
        # margin named is the smallest difference that counts
        effects = q.of("aside", "margin") + q.of("aside", "margin_abs")
        effects = [m for m in effects if not q.text[m.start : m.end].startswith("within")]
    if not effects:
        return None
    effect = min(effects, key=lambda m: m.start)
    named = q.text[effect.start : effect.end]
    if outcome == "learning_speed" and threshold is not None:
        q.assumptions.append(
            f"{named!r} is not read: learning speed here is counted in steps to the "
            "threshold (the smallest difference that counts is a tenth of the steps)"
        )
        return None
    number = next(g for g in effect.groups if g is not None)
    absolute = effect.key in ("effect_abs", "margin_abs")
    value = float(number) if absolute else float(number) / 100
    unit = "of the control's cost" if outcome == "cost" else "absolute, not relative"
    if absolute and value > 1 and q.params is None and outcome != "cost":
        # "by at least 5" on a shipped task, whose accuracy runs 0 to 1: 5 points
        value, words = _in_units(q, named, value)
        q.assumptions.append(
            f"{named!r} is the smallest difference that counts, not a level: {words} "
            "(a number above 1 on a 0-1 accuracy read as points)"
        )
        return value
    if absolute or outcome == "cost":
        q.assumptions.append(
            f"{named!r} is the smallest difference that counts: {value:g} ({unit}), not a level"
        )
        return value
    value, words = _in_units(q, named, float(number))
    if q.params is None:
        words += f" ({unit})"
    q.assumptions.append(f"{named!r} is the smallest difference that counts, not a level: {words}")
    return value


def equivalence_margin(q: Question, outcome: str) -> float | None:
    """The margin of an equivalence question ("as good as": 0.05, or 10% of the control's
    cost for cost; "within 3 points": 0.03; "within 0.02": 0.02), or None when the question
    asks no equivalence. A margin named with "within" ("within 1 point of GRPO") makes the
    question one."""
    margins = q.of("aside", "margin")
    absolute = q.of("aside", "margin_abs") + q.of("aside", "margin_steps")
    within = any(q.text[m.start : m.end].startswith("within") for m in margins + absolute)
    within = within or bool(q.of("aside", "margin_steps"))  # a margin in steps, however said
    if not (re.search(rf"\b(?:{EQUIVALENT_WORDS})\b", q.masked) or within):
        return None
    q.margin_named = bool(margins or absolute)
    if margins:
        m = margins[0]
        named = float(m.groups[0]) if m.groups[0][0].isdigit() else 1.0  # "within a point"
        value, words = _in_units(q, q.text[m.start : m.end], named)
        if q.params is not None:
            q.assumptions.append(f"{q.text[m.start : m.end]!r} is the equivalence margin: {words}")
        return value
    if absolute:
        return float(absolute[0].groups[0])
    margin = COST_MARGIN if outcome == "cost" else DEFAULT_MARGIN
    unit = "of the control's cost" if outcome == "cost" else "(absolute)"
    q.assumptions.append(f"equivalence margin {margin:g} {unit}: none named")
    return margin


# a scale the question states for its reward: "on the 0-10 rubric", "out of 10", "a 10-point
# scale"; group 1, 2 or 3: its top
STATED_SCALE = re.compile(
    r"\b(?:0|zero) ?(?:-|–|to) ?(\d+(?:\.\d+)?)(?= (?:rubric|scale|score|reward|points?)\b)|"
    r"\bout of (\d+(?:\.\d+)?)\b|\b(\d+)[- ]point (?:rubric|scale)\b|"
    # "my agent's rubric score (0-10)": the scale in brackets after the score
    r"\b(?:rubric|scale|score|reward|rating)s? \((?:0|zero) ?(?:-|–|to) ?(\d+(?:\.\d+)?)\)"
)

_PERCENT = re.compile(r"%|percent|\bpp\b")


def _in_units(q: Question, named: str, number: float) -> tuple[float, str]:
    """A number of points or a percent named as an effect or margin: its value and, in
    words, the reading used; sets `q.effect_units` when the value waits on the rewards'
    range (docs/reading.md, "Points, percents and the reward's units")."""
    share = number / 100
    if _PERCENT.search(named):
        q.effect_units = "percent"
        if q.params is None:
            return share, f"{share:g}"
        return share, (
            f"{share:g} of a reward of 0 to 1 ({number:g}% is a share: of the rewards' range "
            "when your workflow's rewards go beyond 0-1)"
        )
    scale = STATED_SCALE.search(q.text)
    top = float(next(g for g in scale.groups() if g is not None)) if scale else None
    if q.params is not None and top is not None and top > 1:
        return number, (
            f"{number:g} in your workflow's own units, as written ({scale.group(0)!r}: the "
            "question states the scale)"
        )
    q.effect_units = "points"
    if q.params is None:
        return share, f"{share:g}"
    return share, (
        f"{share:g} (points of a reward of 0 to 1) until the rewards are seen: when your "
        f"workflow's rewards go beyond 0-1 (the pilot's, or the study's own), "
        f"{number:g} point{'s' if number != 1 else ''} is {number:g} in its own units"
    )
