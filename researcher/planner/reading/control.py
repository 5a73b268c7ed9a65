"""The control among two or more written levels, in this order: the smallest level when the
question asks about a larger/higher/more X (the largest for smaller/lower/fewer); the level
after "than", "instead of", "rather than", "compared with", "as good as", "match", "beat",
"from", "replacing", or "versus" after a verb ("does A save time versus B"); the catalogue
default when it is among the levels; B of a directional "A vs B" ("does 1e-4 vs 1e-5
help?": 1e-5); the smallest of three or more numbers; else the first named ("0.1 vs 0.3":
0.1). One level set against several after "than" ("does 1e-4 beat 1e-5, 3e-5 and 5e-5?")
is refused: no one control tests it.

Must not know how the levels were found (`levels.py`, `params.py`, `mixes.py`), nor arms,
budgets, the gateway or the database.
"""

from __future__ import annotations

import re

from researcher.plan import Level
from researcher.planner.catalogue import DIRECTION_WORDS, describe_level
from researcher.planner.reading.question import Question
from researcher.planner.reading.sentences import asking_span, outside_asking

_CONTRAST_WORDS = (
    r"\binstead of|\brather than|\bthan|\bcompared (?:with|to)|\brelative to|"
    r"(?<!training )(?<!playing )(?<!trained )\bagainst|"  # not "training against X"
    r"\bas (?:good|well|accurate|fast|effective|strong|cheap|quickly) as|\bmatch(?:es|ing)?|"
    r"\bover|\bbeat(?:s|ing)?|\boutperform(?:s|ing)?|\breplac(?:e|es|ed|ing)|"
    r"\bwithin \S+ (?:\w+ )?(?:steps?|points?|%|percent) of"
)
_UP_TO_3_WORDS = r"\s+(?:[^\s=:]+(?:\s+|\s*[=:]\s*)){0,3}$"
CONTRAST = re.compile(rf"(?:{_CONTRAST_WORDS}|\bfrom){_UP_TO_3_WORDS}")
# a contrast stronger than "from": in "the improvement from RLOO over GRPO" GRPO is compared
# against, while "changing lr from 1e-4 to 2e-5" starts from its control
_STRONG_CONTRAST = re.compile(rf"(?:{_CONTRAST_WORDS}){_UP_TO_3_WORDS}")

# a level given up for another: "dropping A for B", "swapping A for B", "trading A for B"
_SWAP = re.compile(
    r"\b(?:dropp\w*|ditch\w*|swap\w*|trad(?:e|es|ed|ing)|abandon\w*|giv\w* up|replac\w*)\s+"
    r"(?:\S+\s+){0,4}?(?:for|in favou?r of|with)\s"
)

_VERSUS = re.compile(r"\b(?:vs\.?|versus)\s+(?:[^\s=:]+(?:\s+|\s*[=:]\s*)){0,3}$")

# "256 vs 128": the first level's number, "vs", the second's (positions start at each number)
_BARE_VERSUS = re.compile(r"\S+\s+(?:vs\.?|versus)\s+")


def contrasted_index(text: str, positions: list[int]) -> int | None:
    """The index of the level named after "than"/"instead of"/"as good as"..., if any; also
    after "versus" when a verb stands between the levels ("does A save time versus B"),
    though not in a bare "A vs B" (there the first named is the control)."""
    for swap in _SWAP.finditer(text):  # "dropping LoRA for full fine-tuning": LoRA the control
        for index, position in enumerate(positions):
            if swap.start() < position < swap.end():
                return index
    span = asking_span(text)
    for contrast in (_STRONG_CONTRAST, CONTRAST):
        for index, position in enumerate(positions):
            # within the asking sentence: "lr 5e-5 beat 2e-5. Would 1e-4 beat 5e-5?"
            start = span[0] if span and span[0] <= position < span[1] else 0
            if contrast.search(text[max(start, position - 50) : position]):
                return index
    for index, position in enumerate(positions[1:], start=1):
        between = text[positions[index - 1] : position]
        versus = _VERSUS.search(between)
        # a direction word between: "does staleness 2 cut wall time vs fully synchronous", not
        # "1e-4 vs lr"
        if versus and (len(between.split()) > 5 or _DIRECTION.search(between[: versus.start()])):
            return index
    return None


_DIRECTION = re.compile(DIRECTION_WORDS)

# "is 32 enough, or do we need 64?": the level needed is the control
_OR_NEED = re.compile(
    r"\b(?:enough|suffic\w*)\b[^?]{0,60}?\bor\b(?:\s+(?:do|would|will|should|must)\s+(?:we|i|you)"
    r")?\s+(?:need|require|have to use|go with)\b"
)
# "lr 3e-6 vs 3e-5: does the higher one converge faster?"
_THE_ONE = re.compile(
    r"\bthe (higher|larger|bigger|greater|longer|stronger|lower|smaller|shorter|weaker) "
    r"(?:one|value|level|setting)\b"
)
_ARROW = re.compile(r"\S+\s*(?:->|→|=>)\s*")  # "beta 0.04 -> 0": from the first to the second


def _control_as_worded(
    q: Question, levels: list[Level], positions: list[int], numeric: list[Level]
) -> Level | None:
    """The control where the wording says which level is asked about (said), else None."""
    if len(levels) != 2:
        return None
    if (need := _OR_NEED.search(q.text)) is not None:
        after = [i for i, p in enumerate(positions) if p > need.end() - 12]
        if len(after) == 1:
            control = levels[after[0]]
            q.assumptions.append(f"control {control}: the level the question asks whether it needs")
            return control
    if (one := _THE_ONE.search(q.text)) is not None and len(numeric) == 2:
        higher = one.group(1) in ("higher", "larger", "bigger", "greater", "longer", "stronger")
        control = min(levels, key=_sort_key) if higher else max(levels, key=_sort_key)
        q.assumptions.append(f"control {control}: {one.group(0)!r} is the treatment")
        return control
    first, second = sorted(range(2), key=lambda i: positions[i])
    if _ARROW.fullmatch(q.text[positions[first] : positions[second]]):
        q.assumptions.append(f"control {levels[first]}: the level moved from ('->')")
        return levels[first]
    return None


# what ends the list of levels before the question about one of them: "0 vs 4: does …",
# "0 vs 4 — which …", "0 or 4? Is …"
_LIST_ENDS = re.compile(r"[:;?!]\s|\s[—–-]+\s")
_LISTED = re.compile(r"\S*\s*(?:vs\.?|versus|or|/)\s+(?:\S+\s+){0,2}")


def named_again(text: str, levels: list[Level], named: list[tuple[int, Level]]) -> int | None:
    """The index of the one level of two (`named`: every (position, level) found) named again
    after the list of both ends ("staleness 0 vs 4 on chain_sum: does on-policy learn
    faster?" names 0 again, as "on-policy"): the level the question asks about. None when
    neither or both are."""
    if len(levels) != 2:
        return None
    first = sorted(min(p for p, v in named if v == level) for level in levels)
    if not _LISTED.fullmatch(text[first[0] : first[1]]):
        return None
    end = _LIST_ENDS.search(text, first[1])
    if end is None:
        return None
    again = {i for p, v in named if p >= end.end() for i, level in enumerate(levels) if v == level}
    return again.pop() if len(again) == 1 else None


def _in_statement_before(text: str, at: int) -> bool:
    """Whether position `at` lies in a statement (a sentence ending in ".") before the
    asking sentence: context, not a follow-up ("What about 0.1?")."""
    span = asking_span(text)
    return span is not None and at < span[0] and text[: span[0]].rstrip().endswith(".")


def _sort_key(level: Level) -> float:
    """A level's place in order (None: each game's own budget, a middling one)."""
    return float(level) if isinstance(level, int | float) else 7.0  # None: each game's own


def choose_control(
    q: Question,
    factor: str,
    levels: list[Level],
    positions: list[int],
    default: Level,
    way: str | None,
    asked_again: int | None = None,
) -> Level:
    """The control among the written `levels` (at `positions` in the text), said in the
    assumptions. `asked_again`: the index of the level the question names again after
    listing both (`named_again`)."""
    numeric = [v for v in levels if isinstance(v, int | float) or v is None]
    if (picked := _control_as_worded(q, levels, positions, numeric)) is not None:
        return picked
    if way and len(numeric) == len(levels):
        pick = min if way == "raise" else max
        control = pick(levels, key=_sort_key)
        size = "smaller" if way == "raise" else "larger"
        asked = "larger" if way == "raise" else "smaller"
        q.assumptions.append(
            f"control {describe_level(factor, control)}: the {size} level, as the question "
            f"asks about a {asked} {factor}"
        )
        return control
    contrasted = contrasted_index(q.text, positions)
    if contrasted is not None:
        _refuse_one_against_several(q, factor, levels, positions, contrasted)
        control = levels[contrasted]
        q.assumptions.append(
            f"control {describe_level(factor, control)}: the level the question compares against"
        )
        return control
    if asked_again is not None:
        control = levels[1 - asked_again]
        q.assumptions.append(
            f"control {describe_level(factor, control)}: the question asks about "
            f"{describe_level(factor, levels[asked_again])}, named again after both levels"
        )
        return control
    asked = [i for i, p in enumerate(positions) if not outside_asking(q.text, p)]
    if (
        len(levels) == 2
        and len(asked) == 1
        and _in_statement_before(q.text, positions[1 - asked[0]])
    ):
        # "… temp 0.6 diverged, so we switched to 1.0. Is 1.0 actually better?": the level
        # the question asks about is the treatment; the other, from the context, the control
        control = levels[1 - asked[0]]
        q.assumptions.append(
            f"control {describe_level(factor, control)}: the level of the context the question "
            f"sets {describe_level(factor, levels[asked[0]])} against"
        )
        return control
    if any(level == default for level in levels):
        q.assumptions.append(f"control {describe_level(factor, default)}: the default {factor}")
        return default
    if (
        len(levels) == 2
        and q.direction in ("greater", "less")
        and _BARE_VERSUS.fullmatch(q.text[positions[0] : positions[1]])
    ):
        # "does 256 vs 128 help?" asks whether 256 helps: the level after "vs" is the control
        control = levels[1]
        q.assumptions.append(
            f"control {describe_level(factor, control)}: the level after 'vs' (the question "
            f"asks what {describe_level(factor, levels[0])} does against it)"
        )
        return control
    if len(levels) >= 3 and len(numeric) == len(levels):
        control = min(levels, key=_sort_key)
        q.assumptions.append(
            f"control {describe_level(factor, control)}: the smallest of a dose-response"
        )
        return control
    q.assumptions.append(f"control {describe_level(factor, levels[0])}: the first named")
    return levels[0]


def _refuse_one_against_several(
    q: Question, factor: str, levels: list[Level], positions: list[int], contrasted: int
) -> None:
    """ "does lr 1e-4 beat 1e-5, 3e-5 and 5e-5?" asks whether one level beats EACH of the
    others; a study compares every treatment with one control and answers yes when any
    beats it, so read with the first after "than" as control it would test whether 3e-5 or
    5e-5 beats 1e-5 — another question. Refused with the two that can be asked."""
    at = positions[contrasted]
    before = [level for level, p in zip(levels, positions, strict=True) if p < at]
    after = [level for level, p in zip(levels, positions, strict=True) if p >= at]
    if len(before) != 1 or len(after) < 2 or q.direction == "two_sided":
        return
    if re.search(r"[.;!?]\s", q.text[at : max(positions)]):
        return  # "lr 5e-5 beat 2e-5. Would 1e-4 be better?": a result, then the question
    named = factor if isinstance(before[0], int | float) else ""  # "lr 0.0001", "rloo"
    subject = f"{named} {describe_level(factor, before[0])}".strip()
    words = [describe_level(factor, v) for v in after]
    raise q.unreadable(
        f"it asks whether {subject} beats each of {', '.join(words[:-1])} and {words[-1]}: a "
        f"study compares its treatments with one control, and would answer whether any of "
        f"them beats it, not whether one beats them all. Ask it of one level at a time "
        f"('does {subject} beat {words[0]}?'), or ask 'which {factor} is best: "
        f"{', '.join([describe_level(factor, before[0]), *words[:-1]])} or {words[-1]}?' "
        f"to compare them all",
        how=False,
    )
