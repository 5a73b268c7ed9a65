"""What the bundled model learned, per shipped task and level, before any study runs.

Owns `measurements()` — the rows of `learnability.json` beside this file, which
`bench/learnability.py --record` writes (held-out accuracy of the bundled model untrained and
after N GRPO steps through the whole stack, per task family and difficulty level, over
seeds) — and `prior_note`, the one sentence a plan states from them: what the model it
trains went from and to on the judged task at that level, and whether a study there is
likely to find that nothing learned. The pilot still decides that for the study's own
settings; this is what a user reads before spending the budget.

Must not know how a question is read (it reads the catalogue's default levels), how a study
runs, the gateway or the database.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

from pydantic import BaseModel, Field

from researcher.plan import Reading
from researcher.planner.catalogue import task_info

RECORD = Path(__file__).with_name("learnability.json")
# a trained accuracy whose 95% upper bound is below this is "little or nothing learned"
NOTHING_LEARNED_BELOW = 0.10


class Measured(BaseModel):
    """One family at one level: correct counts per seed, untrained and trained."""

    family: str
    level: str | None = None  # None: a family without levels
    steps: int
    untrained: list[int]  # correct per seed (greedy: the same model each time)
    trained: list[int]
    n: list[int]  # held-out tasks scored per seed
    steps_per_min: float | None = None

    def rate(self, counts: list[int]) -> tuple[float, float, float]:
        """Pooled accuracy over seeds and its Wilson 95% interval."""
        return wilson(sum(counts), sum(self.n))


class Record(BaseModel):
    model: str  # the served name of the model measured
    command: str  # what regenerates it
    settings: str = ""  # lr, group size, tasks per step, held-out n, seeds, in words
    measured: str = ""  # when, and on what machine
    rows: list[Measured] = Field(default_factory=list)


def wilson(correct: int, n: int) -> tuple[float, float, float]:
    if n == 0:
        return (0.0, 0.0, 1.0)
    z, p = 1.96, correct / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (p, max(0.0, centre - half), min(1.0, centre + half))


@functools.cache
def measurements() -> Record | None:
    """The recorded table, or None when none was recorded."""
    if not RECORD.exists():
        return None
    return Record.model_validate(json.loads(RECORD.read_text()))


def measured(family: str, level: str | None, model: str) -> Measured | None:
    record = measurements()
    if record is None or record.model != model:
        return None
    return next((r for r in record.rows if r.family == family and r.level == level), None)


def describe(row: Measured) -> str:
    """ "0.00 → 0.02 [0.00, 0.08] in 20 steps" """
    before, _, _ = row.rate(row.untrained)
    after, low, high = row.rate(row.trained)
    return (
        f"{before:.2f} → {after:.2f} [{low:.2f}, {high:.2f}] held-out accuracy in "
        f"{row.steps} steps ({len(row.n)} seeds, {sum(row.n)} scored tasks)"
    )


def prior_note(reading: Reading, model: str, default_level: str | None) -> str | None:
    """What the bench measured for `model` on the reading's judged task at its level (the
    one named, else `default_level`); None when nothing was measured there."""
    level = reading.task_levels.get(reading.task, default_level)
    row = measured(reading.task, level, model)
    if row is None:
        return _harder_than_unlearned(reading.task, level, model)
    record = measurements()
    at = f" ({'level ' + level if level else 'its one level'})" if level else ""
    note = (
        f"measured before (bench/learnability.py, {record.settings}): {model} on "
        f"{reading.task}{at} went {describe(row)}"
    )
    _, _, high = row.rate(row.trained)
    if high < NOTHING_LEARNED_BELOW:
        easier = [
            other
            for other in record.rows
            if other.family == reading.task
            and other.level != level
            and other.rate(other.trained)[2] >= NOTHING_LEARNED_BELOW
        ]
        note += "; a study here will likely find that no arm learned (the pilot checks first)" + (
            f": level {easier[0].level} went {describe(easier[0])}" if easier else ""
        )
    return note


def _harder_than_unlearned(family: str, level: str | None, model: str) -> str | None:
    """The note for a level nothing was measured at when an easier level of the same family
    was measured and nothing learned there: a harder level will not do better."""
    info = task_info(family)
    if level is None or info is None or level not in info.levels:
        return None
    easier = info.levels[: info.levels.index(level)]
    for row in (measured(family, other, model) for other in reversed(easier)):
        if row is not None and row.rate(row.trained)[2] < NOTHING_LEARNED_BELOW:
            return (
                f"not measured at level {level}; at the easier level {row.level} "
                f"(bench/learnability.py, {measurements().settings}) {model} on {family} went "
                f"{describe(row)}: a study at {level} will likely find that no arm learned "
                "(the pilot checks first)"
            )
    return None


def with_prior(reading: Reading, model: str) -> Reading:
    """`reading` with the `prior_note` for `model` among its assumptions, when there is one
    (its task at its default level when none is named)."""
    info = task_info(reading.task)
    note = prior_note(reading, model, info.default_level if info else None)
    if note is None or note in reading.assumptions:
        return reading
    return reading.model_copy(update={"assumptions": [*reading.assumptions, note]})
