"""The question being read: its text as read, its mentions, the text with them blanked out
(where outcome and direction words are looked for), the workflow's PARAMS and the served
models, and what the reading has found so far (its assumptions, the steps it fixes, its
direction, whether its factor is taken away); and the message that says how to ask.

Must not know how any part of the reading is found (the other modules of this package), nor
arms, budgets, the gateway or the database.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from researcher.errors import UnreadableQuestion
from researcher.plan import Level
from researcher.planner.catalogue import tasks_in_words
from researcher.planner.reading.mentions import Mention
from researcher.planner.reading.moves import NEEDED

EXAMPLE_QUESTIONS = (
    "does a KL penalty of 0.05 help on arithmetic?",
    "does lr 1e-4 vs 2e-5 change held-out accuracy on the guessing game?",
    "is LoRA r=16 as good as full fine-tuning on the easy task?",
)


def how_to_ask(params: dict[str, Any] | None = None) -> str:
    """How to ask a question the reader can read, with examples."""
    if params is not None:
        keys = ", ".join(params) or "none declared"
        return (
            f"Name one of your workflow's PARAMS ({keys}) or a run setting (learning rate, "
            f"KL penalty, group size, LoRA, temperature, ...) and the value to try, e.g. "
            f"'does lr 1e-4 help my agent?'"
        )
    examples = "; ".join(repr(q) for q in EXAMPLE_QUESTIONS)
    return (
        f"Name one run setting to vary (learning rate, KL penalty, group size, LoRA, "
        f"temperature, task mix, ...), its levels, and a task ({tasks_in_words()}), e.g. "
        f"{examples}"
    )


@dataclass
class Question:
    """A question as it is being read: `question` as read (numbers written plainly, a
    misspelt setting's name spelled right), `text` (lower case, held settings blanked out),
    its `mentions`, and `masked` (the text with the mentions blanked out: outcome and
    direction words are read from what is left)."""

    question: str
    text: str
    mentions: list[Mention]
    masked: str
    params: dict[str, Any] | None
    served: list[str]
    held: dict[str, Level] = field(default_factory=dict)
    assumptions: list[str] = field(default_factory=list)
    steps: int | None = None  # training steps the question fixes ("within 20 steps")
    direction: str | None = None
    taken_away: bool = False  # the treatment is the factor off, the control it on
    # how the named smallest effect or margin was written: `Reading.effect_units`
    effect_units: str | None = None
    margin_named: bool = False  # the question named its equivalence margin ("within 0.05")
    negated: bool = False  # "does RLOO not beat GRPO?": the positive test, said negated
    episodes: int | None = None  # episodes per step the question fixes ("a batch of 64")

    def of(self, kind: str, key: str | None = None) -> list[Mention]:
        """The mentions of one kind (and key)."""
        return [m for m in self.mentions if m.kind == kind and (key is None or m.key == key)]

    def unreadable(self, why: str, *, how: bool = True) -> UnreadableQuestion:
        """The refusal: what cannot be read, and how to ask (`how=False` when `why` already
        says how, for the setting it is about)."""
        said = f" {how_to_ask(self.params)}" if how else ""
        return UnreadableQuestion(f"cannot read {self.question!r}: {why}.{said}")

    def asks_if_needed(self) -> bool:
        """Whether the question asks if a setting is needed ("is a KL penalty necessary?",
        "does my agent need the hint?"): the setting on is the control, off the treatment."""
        # "how many completions per prompt do I need?" asks for the best count, not whether
        return (
            bool(NEEDED.search(self.masked))
            and self.direction == "two_sided"
            and not re.search(r"\bhow (?:many|much|large|big|high|long)\b", self.masked)
        )
