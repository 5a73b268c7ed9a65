"""Whether held-out accuracy leaves room for the effect a study asks about.

Accuracy tops out at 1 and bottoms out at 0: a control that already solves 97% of the
held-out items cannot be beaten by the smallest effect that counts (0.05), so "does it help?"
could only end "refuted" or "inconclusive" — an answer about the task's ceiling, not about
the setting. `room` is how far the control's score is from the bound the hypothesis moves
towards; `ceiling_words` says so beside a verdict when the room is under twice the effect;
`no_room` is the pilot's early stop when even its interval's far end leaves less room than
the effect.

Plain functions over plan records: nothing here knows of the graph, the gateway or the report.
"""

from __future__ import annotations

import math

from researcher.plan import Design, RunResult

CLOSE = 2.0  # room under this many times the effect that counts is said beside the verdict
Z = 1.96


def bounded(design: Design, runs: list[RunResult]) -> bool:
    """Held-out accuracy scored 1 or 0 per item (not a workflow's own reward scale), with a
    one-way hypothesis."""
    return (
        design.outcome == "heldout_accuracy"
        and design.direction in ("greater", "less")
        and bool(runs)
        and all(v in (0.0, 1.0) for r in runs for v in r.eval_outcomes)
    )


def room(design: Design, control_score: float) -> float:
    """How far the control's score is from the bound the hypothesis moves towards."""
    return 1.0 - control_score if design.direction == "greater" else control_score


def _bound(design: Design) -> str:
    return "ceiling" if design.direction == "greater" else "floor"


def ceiling_words(design: Design, control: str, control_score: float, runs: list[RunResult]) -> str:
    """A caveat when the control's score leaves less than CLOSE times the smallest effect
    that counts between it and the bound the hypothesis moves towards; "" otherwise."""
    effect = design.min_effect
    if not bounded(design, runs) or effect <= 0:
        return ""
    left = room(design, control_score)
    if left >= CLOSE * effect:
        return ""
    way = "gain" if design.direction == "greater" else "lose"
    return (
        f"{_bound(design).capitalize()}: the control ({control}) already scores "
        f"{control_score:.3f} held-out, so a treatment can {way} at most {left:.3f}, "
        + (
            f"less than the smallest effect that counts ({effect:g}): the rule could not "
            "support the hypothesis on this task"
            if left < effect
            else f"little more than the smallest effect that counts ({effect:g})"
        )
        + "; a harder task or level would leave room to tell"
    )


def no_room(design: Design, control_runs: list[RunResult]) -> str | None:
    """Why the comparison could not support the hypothesis, when even the far end of the
    pilot control's 95% interval (its items pooled) leaves less room than the smallest
    effect that counts; None otherwise."""
    effect = design.min_effect
    if not bounded(design, control_runs) or effect <= 0:
        return None
    outcomes = [v for r in control_runs for v in r.eval_outcomes]
    n = len(outcomes)
    if not n:
        return None
    score = sum(outcomes) / n
    # the Wilson interval's end towards the bound: the most room the data allow
    centre = (score + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(score * (1 - score) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    most = room(design, centre - half if design.direction == "greater" else centre + half)
    if most >= effect:
        return None
    return (
        f"the control's pilot runs already score {score:.3f} held-out ({n} items; 95% interval "
        f"{centre - half:.3f} to {centre + half:.3f}), so a treatment could "
        f"{'gain' if design.direction == 'greater' else 'lose'} at most {most:.3f}, less than "
        f"the smallest effect that counts ({effect:g}): the comparison could not support the "
        f"hypothesis on this task (its {_bound(design)}). Ask it on a harder task or level, or "
        "name a smaller effect that counts"
    )
