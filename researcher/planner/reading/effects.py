"""Effect sizes and margins: "by at least 5 points", "5 points better", "by 10%" are the
smallest difference that counts (`Reading.min_effect`), never levels; so is a margin named
beside a difference test ("margin 2 points"). An equivalence question ("as good as",
"match", "no worse than", "comparable", "get away with", "without hurting") gets its margin:
0.05, or "within 3 points" → 0.03, "within 0.02" → 0.02, or 10% of the control's cost for
cost.

Must not know the levels or the task, nor arms, budgets, the gateway or the database.
"""

from __future__ import annotations

import re

from researcher.planner.catalogue import EQUIVALENT_WORDS
from researcher.planner.reading.question import Question

DEFAULT_MARGIN = 0.05  # equivalence margin on accuracy / reward when the question gives none

COST_MARGIN = 0.10  # equivalence margin for cost: 10% of the control's cost


def min_effect(q: Question, outcome: str, threshold: float | None) -> float | None:
    """The smallest difference the question names ("by at least 5 points"), as a
    fraction; None when it names none, or when the outcome is counted in steps."""
    effects = q.of("aside", "effect") + q.of("aside", "effect_abs")
    if not effects and q.direction != "equivalent":
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
    q.assumptions.append(
        f"{named!r} is the smallest difference that counts: {value:g} ({unit}), not a level"
    )
    return value


def equivalence_margin(q: Question, outcome: str) -> float | None:
    """The margin of an equivalence question ("as good as": 0.05, or 10% of the control's
    cost for cost; "within 3 points": 0.03; "within 0.02": 0.02), or None when the question
    asks no equivalence. A margin named with "within" ("within 1 point of GRPO") makes the
    question one."""
    margins = q.of("aside", "margin")
    absolute = q.of("aside", "margin_abs")
    within = any(q.text[m.start : m.end].startswith("within") for m in margins + absolute)
    if not (re.search(rf"\b(?:{EQUIVALENT_WORDS})\b", q.masked) or within):
        return None
    if margins:
        return float(margins[0].groups[0]) / 100
    if absolute:
        return float(absolute[0].groups[0])
    margin = COST_MARGIN if outcome == "cost" else DEFAULT_MARGIN
    unit = "of the control's cost" if outcome == "cost" else "(absolute)"
    q.assumptions.append(f"equivalence margin {margin:g} {unit}: none named")
    return margin
