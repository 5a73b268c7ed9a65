"""The template planner's reader, under the name the planners and tests import it by: the
reading itself lives in `researcher/planner/reading/`, one module per part of a reading
(see that package's docstring and docs/reading.md).

Must not know about arms, budgets, the gateway or the database.
"""

from researcher.errors import UnreadableQuestion
from researcher.plan import Reading
from researcher.planner.reading import (
    COST_MARGIN,
    DEFAULT_MARGIN,
    EXAMPLE_QUESTIONS,
    model_scale,
    read_question,
    requested_models,
    serves,
    summarise,
)
from researcher.planner.reading.levels import STEPS_DOSE
from researcher.planner.reading.mixes import MIX_PARTNER
from researcher.planner.reading.outcome import DEFAULT_THRESHOLD
from researcher.planner.reading.tasks import MIX_DEFAULT_TASK

__all__ = [
    "COST_MARGIN",
    "DEFAULT_MARGIN",
    "DEFAULT_THRESHOLD",
    "EXAMPLE_QUESTIONS",
    "MIX_DEFAULT_TASK",
    "MIX_PARTNER",
    "STEPS_DOSE",
    "Reading",
    "UnreadableQuestion",
    "model_scale",
    "read_question",
    "requested_models",
    "serves",
    "summarise",
]
