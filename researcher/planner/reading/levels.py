"""The levels of a run setting: the numbers as written (5e-6 and 0.000005 are one level;
"eight" too, for whole-number settings); "twice", "half", "tenfold" multiply the control,
"increasing X by 4" adds to the default. One level named: the catalogue default is the
other, and the control (a level word that *is* the default, "does tree merging save time?",
is compared with the factor's alternative). No level named: "a higher X" tries the factor's
raised level, "a lower X" its lowered one, "which X is best" lowered/default/raised (every
choice of a choice setting), "the best X between A and B" a sweep across the range, "how
many steps" 10/20/40 steps, else the factor's alternative level. A factor the question
takes away ("removing the KL penalty", "is a KL penalty necessary?") has it on as the
control and off as the treatment. A workflow PARAM's levels are `params.py`'s, a task mix's
and a base model's `mixes.py`'s; the control among written levels is `control.py`'s.

Must not know the outcome or the direction's words, nor arms, budgets, the gateway or the
database.
"""

from __future__ import annotations

import re

from researcher.plan import Level
from researcher.planner.catalogue import (
    FACTORS,
    WORKFLOW_PREFIX,
    Factor,
    describe_level,
    distinct_levels,
    on_by_default,
)
from researcher.planner.reading.control import choose_control, contrasted_index, named_again
from researcher.planner.reading.mixes import mix_levels, model_levels
from researcher.planner.reading.moves import (
    BEST,
    CONTRASTED_REMOVAL,
    TOO,
    bound_before,
    lowered_before,
    names_default,
    takes_away,
    way_asked,
)
from researcher.planner.reading.numbers import (
    as_factor_type,
    bound_word_numbers,
    multiplier_named,
    shift_named,
    with_verb,
    word_numbers,
    written_numbers,
)
from researcher.planner.reading.params import param_levels
from researcher.planner.reading.question import Question
from researcher.planner.reading.sentences import asking_span, outside_asking

STEPS_DOSE = [10, 20, 40]  # "how many steps does it need?": a dose-response over max_steps

# a value named as a limit ("limiting responses to 32 tokens", "capped at", "at most")
_LIMITS = re.compile(
    r"\b(?:limit\w*|capp?(?:ed|ing|s)?|restrict\w*|truncat\w*|at most|no more than|up to)\b"
)

_CUTS = re.compile(r"\b(?:cut\w*|shorten\w*|trim\w*)\b")


# the one value named is what a moved setting is compared against: "does a higher lr help
# compared with lr 1e-5?", "a smaller group size ... relative to 8" (the move word before it)
_AGAINST_ONE = re.compile(
    r"\b(?:compared\s+(?:with|to)|relative\s+to|against|vs\.?|versus|as\s+opposed\s+to)"
    r"(?:\s+(?:an?|the|its|our|my|[a-z_-]+)){0,3}?\s+(?:of\s+|=\s*|at\s+)?$"
)


# a word in a list of levels: "none, timeline or tree", "timeline or none"
_LISTED_AFTER = re.compile(r"\s*(?:,|/|\bor\b|\band\b|\bvs\b|\?|$)")
_LISTED_BEFORE = re.compile(r"(?:,|/|\bor|\band|\bvs\.?|:)\s*$")


def read_levels(q: Question, factor: str, task: str, tasks: list[str]) -> tuple[list[Level], Level]:
    """The levels, control first, and the control."""
    if factor.startswith(WORKFLOW_PREFIX):
        return param_levels(q, factor[len(WORKFLOW_PREFIX) :])
    spec = FACTORS[factor]
    if spec.kind == "task_mix":
        return mix_levels(q, task, tasks)
    if spec.kind == "base_model":
        return model_levels(q)
    own = [m for m in q.mentions if m.key == factor and m.kind in ("factor", "value")]
    named: list[tuple[int, Level]] = []
    if spec.kind in ("real", "int", "lora"):
        for position, value, percent in written_numbers(q.text, q.mentions):
            if percent and spec.kind == "real":  # "a KL penalty of 5%" is 0.05
                q.assumptions.append(f"{value:g}% read as {value / 100:g}")
                value = value / 100
            named.append((position, value))
        if not named and spec.kind != "real":
            named = word_numbers(q.text, q.mentions)
        elif spec.kind != "real":
            named = sorted(named + bound_word_numbers(q.text, q.mentions))
        if factor == "max_steps":
            named += [(m.start, float(m.groups[0])) for m in q.of("aside", "steps_n")]
    values = [(m.start, m.level) for m in own if m.kind == "value"]
    if values and "none" in (spec.choices or ()) and all(v != "none" for _, v in values):
        # "which merge layout is best: none, timeline or tree?": "none" listed beside them
        values += [
            (m.start(), "none")
            for m in re.finditer(r"(?<![\w-])none(?![\w-])", q.text)
            if any(abs(m.start() - p) <= 25 for p, _ in values)
            and (_LISTED_AFTER.match(q.text, m.end()) or _LISTED_BEFORE.search(q.text[: m.start()]))
        ]
    values += [(m.start, spec.default_for(task)) for m in own if names_default(q.text, m)]
    if spec.kind == "lora" and named:
        values = [(p, v) for p, v in values if v == "full"]  # "LoRA r=8": the rank is 8
    named = sorted(named + values, key=lambda pair: pair[0])
    if factor == "algorithm" and re.search(r"\breinforce\s*\+\+|reinforce plus plus", q.text):
        q.assumptions.append(
            "REINFORCE++ read as reinforce: the reward minus the batch's mean reward, groups "
            "ignored (REINFORCE++ also divides by the batch's std and puts the KL in the "
            "reward; neither is done here)"
        )
    if factor == "algorithm" and re.search(
        r"\b(?:vanilla|plain|simple) (?:policy gradient|pg)", q.text
    ):
        q.assumptions.append(
            "the plain policy gradient read as reinforce: the reward minus the batch's mean "
            "reward (REINFORCE with a batch baseline), no group baseline"
        )
    named = [(p, as_factor_type(spec, v)) for p, v in named]
    levels = distinct_levels([v for _, v in named])
    if len(levels) > 2:
        # "lr 5e-5 beat 2e-5. Would 1e-4 beat 5e-5?": the asking sentence names its levels,
        # the others are results seen
        asked = distinct_levels([v for p, v in named if not outside_asking(q.text, p)])
        if len(asked) >= 2 and len(asked) < len(levels):
            seen = ", ".join(describe_level(factor, v) for v in levels if v not in asked)
            q.assumptions.append(
                f"{factor} {seen} named outside the question (a result or setup), not a level"
            )
            levels = asked
    written = len(levels)
    default = spec.default_for(task)
    only_default = written == 1 and levels[0] == default  # "is clipping at 1.0 necessary?"
    way = way_asked(q.text, own)
    multiplier = with_verb(multiplier_named(q.text, q.mentions), way)
    if default is None and factor != "max_turns" and len(levels) < 2:
        raise q.unreadable(
            f"{factor} has no default here (your workflow sets its own): name both levels "
            f"to compare, e.g. '{factor} 64 vs 256'"
        )
    if (extra := _followed_up(q, levels, named, default)) is not None:
        # "does group size 8 help? And with 16?": each against the default, as the first asked
        q.assumptions.append(
            f"{describe_level(factor, extra)} asked as a follow-up of "
            f"{describe_level(factor, levels[0])}: each against the default "
            f"{describe_level(factor, default)}, the control"
        )
        named = [(-1, default), *named]
        levels = [default, *levels]
    if len(levels) >= 2:
        # where each level is named: in the asking sentence if it is named there too
        positions = [
            min((p for p, v in named if v == level), key=lambda p: outside_asking(q.text, p))
            for level in levels
        ]
        if (middle := _inside_range(q, spec, levels)) is not None:
            # "the best lr between 1e-5 and 1e-4": a sweep across the range
            levels, positions = (
                [levels[0], middle, levels[1]],
                [*positions[:1], -1, *positions[1:]],
            )
        if (off := _against_off(q, spec, levels, positions, default)) is not None:
            levels, positions = [off, *levels], [-1, *positions]
            control = off
        else:
            again = named_again(q.text, levels, named + _named_off(q, factor, levels))
            control = choose_control(q, factor, levels, positions, default, way, again)
    elif len(levels) == 1 and multiplier and isinstance(levels[0], int | float):
        if re.search(r"\bto\s+$", q.text[max(0, named[0][0] - 6) : named[0][0]]):
            # "doubling the group size to 8": 8 is where it lands, from 8 / 2
            treated = levels[0]
            control = as_factor_type(spec, treated / multiplier)
            levels = [control, treated]
            q.assumptions.append(
                f"{describe_level(factor, treated)} is the level moved to: "
                f"{describe_level(factor, control)} is the control"
            )
        else:
            control = levels[0]
            levels = [control, as_factor_type(spec, control * multiplier)]
            q.assumptions.append(f"{describe_level(factor, control)} is the control")
    elif (
        len(levels) == 1
        and isinstance(levels[0], int | float)
        and levels[0] > 0
        and (
            (bound := bound_before(q.text, named[0][0]))
            or (way and (bound := _AGAINST_ONE.search(q.text[: named[0][0]])))
            # "is the default group size of 4 too small?": 4 the control, 8 beyond it
            or (levels[0] == default and (bound := TOO.search(q.text)))
        )
    ):
        # "does a group size of more than 4 help?": 4 is the bound, the treatment beyond it;
        # "does a higher lr help compared with lr 1e-5?": 1e-5 the control, the move from it
        control = levels[0]
        if bound.re is _AGAINST_ONE:
            above = way == "raise"
        elif bound.re is TOO:  # "is group size 4 too small?": 4 the control, 8 beyond it
            above = bool(bound.group(1))
        else:
            above = bool(bound.group(1) or bound.group(2))
        beyond = as_factor_type(spec, control * 2 if above else control / 2)
        if spec.kind in ("int", "lora") and not isinstance(beyond, int):
            beyond = max(1, int(beyond))
        levels = [control, beyond]
        q.assumptions.append(
            f"{bound.group(0).strip()!r} {describe_level(factor, control)}: "
            f"{describe_level(factor, control)} is the control, "
            f"{describe_level(factor, beyond)} a level {'above' if above else 'below'} it"
        )
    elif (
        len(levels) == 1
        and factor == "max_tokens"
        and isinstance(default, int)
        and levels[0] > default
        and way != "raise"
        and (way == "lower" or _LIMITS.search(q.text) or _CUTS.search(q.text))
    ):
        # "cut max tokens to 64" where the task's default is 32: against the default it
        # would be a raise; the cut the question means is from above, 2 x 64
        control = as_factor_type(spec, levels[0] * 2)
        levels = [control, levels[0]]
        q.assumptions.append(
            f"{describe_level(factor, levels[1])} named as a cut, but {task}'s default is "
            f"{describe_level(factor, default)}, below it: compared against "
            f"{describe_level(factor, control)} (control) so that the named value is the cut"
        )
    elif len(levels) == 1 and levels[0] != default:
        control = default
        levels = [default, levels[0]]
        q.assumptions.append(
            f"only {describe_level(factor, levels[1])} named: the default "
            f"{describe_level(factor, default)} is the control"
        )
    elif (
        len(levels) == 1
        and levels[0] == default
        and isinstance(default, int | float)
        and (way or _LIMITS.search(q.text))
        and (moved := _moved_from_default(spec, default, way)) is not None
    ):
        # "limiting responses to 32 tokens" where 32 is the default: the named value is
        # the treatment, reached by lowering (or raising) from the other side
        control = moved
        levels = [control, default]
        q.assumptions.append(
            f"only {describe_level(factor, default)} named, the default, as the level moved "
            f"to: compared against {describe_level(factor, control)} (control)"
        )
    elif (
        len(levels) == 1
        and levels[0] == default
        and (on_by_default(spec) or spec.kind == "choice")
        and q.asks_if_needed()
    ):
        # "is dropping zero-variance groups necessary?": the default named is the control
        # "is full fine-tuning necessary?": on (the default) is the control, off the treatment
        control, levels = default, [default, spec.alternative]
        q.taken_away = True
        q.assumptions.append(
            f"{factor} taken away: {describe_level(factor, default)} (control) vs "
            f"{describe_level(factor, spec.alternative)} (without it)"
        )
    elif len(levels) == 1 and spec.kind in ("choice", "lora") and not way:
        control = spec.alternative if levels[0] == default else default
        q.assumptions.append(
            f"only {describe_level(factor, levels[0])} named, the default: compared "
            f"against {describe_level(factor, control)}"
        )
        levels = [control, levels[0]]
    else:
        # "does training for 20 steps help?" with 20 the default: said as named
        written_default = len(levels) == 1 and levels[0] == default
        control, levels = _unnamed_levels(q, spec, default, way, multiplier, written_default)
    if (
        factor == "max_grad_norm"
        and (written < 1 or only_default)
        and (takes_away(q.text, own) or q.asks_if_needed())
    ):
        q.taken_away = True
        # no clipping: a norm no gradient reaches (the bound of POST /runs)
        control, levels = default, [default, as_factor_type(spec, spec.high or 1e6)]
        if q.assumptions and q.assumptions[-1].startswith(
            (f"no {factor} level named", f"only the default {factor} named")
        ):
            q.assumptions.pop()  # the level tried without one named: replaced here
        q.assumptions.append(
            f"gradient clipping taken away: max_grad_norm {default:g} (control) vs "
            f"{levels[1]:g}, which no gradient norm reaches"
        )
    elif (
        factor == "max_grad_norm"
        and (written < 1 or (only_default and _set_against_none(q.text)))
        and way is None
        and re.search(r"\bgrad(?:ient)?s? clip\w*|\bclip\w* (?:the )?grad(?:ient)?s?", q.text)
    ):
        # "does gradient clipping help?": clipping (on by default) against none, as "does
        # tree merging help?" tries tree against none
        off = as_factor_type(spec, spec.high or 1e6)
        control, levels = off, [off, default]
        if q.assumptions and q.assumptions[-1].startswith(f"no {factor} level named"):
            q.assumptions.pop()
        q.assumptions.append(
            f"gradient clipping named alone: no clipping (max_grad_norm {off:g}, which no "
            f"gradient norm reaches; control) vs clipping at the default {default:g}"
        )
    elif (
        written < 2
        and not q.taken_away  # already the on-by-default factor taken away, above
        and len(levels) == 2
        and control == default
        and (default == 0 or (spec.kind == "lora" and default == "full"))
        and (takes_away(q.text, own) or q.asks_if_needed())
    ):
        # the question's treatment is the factor taken away (the default, off): the
        # control is the factor on, so "does removing X hurt?" asks off < on; the
        # assumption just made about the default as control is replaced
        control = next(level for level in levels if level != default)
        q.taken_away = True
        q.assumptions[-1] = (
            f"{factor} taken away: {describe_level(factor, control)} (control) vs "
            f"{describe_level(factor, default)} (without it)"
        )
    return [control, *(level for level in levels if level != control)], control


_SET_AGAINST = re.compile(
    r"\b(?:than|vs\.?|versus|compared|instead of|rather than|against|beats?|over|or)\b"
)
# a follow-up question after the first: "And with 16?", "What about 1e-4?", "Or 0.1?"
_FOLLOW_UP = re.compile(
    r"\s*(?:(?:if so|if not|if yes|then)\s*,?\s*)?"
    r"(?:and|or|also|what about|how about|and what about|and how about|same for|and for)\b"
    r"[^?]*\?\s*$"
)


def _followed_up(
    q: Question, levels: list[Level], named: list[tuple[int, Level]], default: Level
) -> Level | None:
    """The level a follow-up question adds after a first question that asked about one
    level alone ("does group size 8 help chain_sum? And with 16?"), or None."""
    span = asking_span(q.text)
    if span is None or len(levels) != 2 or default is None or default in levels:
        return None
    first = [v for p, v in named if span[0] <= p < span[1]]
    later = [v for p, v in named if p >= span[1]]
    if len(set(first)) != 1 or len(set(later)) != 1 or first[0] == later[0]:
        return None
    if not _FOLLOW_UP.match(q.text, span[1]) or _SET_AGAINST.search(q.text[span[0] : span[1]]):
        return None
    return later[0]


def _set_against_none(text: str) -> bool:
    """Whether the setting off is what the level is set against ("… relative to no gradient
    clipping"): a removal word after a contrast (`moves.CONTRASTED_REMOVAL`)."""
    return any(
        CONTRASTED_REMOVAL.search(text[: m.start()])
        for m in re.finditer(r"\b(?:no|without)\s", text)
    )


def _named_off(q: Question, factor: str, levels: list[Level]) -> list[tuple[int, Level]]:
    """Off (0) named by taking the setting away ("is no KL better?", "does removing it
    help?"), at where it is taken away, when 0 is a level."""
    if 0 not in levels:
        return []
    own = [m for m in q.mentions if m.key == factor and m.kind == "factor"]
    return [(m.start, 0) for m in own if takes_away(q.text[: m.end], [m])]


def _against_off(
    q: Question, spec: Factor, levels: list[Level], positions: list[int], default: Level
) -> Level | None:
    """Off, the control, for levels named as alternatives of a setting that is off by default
    when nothing is compared against ("does a KL penalty between 0.01 and 0.1 help?", "of
    0.01 or 0.1"): each is set against none; None when the levels are compared with each
    other ("0.01 vs 0.1", "0.1 than 0.01") or one of them is off."""
    if default != 0 or any(level == 0 for level in levels) or q.direction == "equivalent":
        return None
    if re.search(r"\bwhich\b", q.text):  # "which KL, 0.01 or 0.1, works better?"
        return None
    if not all(isinstance(level, int | float) for level in levels):
        return None
    if contrasted_index(q.text, positions) is not None or BEST.search(q.masked):
        return None
    between = q.text[min(positions) : max(positions)]
    if re.search(r"\b(?:vs\.?|versus|than|over|against|compared)\b", between):
        return None
    lead = q.text[max(0, min(positions) - 12) : min(positions)]
    if not (re.search(r"\bbetween\s+$", lead) or re.search(r"\b(?:or|and|to)\b|,", between)):
        return None
    shown = " and ".join(describe_level(spec.name, level) for level in levels)
    q.assumptions.append(
        f"{shown} named as alternatives, neither compared with the other: each against "
        f"{describe_level(spec.name, default)} (the default, off), the control"
    )
    return default


def _inside_range(q: Question, spec: Factor, levels: list[Level]) -> Level | None:
    """The middle of a range the question asks the best value within ("what lr works
    best between 1e-5 and 1e-4?"): geometric across a factor of 4 or more, else halfway."""
    if len(levels) != 2 or not all(isinstance(v, int | float) for v in levels):
        return None
    ranged = BEST.search(q.masked) and re.search(r"\bbetween\b", q.text)
    # "sweep lr from 1e-5 to 1e-4": a sweep across the range
    swept = re.search(r"\b(?:sweep\w*|scan\w*|grid)\b[^?.]{0,40}\bfrom\b[^?.]{0,20}\bto\b", q.text)
    if not (ranged or swept):
        return None
    low, high = sorted(float(v) for v in levels)
    middle = (low * high) ** 0.5 if low > 0 and high / low >= 4 else (low + high) / 2
    middle = as_factor_type(spec, float(f"{middle:.1g}") if spec.name == "lr" else middle)
    if middle in levels or (spec.kind == "int" and not isinstance(middle, int)):
        return None
    q.assumptions.append(
        f"the best {spec.name} within a range: a sweep over {low:g}, {middle:g} and {high:g}"
    )
    return middle


def _moved_from_default(spec: Factor, default: Level, way: str | None) -> Level | None:
    """The level a question moves away from when the value it names is the default:
    above it for a limit or "lower"/"shorter", below it for "raise"/"larger"."""
    raised, lowered = spec.raised, spec.lowered
    if spec.name == "max_tokens" and isinstance(default, int):
        raised, lowered = default * 2, max(1, default // 2)
    other = lowered if way == "raise" else raised
    return None if other is None or other == default else as_factor_type(spec, other)


def _unnamed_levels(
    q: Question,
    spec: Factor,
    default: Level,
    way: str | None,
    multiplier: float | None,
    written_default: bool = False,
) -> tuple[Level, list[Level]]:
    """(control, levels) when the question writes no level but the default
    (`written_default`) or none: raised, lowered, a sweep, a shift or a multiple of the
    default, or the factor's alternative level."""
    factor = spec.name
    none_named = (
        f"only the default {factor} named" if written_default else f"no {factor} level named"
    )
    raised, lowered, alternative = spec.raised, spec.lowered, spec.alternative
    if factor == "max_tokens" and isinstance(default, int):
        raised, lowered, alternative = default * 2, max(1, default // 2), default * 2
    if factor == "lora" and (way or multiplier or re.search(r"\branks?\b", q.text)):
        # "a larger LoRA rank", "how does the LoRA rank affect …", "which rank is best":
        # ranks around the usual r=16, not full fine-tuning
        default = 16
    if factor == "max_steps" and re.search(r"how (?:many|much|long)", q.text):
        q.assumptions.append(
            f"how many steps it needs: held-out accuracy after {', '.join(map(str, STEPS_DOSE))} "
            f"steps (a dose-response; the control is the shortest)"
        )
        return STEPS_DOSE[0], list(STEPS_DOSE)
    if (
        default is None
        and factor != "max_turns"
        or (multiplier and not isinstance(default, int | float))
    ):
        raise q.unreadable(f"no {factor} level named: give the values to compare")
    own = [m for m in q.mentions if m.key == factor and m.kind in ("factor", "value")]
    if way == "lower" and default == 0 and not multiplier and lowered_before(q.text, own):
        # "a weaker KL penalty": its default is off already
        raise q.unreadable(
            f"a lower {factor} than its default, {describe_level(factor, default)} (off), does "
            f"not exist: name the level to compare ('{factor} 0.1 vs 0.01')"
        )
    if multiplier and default == 0:  # "halving the KL penalty": its default is off
        raise q.unreadable(
            f"{factor}'s default is 0, which scaling leaves at 0: name the level to compare "
            f"('{factor} {describe_level(factor, alternative)}')"
        )
    shift = shift_named(q.text, q.mentions)
    if shift is not None and isinstance(default, int | float):
        # "increasing the group size by 4": the default and the default plus 4
        other = as_factor_type(spec, default + shift)
        q.assumptions.append(
            f"{factor} moved by {shift:+g} from its default: {describe_level(factor, default)} "
            f"(control) vs {describe_level(factor, other)}"
        )
        return default, [default, other]
    best = BEST.search(q.masked)
    if spec.kind == "choice" and best:
        dose = [default, *(choice for choice in spec.choices if choice != default)]
        q.assumptions.append(f"no {factor} named: every choice ({', '.join(dose)})")
        return default, dose
    own = [m for m in q.mentions if m.key == factor and m.kind == "factor"]
    if (
        spec.kind == "choice"
        and on_by_default(spec)
        and q.direction in ("greater", "less")  # a claim about what it does; "matter" keeps
        and not best
        and not takes_away(q.text, own)
        and not q.asks_if_needed()
    ):
        # "does merging cut training cost?": merging (the default, on) against none
        q.assumptions.append(
            f"{factor} named: {describe_level(factor, default)} (its default) against "
            f"{describe_level(factor, alternative)} (control)"
        )
        return alternative, [alternative, default]
    if multiplier:
        other = as_factor_type(spec, default * multiplier)
    elif best and lowered is not None:
        dose = distinct_levels([lowered, default, raised])
        if len(dose) < 3:  # "which KL is best?": a default at its floor (no KL) swept upward
            dose = distinct_levels([lowered, default, alternative, raised])
        q.assumptions.append(
            f"{none_named}: a dose-response over "
            f"{', '.join(describe_level(factor, v) for v in dose)} (default as control)"
        )
        return default, dose
    elif way == "raise" and raised is not None:
        other = raised
    elif way == "lower" and lowered is not None:
        other = lowered
    else:
        other = alternative
    if other == default:
        other = alternative if alternative != default else raised
    if (
        written_default
        and not multiplier
        and not way
        and q.direction in ("greater", "less")
        and factor != "max_steps"  # "does training for 20 steps help?": training, not fewer steps
    ):
        # "does temperature 1.0 help?" asks what 1.0 does: it is the treatment, set against
        # the level a question about the setting would try (with the default the control,
        # "supported" would answer whether that other level helps — the opposite question)
        q.assumptions.append(
            f"{none_named}, as the level asked about: {describe_level(factor, default)} is the "
            f"treatment against {describe_level(factor, other)} (control); name the level to "
            "compare it with to choose another"
        )
        return other, [other, default]
    q.assumptions.append(
        f"{none_named}: {describe_level(factor, default)} (control) vs "
        f"{describe_level(factor, other)}"
    )
    return default, [default, other]
