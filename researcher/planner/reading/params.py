"""The levels of a PARAM of the user's workflow, by its default's type: a flag (on against
off; "turning off the hint", "does my agent need the hint?": on is the control), a number
(as written, in digits or words; "removing retries": 0; "which few_shot count is best?" a
sweep; else twice the default, or 1 for a count off by default), or text (quoted: "does
system_prompt \"Think step by step.\" help?", 'from "search" to "calculator"'; `key=value`;
a one-word default's values unquoted beside the key's name: "the search tool beat the
calculator tool"; 'adding "X" to the prompt' appends it; none: "removing the system
prompt").

Must not know the outcome or the direction, nor arms, budgets, the gateway or the database.
"""

from __future__ import annotations

import re

from researcher.plan import Level
from researcher.planner.catalogue import WORKFLOW_PREFIX, describe_level, distinct_levels
from researcher.planner.reading.control import CONTRAST, choose_control, contrasted_index
from researcher.planner.reading.mentions import AS_OFTEN
from researcher.planner.reading.moves import (
    BEST,
    bound_before,
    names_default,
    takes_away,
    way_asked,
)
from researcher.planner.reading.numbers import (
    multiplier_named,
    shift_named,
    with_verb,
    word_numbers,
    written_numbers,
)
from researcher.planner.reading.question import Question


def value_start(q: Question, value: str) -> int:
    """Where a PARAM's text value is written: its opening quote, or its first letter
    when it is unquoted ("the search tool")."""
    at = q.question.find(value)
    if at < 0:
        at = q.text.find(value.lower())
    return at - 1 if at > 0 and q.question[at - 1] in "\"'“" else max(at, 0)


def param_levels(q: Question, key: str) -> tuple[list[Level], Level]:
    """The levels of the workflow PARAM `key`, control first, and the control."""
    assert q.params is not None
    default = q.params[key]
    factor = WORKFLOW_PREFIX + key
    quoted = [
        a or b or c
        for a, b, c in re.findall(r"\"([^\"]+)\"|“([^”]+)”|(?<!\w)'([^']+)'(?!\w)", q.question)
    ]
    if isinstance(default, bool):
        mentioned = q.of("param", factor)
        bad = [v for _, v, _ in written_numbers(q.text, q.mentions) if v not in (0.0, 1.0)]
        if bad and any(
            re.match(r"\s*(?:=|is|of|set to|at)?\s*\d", q.text[m.end :]) for m in mentioned
        ):
            # "does use_hint=2 help?": a flag has two values
            raise q.unreadable(
                f"{key} is a flag (default {default}): {bad[0]:g} is no value of it; ask "
                f"'does turning {key} {'off' if default else 'on'} help my agent?'",
                how=False,
            )
        if (
            takes_away(q.text, mentioned)
            or q.asks_if_needed()
            or any(
                re.match(r"\s+off\b", q.text[m.end :])
                and re.search(r"\b(?:turn|switch)\w*\s+(?:the\s+|a\s+)?$", q.text[: m.start])
                for m in mentioned
            )
        ):  # "turning off the hint", "turning the hint off": on is the control
            q.taken_away = True
            q.assumptions.append(f"{factor} taken away: True (control) vs False")
            return [True, False], True
        named_off = re.search(
            rf"\b{param_words(key)}\s*(?:=|:|is|to|set to|turned)?\s*(?:false|off|no|0)\b", q.text
        )
        named_on = re.search(
            rf"\b{param_words(key)}\s*(?:=|:|is|to|set to|turned)?\s*(?:true|on|yes|1)\b", q.text
        )
        if default and named_off:
            if (
                named_on
                and named_on.start() < named_off.start()
                and CONTRAST.search(q.text[max(0, named_off.start() - 50) : named_off.start()])
            ):  # "is use_tests=True better than use_tests=False?": off is set against
                return [False, True], False
            return [True, False], True  # "does use_tests=False hurt?": off is the treatment
        if default:  # "does rerank help?", on by default: off (control) against on
            q.assumptions.append(
                f"{factor} is on by default: off (control) vs on, as the question asks what "
                "having it does"
            )
            return [False, True], False
        return [default, not default], default
    if isinstance(default, int | float):
        found = [(p, v) for p, v, _ in written_numbers(q.text, q.mentions)]
        if isinstance(default, int) and not found:  # "five examples instead of two"
            found = word_numbers(q.text, q.mentions)
        if isinstance(default, int):  # "one retry", "a single retry", "zero-shot"
            found += _one_or_zero(q.text, key) + _every(q.text, key)
            # "a 5x5 board" (board_size): the side, once, not 5 and 5 or a "5x" multiple
            squares = list(_SQUARE.finditer(q.text)) if key.lower().endswith("size") else []
            found = [(p, v) for p, v in found
                     if not any(s.start() <= p < s.end() for s in squares)]  # fmt: skip
            found += [(s.start(), float(s.group(1))) for s in squares]
        found = [
            (p, int(v) if isinstance(default, int) and v.is_integer() else v) for p, v in found
        ]
        mentioned = q.of("param", factor)
        found += [(m.start, default) for m in mentioned if names_default(q.text, m)]
        found.sort(key=lambda pair: pair[0])
        numbers = [v for _, v in found]
        named = distinct_levels(numbers)
        others = [v for v in named if v != default]
        if not others and default != 0 and takes_away(q.text, mentioned):
            # "removing retries": the PARAM off (0) against its default
            q.assumptions.append(f"{factor} taken away: {default} (control) vs 0")
            return [default, 0 if isinstance(default, int) else 0.0], default
        if len(others) >= 1 and len(named) >= 2:
            # "few_shot=2 vs few_shot=4": the levels named; the control as for a setting
            positions = [next(p for p, v in found if v == level) for level in named]
            way = way_asked(q.text, q.of("param", factor))
            control = choose_control(q, factor, named, positions, default, way)
            return [control, *(v for v in named if v != control)], control
        if len(named) == 1 and others and (bound := bound_before(q.text, found[0][0])):
            # "does my agent need more than 1 turn?": 1 the control, the treatment beyond it
            # (the default where it lies beyond, else twice or half the level)
            level, above = others[0], bool(bound.group(1) or bound.group(2))
            if default > level if above else default < level:
                beyond = default
            else:
                beyond = level * 2 if above else level / 2
                if isinstance(default, int):
                    beyond = max(1, int(beyond))
            q.assumptions.append(
                f"{bound.group(0).strip()!r} {level}: {level} is the control, {beyond} a level "
                f"{'above' if above else 'below'} it"
            )
            return [level, beyond], level
        if not others and BEST.search(q.masked):
            sweep = [0, 1, 3] if default == 0 else [default / 2, default, default * 2]
            if isinstance(default, int) and default != 0:  # an odd count: its half rounded
                sweep = [max(1, default // 2), default, default * 2]
            sweep = [int(v) if isinstance(default, int) and float(v).is_integer() else v
                     for v in sweep]  # fmt: skip
            sweep = distinct_levels(sweep)
            q.assumptions.append(
                f"no {factor} level named: a dose-response over {', '.join(map(str, sweep))} "
                f"(the default {default} as control)"
            )
            return [default, *(v for v in sweep if v != default)], default
        if not others and (shift := shift_named(q.text, q.mentions)) is not None:
            # "increasing top_k by 2": the default and the default plus 2
            other = default + (int(shift) if isinstance(default, int) else shift)
            q.assumptions.append(f"{factor} moved by {shift:+g}: {default} (control) vs {other}")
            return [default, other], default
        if not others and _every(" every turn", key) and (often := _AS_OFTEN.search(q.text)):
            # "hints given twice as often": a period, so twice as often is half the period
            rate = _RATE.get(often.group(1), None) or float(re.match(r"\d+", often.group(1))[0])
            other = default / rate
            other = max(1, round(other)) if isinstance(default, int) else other
            q.assumptions.append(
                f"{often.group(0)!r}: {key} is a period, so {default} becomes {other}"
            )
            return [default, other], default
        if not others:
            way = way_asked(q.text, q.of("param", factor))
            multiplier = with_verb(multiplier_named(q.text, q.mentions), way)
            multiplier = multiplier or (0.5 if way == "lower" else 2.0)
            if default == 0 and (isinstance(default, float) or way == "lower"):
                raise q.unreadable(f"no level named for {factor} (default 0): give one")
            if default == 0:  # a count that is off by default ("few_shot": 0): turn it on
                others = [1]
                q.assumptions.append(
                    f"no {factor} level named: tried 1 against the default 0 (name another, "
                    f"e.g. '{key} 3')"
                )
                return [default, *others], default
            other = default * multiplier
            others = [max(1, int(other)) if isinstance(default, int) else other]
            if multiplier_named(q.text, q.mentions) is not None:
                q.assumptions.append(
                    f"{factor} {default} x {multiplier:g}: tried {others[0]}"
                    + (" (rounded down to a whole number)" if others[0] != other else "")
                )
            else:
                q.assumptions.append(f"no {factor} level named: tried {others[0]}")
        return [default, *others], default
    if isinstance(default, str) or default is None:
        if not quoted:  # "tool=python", "tool: search": a bare word as the value
            quoted = re.findall(
                rf"\b{param_words(key)}\s*[=:]\s*([\w.+-]+)", q.question, flags=re.I
            )
        if not quoted and default and re.fullmatch(r"[\w.+-]+", default):
            quoted = _bare_values(
                q.text, key, default
            )  # "the search tool beat the calculator tool"
        others = [value for value in quoted if value != default]
        base = f"{default} " if default else ""
        if (
            not others
            and quoted
            and default
            and re.search(
                r"\b(?:compared (?:to|with)|than|vs\.?|versus|over|against|instead of)\s+"
                r"(?:none|nothing|no\s+\w+|an? empty\s+\w+|without\b)",
                q.text,
            )
        ):  # 'does the prompt ("X", the default) help compared to none?': none the control
            q.assumptions.append(f"control '': no {key}, as the question compares against")
            return ["", default], ""
        if (
            len(others) == 1 and default and re.search(r"\b(?:add\w*|append\w*)\b", q.text)
        ):  # 'adding "Think carefully." to the system prompt': the default plus it
            others = [f"{default} {others[0].strip()}"]
            q.assumptions.append(f"{factor}: the default with {quoted[0].strip()!r} added")
        mentioned = q.of("param", factor)
        if len(others) == 1 and any(names_default(q.text, m) for m in mentioned):
            at = value_start(q, others[0])
            if at > 0 and CONTRAST.search(q.text[max(0, at - 50) : at]):
                # 'does the default prompt beat "X"?': "X" is what the default is set against
                q.assumptions.append(f"control {others[0]!r}: the level compared against")
                return [others[0], default], others[0]
        if (
            len(others) == 1
            and default
            and (against := _set_against_default(q, default, others[0]))
        ):
            # "We use the coach persona. Would tutor do better?" (read: "would tutor do
            # better than coach persona?"): the default named as the subject, the other after
            # "than" is what it is compared against
            q.assumptions.append(f"control {against!r}: the level compared against")
            return [against, default], against
        if len(quoted) == 2 and quoted[0] != quoted[1]:
            contrasted = contrasted_index(q.text, [value_start(q, value) for value in quoted])
            if contrasted is not None:  # 'from "search" to "calculator"', '"A" instead of "B"'
                control = quoted[contrasted]
                q.assumptions.append(f"control {control!r}: the level compared against")
                return [control, *(value for value in quoted if value != control)], control
        if (
            len(others) >= 2
            and default not in quoted
            and not re.search(r"\b(?:default|current|baseline)\b", q.text)
        ):  # 'compare "A" and "B"': those two, the first named the control
            q.assumptions.append(f"control {others[0]!r}: the first named")
            return others, others[0]
        if not others and re.search(
            rf"\b(?:no|without|empty|remov\w*|drop\w*|delet\w*|omit\w*|skip\w*)\s+"
            rf"(?:the\s+|a\s+|an\s+)?{param_words(key)}",
            q.text,
        ):
            others = [""]
        elif not others and re.search(
            r"step[\s-]*by[\s-]*step|chain[\s-]of[\s-]thought|\bcot\b|reason", q.text
        ):
            others = [base + "Think step by step before you answer."]
        elif not others and re.search(r"\b(?:concise|brief|terse|short)\b", q.text):
            others = [base + "Answer concisely."]
        if not others:
            raise q.unreadable(_no_value_named(key, default), how=False)
        if others != quoted:
            q.assumptions.append(f"{factor}: tried {describe_level(factor, others[0])}")
        return [default, *others], default
    raise q.unreadable(
        f"{factor} is a {type(default).__name__}: the template reader varies numbers, "
        f"booleans and text only"
    )


def _set_against_default(q: Question, default: str, other: str) -> str | None:
    """`other` when the text names the default bare first and `other` after a contrast
    word ("tutor … than coach"), else None."""
    first = re.search(rf"(?<![\w-]){re.escape(default.lower())}(?![\w-])", q.text)
    then = re.search(rf"(?<![\w-]){re.escape(other.lower())}(?![\w-])", q.text)
    if first and then and first.start() < then.start():
        if _SET_AGAINST.search(q.text[first.end() : then.start()]):
            return other
    return None


# between the default and the other value: the other is what the default is compared to
# ("tutor … better than coach"; not "from search to calculator", where search is left)
_SET_AGAINST = re.compile(
    r"\b(?:than|over|beats?|outperforms?|instead of|rather than|against|"
    r"compared (?:to|with))\b(?!.*\bfrom\b)"
)


_EVERY = re.compile(
    r"\bevery (?:(other|second)|(third)|(fourth))?\s*(?:turn|step|round|move|call|message|"
    r"episode|attempt|try|guess|question)\b"
)


_SQUARE = re.compile(r"(?<![\w.])(\d+) ?[x×] ?(\1)(?![\w.])")
_AS_OFTEN = re.compile(rf"\b({AS_OFTEN.replace(' (?:as )?', ')(?: as)? ', 1)}\b")
_RATE = {"twice": 2.0, "half": 0.5, "more": 2.0, "less": 0.5, "two times": 2.0,
         "three times": 3.0, "four times": 4.0}  # fmt: skip


def _every(text: str, key: str) -> list[tuple[int, float]]:
    """A period PARAM ("hint_every", "check_interval") written as a frequency: "every turn"
    is 1, "every other turn" 2, "every third turn" 3."""
    if not re.search(r"every|interval|period|freq", key.lower()):
        return []
    return [
        (m.start(), 2.0 if m.group(1) else 3.0 if m.group(2) else 4.0 if m.group(3) else 1.0)
        for m in _EVERY.finditer(text)
    ]


def _one_or_zero(text: str, key: str) -> list[tuple[int, float]]:
    """ "one retry", "a single retry" (1) and "zero-shot" / "one-shot" (0 / 1) for a count
    PARAM: "one" is no level elsewhere (too common a word), but beside the PARAM's own noun
    it is one."""
    # "hops" for n_hops: the singular's stem ("a single hop")
    words = [re.sub(r"(?<=[^s])s$", "", word) for word in re.split(r"[_\W]+", key.lower())]
    stems = [word[:4] for word in words if len(word) >= 3]
    found: list[tuple[int, float]] = []
    for m in re.finditer(r"\b(?:one|a single|single)\s+(?!every\b|each\b)([a-z]+)", text):
        if any(m.group(1).startswith(stem) for stem in stems):
            found.append((m.start(), 1.0))
    if re.search(r"shot|example|demo", key.lower()):
        shots = {"zero": 0.0, "one": 1.0, "two": 2.0, "three": 3.0, "four": 4.0, "five": 5.0}
        for m in re.finditer(r"\b(zero|one|two|three|four|five|\d+)[\s-]shot\b", text):
            found.append(
                (m.start(), shots[m.group(1)] if m.group(1) in shots else float(m.group(1)))
            )
    return found


def _no_value_named(key: str, default: str | None) -> str:
    """The refusal of a text PARAM with no value to try, with an example of its own kind: a
    prompt's sentence in quotes, a one-word value ("search") as a word beside the key."""
    if default and re.fullmatch(r"[\w.+-]+", default):
        return (
            f"it varies your workflow's {key} (default {default!r}), but names no other value "
            f"to try: name it beside the {key}, e.g. 'does the <value> {key} beat the "
            f"{default} {key} for my agent?', or as {key}=<value>"
        )
    return (
        f"it varies your workflow's {key}, but names no value to try: put it in double "
        f"quotes, e.g. 'does {key} \"Think step by step.\" help my agent?'"
    )


# words before a PARAM's name that are no value of it ("the default tool", "a better tool")
_NOT_A_VALUE = re.compile(
    r"the|an?|my|your|our|its|their|this|that|these|those|same|default|current|usual|new|"
    r"old|other|another|different|each|every|any|no|one|own|which|what|whose|\w+est|"
    # comparatives ("better", "larger"), not names ending in -er ("unit_converter", "reranker")
    r"(?:bett|larg|small|high|low|fast|slow|bigg|long|short|strong|weak|easi|hard|new|old|"
    r"cheap|simpl|great|few|oth|eith|neith|wheth|rath|und|ov|aft|nev|ev|lat|earli|clos|furth|"
    r"quick|saf|strict|loos|tight|wid|narrow|deep|shallow|bigg|hott|cold|warm)er|"
    r"good|bad|right|wrong|first|second|\d[\w.]*|than|worse|more|less|rather|instead|"
    r"does|do|did|is|are|was|were|will|would|should|can|could|has|have|had|using|use|"
    # words of the question around a value, never one: "training against the random
    # opponent help compared to the scripted one", "when tool is …"
    r"when|if|while|and|or|but|with|without|for|in|on|at|help\w*|hurt\w*|compar\w*|"
    r"train\w*|learn\w*|improv\w*|matter\w*|work\w*|make|makes|agent|model|policy|setting",
)


def _bare_values(text: str, key: str, default: str) -> list[str]:
    """Unquoted values of a PARAM whose default is one word (tool="calculator"), written
    before its name ("the search tool", "a python tool"), after "set to"/"to" ("switching
    the tool to search"), or, where the default itself is written bare, the words set
    against each other around it ("the calculator tool instead of search", "is search
    better than calculator?", "from search to calculator"), in order. The name's other
    forms count as it: "dense retrieval" is the value "dense" of `retriever`."""
    words = _name_forms(key)
    found = [
        (m.start(1), m.group(1))
        for m in re.finditer(rf"\b([a-z][\w.+-]*)\s+{words}s?\b", text)
        if not _NOT_A_VALUE.fullmatch(m.group(1))
    ]
    found += [
        (m.start(1), m.group(1))
        for m in re.finditer(rf"\b{words}s?\s+(?:(?:set\s+)?to|is|=)\s+([a-z][\w.+-]*)", text)
        if not _NOT_A_VALUE.fullmatch(m.group(1))
    ]
    found += [  # "using gpt-4o as the judge model"
        (m.start(1), m.group(1))
        for m in re.finditer(
            rf"\b([a-z][\w.+-]*)\s+as\s+(?:the\s+|an?\s+|my\s+|our\s+)?{words}s?\b", text
        )
        if not _NOT_A_VALUE.fullmatch(m.group(1))
    ]
    contrast = r"than|instead of|rather than|vs\.?|versus|over|against|from|to|beats?|outperforms?"
    set_against = [
        (m.start(1), m.group(1))
        for pattern in (
            rf"\b(?:{contrast})\s+(?:the\s+|a\s+|an\s+|using\s+)?([a-z][\w.+-]*)",
            # a lookahead, so "does search vs" still finds "search" after "does"
            rf"(?=\b([a-z][\w.+-]*)(?:\s+{words}s?)?\s+(?:[a-z]+\s+)?(?:{contrast})\b)",
        )
        for m in re.finditer(pattern, text)
        if not _NOT_A_VALUE.fullmatch(m.group(1))
        and not re.fullmatch(words, m.group(1))
        and not re.fullmatch(contrast, m.group(1))
    ]
    if default in {value for _, value in set_against}:
        if found:  # values written before the PARAM's name: the others must be written so too
            named = rf"\s+(?:{words}s?|ones?)\b|\s*[?.,;!]|\s*$"
            set_against = [(p, v) for p, v in set_against if re.match(named, text[p + len(v) :])]
        found += set_against
    own = set(key.lower().split("_"))  # "the judge model" names judge_model, no value "judge"
    return list(dict.fromkeys(value for _, value in sorted(found) if value not in own))


def _name_forms(key: str) -> str:
    """`param_words(key)`, or another form of its last word ("retrieval", "retrieving" for
    `retriever`: its first five letters on)."""
    last = key.split("_")[-1].lower()
    if len(last) < 6 or not last.isalpha():
        return param_words(key)
    return rf"(?:{param_words(key)}|{re.escape(last[:5])}[a-z]*)"


def param_words(key: str) -> str:
    """A PARAMS key as the question may write it: "system_prompt", "system prompt"."""
    return r"[\s_-]?".join(re.escape(part) for part in key.split("_"))
