"""Levels that are no numbers on a run setting: a task mix (the judged task alone as the
control, mixed with the others named — or its usual partner — in equal shares, or in the
shares written: "75/25", "a 3:1 mix", "is a 90/10 split better than 50/50?") and base models
(the served models the question names, or every served one; the smallest the control, the
largest for "do smaller models …").

Must not know the outcome or the direction, nor arms, budgets, the gateway or the database.
"""

from __future__ import annotations

import re

from researcher.plan import Level
from researcher.planner.catalogue import distinct_levels
from researcher.planner.reading.control import contrasted_index
from researcher.planner.reading.models import model_scale, serves
from researcher.planner.reading.moves import BEST, way_asked
from researcher.planner.reading.numbers import written_numbers
from researcher.planner.reading.question import Question

MIX_PARTNER = {  # mixed in when only the judged task is named
    "arithmetic": "calculator",
    "chain_sum": "basic_arithmetic",
}


# the task alone as the subject, the mix after the contrast: "is chain_sum alone better than a
# 50/50 mix?", "does single-task training beat multi-task?"
_ALONE_AGAINST_MIX = re.compile(
    r"\b(?:alone|only|single[\s-]task|by itself|on its own|unmixed)\b.{0,60}?\b(?:than|beats?|"
    r"outperforms?|over|vs\.?|versus|instead of|rather than)\b.{0,40}?(?:\bmix\w*|\bmulti[\s-]task|"
    r"\bcombined|\btogether|\d+\s*[/:]\s*\d+|\d+\s*%)"
)


def mix_levels(q: Question, task: str, tasks: list[str]) -> tuple[list[Level], Level]:
    """The task mixes compared, the judged task alone first (the control) unless two mixes
    are set against each other."""
    partners = [t for t in tasks if t != task]
    if not partners:
        partners = [MIX_PARTNER.get(task, "arithmetic")]
        q.assumptions.append(f"no task named to mix in: {partners[0]}")
    placed = [(p, v / 100) for p, v, percent in written_numbers(q.text, q.mentions) if percent]
    for m in q.of("aside", "ratio"):
        first, second = (int(g) for g in m.groups)
        placed.append((m.start, second / (first + second)))
    placed = sorted((p, s) for p, s in placed if 0 < s < 1)
    shares = [s for _, s in placed]
    if (
        len(placed) == 2
        and placed[0][1] != placed[1][1]
        and not re.search(r"\b(?:alone|only|by itself|on its own|unmixed)\b", q.text)
        and (contrasted := contrasted_index(q.text, [p for p, _ in placed])) is not None
    ):  # "is a 90/10 split better than 50/50?": two mixes, the one compared against first
        mixes = [
            {
                task: round(1 - share, 4),
                **{p: round(share / len(partners), 4) for p in partners},
            }
            for _, share in placed
        ]
        control = mixes[contrasted]
        q.assumptions.append("two mixes compared: the one compared against is the control")
        return [control, *(m for m in mixes if m != control)], control
    if not shares and BEST.search(q.masked):
        # "which mix of A and B is best for B?": a sweep of the share mixed in
        shares = [0.25, 0.5]
        q.assumptions.append(
            f"which mix is best: {task} alone (control), and {', '.join(partners)} as 25% and "
            "50% of the tasks (a sweep)"
        )
    if not shares:
        shares = [round(len(partners) / (len(partners) + 1), 4)]
        q.assumptions.append(f"mixed arm: {task} and {', '.join(partners)} in equal shares")
    alone: dict[str, float] = {task: 1.0}
    levels: list[Level] = [alone]
    for share in shares:
        mix = {task: round(1 - share, 4)}
        mix.update({p: round(share / len(partners), 4) for p in partners})
        levels.append(mix)
    levels = distinct_levels(levels)
    if len(levels) == 2 and _ALONE_AGAINST_MIX.search(q.text):
        # "does chain_sum alone beat a 50/50 mix?": the mix is compared against
        q.assumptions.append(
            f"{task} alone set against the mix: the mix is the control, {task} alone the treatment"
        )
        return [levels[1], alone], levels[1]
    return levels, alone


def model_levels(q: Question) -> tuple[list[Level], Level]:
    """The served base models compared, the smallest first (the largest for "smaller")."""
    served = sorted(set(q.served), key=lambda m: (model_scale(m) or 0.0, m))
    if len(served) < 2:
        raise q.unreadable(
            f"it compares base models, but the gateway serves only "
            f"{', '.join(served) or 'no model'}: serve at least two "
            f"(`gateway serve --model A --model B`)"
        )
    requests = [(m.start, q.text[m.start : m.end]) for m in q.of("model")]
    chosen = [m for m in served if any(serves(r, m) for _, r in requests)]
    missing = [r for _, r in requests if not any(serves(r, m) for m in served)]
    if len(requests) >= 2 and missing:
        raise q.unreadable(
            f"it names {', '.join(missing)}, which the gateway does not serve (it serves "
            f"{', '.join(served)})"
        )
    if len(chosen) < 2:
        chosen = served
        q.assumptions.append(f"base models: every served model ({', '.join(served)})")
    way = way_asked(q.text, q.of("factor", "base_model"))
    control = chosen[-1] if way == "lower" else chosen[0]
    q.assumptions.append(
        f"control {control}: the {'largest' if way == 'lower' else 'smallest'} model"
    )
    return [control, *(m for m in chosen if m != control)], control
