"""How a question moves its setting: a larger/higher/more X or a smaller/lower/fewer one
(`way_asked`), the setting taken away ("removing the KL penalty", "without weight decay";
not after "than": "better than no weight decay" names the control), the default named as a
level ("is the default lr better than 1e-4?"), a sweep ("which X is best"), and whether the
question asks if a setting is needed ("is a KL penalty necessary?").

Must not know which levels these words lead to (`levels.py`, `control.py`), nor arms,
budgets, the gateway or the database.
"""

from __future__ import annotations

import re

from researcher.planner.reading.mentions import Mention
from researcher.planner.reading.sentences import outside_asking

_DEFAULT_NAMED = re.compile(r"\b(?:the|its|our|my) (?:current |usual )?default\s+(?:\S+\s+)?$")


def names_default(text: str, mention: Mention) -> bool:
    """Whether the question names the factor's default as a level: "is the default lr better
    than 1e-4?" compares 2e-5 (the default) with 1e-4."""
    return mention.kind in ("factor", "param") and bool(
        _DEFAULT_NAMED.search(text[max(0, mention.start - 40) : mention.start])
    )


BEST = re.compile(
    r"\b(?:which|what|best|optimal|sweep|sensitiv\w*)\b"
    # "how many samples per prompt should I use?", "how large should the group size be?"
    r"|\bhow (?:many|much|large|big|high|low|small|long)\b(?=[^?.;]{0,40}?\b(?:should|need)\b)"
    # "should the group size be larger or smaller?": both ways from the default
    r"|\b(?:larger|bigger|higher|more|longer) or (?:smaller|lower|fewer|less|shorter)\b"
    r"|\b(?:smaller|lower|fewer|less|shorter) or (?:larger|bigger|higher|more|longer)\b"
)

NEEDED = re.compile(  # not "how many steps does it need to reach 0.8"
    r"(?<!steps )(?<!updates )(?<!iterations )(?<!time )"  # "the steps needed": speed
    r"\b(?:necessary|required|essential|indispensable|need(?:s|ed)?(?! to\b))\b"
)

# "a looser (wider) clip range" is a larger epsilon, "a stronger KL penalty" a larger coefficient
_RAISE = (
    r"larger|higher|bigger|greater|more|longer|increas\w*|rais\w*|extra|stronger|"
    r"looser|loosen\w*|wider|widen\w*|heavier|hotter|warmer"  # a hotter sampling temperature
)

_LOWER = (
    r"smaller|lower|less|fewer|shorter|decreas\w*|reduc\w*|lowering|weaker|tighter|"
    r"tighten\w*|narrower|narrow\w*|lighter|milder|colder|cooler"
)


# "is the default group size too small?": does a larger one do better (group 1: raise);
# "is lr 1e-4 too high?": does a smaller one (group 2: lower)
# a bound before the one value named: "more than 4 turns", "a KL above 0.1", "below 1e-5";
# group 1 or 2: a bound above it (the value is the control, the treatment beyond it)
_BOUND = re.compile(
    r"(?:(?<!no )(?<!not )\b(more|greater|larger|higher|bigger|longer|stronger|looser|wider)"
    r"(?:\s+[a-z_-]+){0,3}? than|\b(above|beyond|exceeding)|\b(?:less|fewer|lower|smaller|shorter|"
    r"weaker|tighter|narrower)(?:\s+[a-z_-]+){0,3}? than|\bbelow)\s+(?:an?\s+|the\s+)?$"
)


def bound_before(text: str, at: int) -> re.Match[str] | None:
    """`_BOUND` right before the number at `at` ("more than 4", "above 0.1")."""
    return _BOUND.search(text[max(0, at - 50) : at])


TOO = re.compile(
    r"\btoo (?:(small|low|few|short|weak|little|tight|narrow|conservative|timid)|"
    r"(large|big|high|many|long|strong|much|loose|wide|aggressive))\b"
)

_OUTCOME_NOUN = r"(?:training\s+)?(?:steps|updates|iterations|tokens|time|epochs|samples)\b"


def way_asked(text: str, mentions: list[Mention]) -> str | None:
    """ "raise" when the question asks about a larger/higher/more X for its factor
    mentions, "lower" for smaller/lower/fewer, else None; "too small" asks about a larger
    one ("raise"), "too high" a lower one."""
    if too := TOO.search(text):
        return "raise" if too.group(1) else "lower"
    for m in mentions:
        inside = text[m.start : m.end]
        before = text[max(0, m.start - 40) : m.start]
        after = text[m.end : m.end + 30]
        for way, words in (("raise", _RAISE), ("lower", _LOWER)):
            if (
                re.search(rf"\b(?:{words})\b", inside)
                # (not "in fewer steps than group size 4": the comparative is the outcome's)
                or re.search(rf"\b(?:{words})\s+(?!{_OUTCOME_NOUN})(?:\S+\s+){{0,2}}$", before)
                # "a KL penalty increase" (not the verb: "a KL penalty increase the steps");
                # "does the lr need to be lower?"
                or re.match(
                    rf"\s*(?:is |are |of |(?:needs?|has|have|ought|should) (?:to )?be |be )?"
                    rf"(?:{words})\b(?! (?:the|an?|its|my|our)\b)",
                    after,
                )
            ):
                return way
    return None


def lowered_before(text: str, mentions: list[Mention]) -> bool:
    """Whether a lowering word stands right before a factor mention ("a weaker KL penalty",
    "a smaller lr"), not after it ("does a KL penalty reduce entropy collapse?")."""
    return any(
        re.search(rf"\b(?:{_LOWER})\s+(?:\S+\s+)?$", text[max(0, m.start - 25) : m.start])
        for m in mentions
    )


_REMOVAL = re.compile(
    r"\b(?:remov\w*|drop(?:s|ped|ping)?|without|disabl\w*|turn(?:s|ed|ing)? off|"
    r"switch(?:es|ed|ing)? off|not using|skip(?:s|ped|ping)?|omit\w*|forgo\w*|"
    r"leav(?:e|es|ing) out|hid(?:e|es|ing)|no|(?:the )?(?:absence|lack) of|lacking)\s+"
    # "turning off the unit tests": one word of its own before the setting's name
    r"(?:the\s+|a\s+|an\s+|any\s+)?(?:(?!more\b|less\b|fewer\b|than\b|longer\b)[a-z][a-z-]*\s+)?$"
)

# a removal word that names the level compared against ("better than no weight decay"):
# there the factor off is the control, as the default already is
CONTRASTED_REMOVAL = re.compile(
    r"\b(?:than|compared (?:with|to)|vs\.?|versus|instead of|rather than|relative to|"
    r"against|over|as (?:good|well|accurate|fast|effective|high) as|"
    r"within \S+ (?:\w+ )?(?:steps?|points?|%|percent) of)\s+(?:\S+\s+)?"
    # "relative to 0.3 accuracy without KL": the score seen there, then how
    r"(?:(?:0?\.\d+|\d+%)\s+(?:accuracy|reward|score|success)\s+)?$"
)


# "the KL is 0.05 in our runs; would turning it off help?": the setting named, taken away
_REMOVES_IT = re.compile(
    r"\b(?:(?:remov|drop|disabl|ditch)\w*\s+(?:it|them)|(?:turn|switch)\w*\s+(?:it|them)\s+off|"
    r"(?:get\w*\s+)?rid\s+of\s+(?:it|them))\b"
)


def takes_away(text: str, mentions: list[Mention]) -> bool:
    """True when the question takes its factor away: "removing the KL penalty", "training
    without weight decay", "turning off the KL penalty", "turning it off"."""
    if mentions and _REMOVES_IT.search(text):
        return True
    for m in mentions:
        if outside_asking(text, m.start):
            continue  # "We've seen 0.3 accuracy without KL.": how it was, not what is asked
        if re.search(
            r"\b(?:turn|switch)\w*\s+(?:the\s+|our\s+|my\s+)?$", text[: m.start]
        ) and re.match(
            r"\s*(?:[\d.e-]+\s+)?off\b(?!\s+on\b)", text[m.end :]
        ):  # "turning the kl coef 0.05 off"
            return True
        before = text[max(0, m.start - 30) : m.start]
        removal = _REMOVAL.search(before)
        if removal and not CONTRASTED_REMOVAL.search(
            text[max(0, m.start - 60) : m.start - len(before) + removal.start()]
        ):
            return True
    return False
