"""Held settings: a setting at one value after the verb ("does group size 8 help at lr
1e-5?", "under RLOO", "with LoRA rank 8", "when the group size is 16", "at few_shot=3" for a
PARAM of the user's workflow, "with the hint on", "at the default temperature") or in a
leading clause set off by a comma ("at lr 5e-5, does kl 0.01 help?") is applied to every arm
(`Reading.held`) and taken out of the text before the rest is read — when something else is
still named to vary and it is named nowhere else. Each is checked against its factor's
bounds or its PARAM's type; a PARAM held at a value not of its type is refused saying so.

Must not know how the held values reach the arms (`design_space.py`), nor budgets, the
gateway or the database.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from researcher.plan import Level
from researcher.planner.catalogue import (
    DIRECTION_WORDS,
    FACTORS,
    LORA_LR,
    WORKFLOW_PREFIX,
    describe_level,
    on_by_default,
)
from researcher.planner.reading.mentions import scan
from researcher.planner.reading.numbers import NUMBER, as_factor_type
from researcher.planner.reading.params import param_words
from researcher.planner.reading.question import Question

# run settings a question may fix for every arm beside its factor ("at lr 1e-5")
# (and any PARAM of the user's workflow; the algorithm and LoRA by a level word: "under RLOO",
# "with LoRA")
_HOLDABLE = ("lr", "kl_coef", "clip_eps", "weight_decay", "max_grad_norm", "group_size",
             "batch_groups", "max_staleness", "temperature", "max_tokens", "lora",
             "max_turns")  # fmt: skip

# "under RLOO", "with LoRA", "when on-policy", "with timeline merging", "with merge=timeline"
HELD_WORDS = ("algorithm", "lora", "max_staleness", "merge")

_HELD_BEFORE = re.compile(
    r"\b(?:at|with|using|under|keeping|holding|when|while|and|given(?:\s+(?:our|my|an?|the))?)\s+"
    r"(?:(?:training|running)\s+)?"
    r"(?:an?\s+|the\s+)?$"
)

# a level word right after the verb or "for": the training it is about ("help RLOO", "matter
# for LoRA"), only where something else still varies
_HELD_AFTER_VERB = re.compile(
    r"\b(?:for|helps?|hurts?|benefits?|improves?|slows?|speeds? up|matters? for|"
    r"destabili[sz]es?|stabili[sz]es?)\s+"
    r"(?:an?\s+|the\s+)?$"
)

# "at the default temperature": held at the setting's default (the task's own for max_tokens)
_HELD_AT_DEFAULT = re.compile(
    r"\b(?:at|with|using|under|keeping|holding)\s+(?:the|its|our|my)\s+(?:current\s+|usual\s+)?"
    r"default\s+$"
)

AT_DEFAULT = "<default>"  # a held level that is the setting's default, resolved with the task

# a PARAM held at a word: "with tool=search", "with use_hint set to true"
_HELD_WORD_VALUE = re.compile(
    r"\s*(?:is\s+|are\s+|set\s+to\s+|=\s*|:\s*)([a-z][\w.+-]*)|"
    r"\s+(?:(?:is|are)\s+)?(?:turned\s+|switched\s+)?(on|off)\b"
)

# what leads a text PARAM held at a word written before its name: "with the calculator
# tool", "against the random opponent"
_HELD_LEAD = re.compile(
    r"\b(?:at|with|using|under|against|when|while|given)\s+(?:an?\s+|the\s+|my\s+|our\s+)?$"
)
_NOT_A_VALUE = re.compile(
    r"(?:same|default|current|usual|other|new|old|different|another|better|best|worse|bigger|"
    r"larger|smaller|higher|lower|more|fewer|less|\w+er)$"
)


def _value_before_key(words: str, params: dict[str, Any] | None) -> tuple[str, str] | None:
    """(PARAM key, value) when `words` (a mention's text) are a value and a text PARAM's name
    ("calculator tool", "random opponent"); None otherwise."""
    for key, default in (params or {}).items():
        found = re.fullmatch(rf"([a-z][\w.+-]*)\s+{param_words(key.lower())}", words)
        if isinstance(default, str) and found and not _NOT_A_VALUE.fullmatch(found.group(1)):
            return WORKFLOW_PREFIX + key, found.group(1)
    return None


_HELD_NUMBER_FIRST = re.compile(r"\b(?:at|with|using|under|and)\s+" + NUMBER.pattern + r"\s+$")
# a level word after its setting's name: "with merge=timeline"
_NAMED_BEFORE = re.compile(r"[a-z_]+\s*(?:=|:)\s*$")
# a setting at one value after a comma ending the question: "does the hint help, n_examples=4?"
_TRAILING = re.compile(r",\s*$")
_QUESTION_END = re.compile(r"\s*[?.!]*\s*$")
# …or in a list of settings after the levels compared: "RLOO vs GRPO, lr=1e-5, group size 8,
# chain_sum: which learns faster?"
# (the task may come between: "with group size 8 on chain_sum, does lr 5e-5 help?")
_LIST_GOES_ON = re.compile(
    r"(?:\s+(?:on|for)\s+(?:the\s+)?[a-z][\w-]*(?:\s+[a-z][\w-]*){0,3}?)?\s*(?:[,:;—–]|\s-\s)"
)
# "RLOO vs GRPO (lr 1e-5, group size 8) on chain_sum": the list in brackets after the levels
_BRACKETED_AFTER = re.compile(r"\s*\(([^()]{3,120})\)")
_COMPARED = re.compile(r"\b(?:vs\.?|versus)\s|\bcompar\w*\s+\S+\s+(?:and|with|to)\s")

_HELD_VALUE = re.compile(
    r"\s*(?:is\s+|are\s+|stays\s+)?(?:(?:set|held|fixed|kept)\s+(?:at|to)\s+|of\s+|=\s*|:\s*|at\s+)?"
    + NUMBER.pattern
)


def held_settings(
    text: str, params: dict[str, Any] | None
) -> tuple[str, dict[str, Level], list[str]]:
    """`text` without the run settings it fixes for every arm beside another it varies
    ("does group size 8 help at lr 1e-5?": lr 1e-5), those settings, and their words. A
    setting is held only when something else is still named to vary once it is taken out,
    and it is named nowhere else (then it is varied: "lr 1e-4 with group size 8 vs ...")."""
    text = _bracketed_after_levels(_leading_context(text))
    held: dict[str, Level] = {}
    words: list[str] = []
    # after the verb: "does group size 16 help at lr 1e-5?" holds lr; "does group size 16
    # with lr 1e-5 help?" asks about the two together (refused: one setting at a time)
    verb = re.search(DIRECTION_WORDS, text) or re.search(r"\bshould\b", text)
    for m in reversed(scan(text, params)):
        if m.key in held:
            continue
        before = _HELD_BEFORE.search(text[: m.start])
        if m.kind == "value" and m.key in HELD_WORDS and not before:
            named = _NAMED_BEFORE.search(text[: m.start])
            before = named and _HELD_BEFORE.search(text[: named.start()])
        trailing = _TRAILING.search(text[: m.start])
        at_default = _HELD_AT_DEFAULT.search(text[: m.start])
        param = m.kind == "param" or (m.kind == "fixed" and m.key.startswith(WORKFLOW_PREFIX))
        found: tuple[int, int, Level] | None = None
        if m.kind == "value" and m.key in HELD_WORDS and before:  # "under RLOO", "with LoRA"
            found = (before.start(), m.end, m.level)
        elif (
            m.kind == "value"
            and m.key in HELD_WORDS
            and trailing
            and _closes_item(text, trailing.start(), m.end, end_needs_levels=True)
        ):  # "lr 1e-5 vs 5e-5, rloo, chain_sum: which is better?"
            found = (trailing.start(), m.end, m.level)
        elif (
            m.kind == "value"
            and m.key in HELD_WORDS
            and (verb := _HELD_AFTER_VERB.search(text[: m.start]))
        ):  # "does kl 0.05 help RLOO?", "does the clip ratio matter for RLOO?": RLOO's setting
            found = (verb.end(), m.end, m.level)
        elif m.kind in ("factor", "fixed", "param") and (m.key in _HOLDABLE or param):
            value = _HELD_VALUE.match(text, m.end)
            number_first = _HELD_NUMBER_FIRST.search(text[: m.start])  # "with 8 groups/step"
            word = _HELD_WORD_VALUE.match(text, m.end) if param else None
            if at_default:
                found = (at_default.start(), m.end, AT_DEFAULT)
            elif number_first and not number_first.group(2):
                found = (number_first.start(), m.end, float(number_first.group(1)))
            elif before and value and not value.group(2):
                found = (before.start(), value.end(), float(value.group(1)))
            elif before and word:  # "with tool=search", "with the hint on"
                found = (before.start(), word.end(), word.group(1) or word.group(2))
            elif (
                trailing
                and value
                and not value.group(2)
                and _closes_item(text, trailing.start(), value.end())
            ):  # "does the hint help my agent, n_examples=4?"
                found = (trailing.start(), value.end(), float(value.group(1)))
            elif trailing and word and _closes_item(text, trailing.start(), word.end()):
                # "does group size 8 help my agent, tool=calculator?"
                found = (trailing.start(), word.end(), word.group(1) or word.group(2))
        if (
            found is None
            and m.kind in ("param", "task")
            and (valued := _value_before_key(text[m.start : m.end], params))
            and (lead := _HELD_LEAD.search(text[: m.start]))
        ):  # "with the calculator tool, does lr 5e-5 help?", "against the random opponent"
            m = replace(m, key=valued[0])
            found = (lead.start(), m.end, valued[1])
        if found is None:
            continue
        start, end, level = found
        if _SECOND_QUESTION.match(text, end) and re.match(r"and\b", text[start:end]):
            continue  # "does group size 8 help countdown and lr 1e-4 help chain_sum?": two
        # a clause before the verb holds only when set apart: "at lr 5e-5, does kl help?"
        if (verb is None or start < verb.end()) and not _LIST_GOES_ON.match(text, end):
            continue
        blanked = text[:start] + " " * (end - start) + text[end:]
        if not _still_varies(blanked, params, m.key):
            continue
        held[m.key] = float(f"{level:.12g}") if isinstance(level, float) else level
        words.append(text[start:end].strip())
        text = blanked
    return text, held, words


# "… and lr 1e-4 help chain_sum?": a setting with a verb of its own is a second question
_SECOND_QUESTION = re.compile(
    r"\s+(?:help|hurt|improve|beat|matter|change|speed|slow|make|do|boost|raise|lower|reduce)"
    r"s?\b"
)


# "lora r8 at lr 1e-4": the lr the LoRA arm trains at, written right after its rank
_LORA_AT_LR = re.compile(
    r"\b(?:lora(?:\s+(?:r|rank)\s*=?\s*\d+)?|(?:lora\s+)?r\s*=?\s*\d+|rank\s*=?\s*\d+)"
    r"(\s+(?:at|with)\s+(?:an?\s+)?(?:lr|learning rate)\s*(?:of\s+|=\s*)?"
    r"(\d+(?:\.\d+)?e-?\d+|0?\.\d+))(?=[\s,?]|$)"
)


_FULL_FT = re.compile(
    r"\bfull(?:[\s-]+(?:fine[\s-]?tun\w*|finetun\w*|ft|param\w*|model|weights))?\b"
)


LORA_LR_NOTE = "after the LoRA rank read as LoRA's usual lr"


def lora_lr_named(text: str) -> tuple[str, str | None]:
    """`text` without an lr written right after a LoRA rank when it is LoRA's usual lr ("does
    lora r8 at lr 1e-4 match full fine-tuning?": the LoRA arm trains at 1e-4 anyway, full
    fine-tuning at its own), and what was read, in words. Any other lr there would set the
    LoRA arm's lr alone, a second setting: refused (`ValueError`) saying how to ask."""
    m = _LORA_AT_LR.search(text)
    if m is None or not _FULL_FT.search(text):  # "does r32 beat r8 at lr 3e-4?": both LoRA's
        return text, None
    if float(m.group(2)) != LORA_LR:
        raise ValueError(
            f"{m.group(1).strip()!r} after the LoRA rank would change the LoRA arm's lr "
            f"alone: a second setting. A LoRA study runs each method at its usual lr (LoRA "
            f"{LORA_LR:g}, full fine-tuning its own), or at one lr held for both — write it "
            f"before the question: 'at lr {m.group(2)}, does …'"
        )
    blanked = text[: m.start(1)] + " " * (m.end(1) - m.start(1)) + text[m.end(1) :]
    return blanked, (
        f"{m.group(1).strip()!r} {LORA_LR_NOTE}: the LoRA arm trains at {LORA_LR:g}, full "
        "fine-tuning at its own (name one lr for both before the question to hold it: 'at lr "
        "1e-4, does …')"
    )


# "in our setting (LoRA rank 16, lr 1e-4), does …": a context in brackets before the question
_BRACKETED_CONTEXT = re.compile(
    r"^(?:in|for|with|using|under)\s+(?:(?:our|my|the|a|this)\s+)?(?:(?:usual|current|"
    r"default|baseline|standard)\s+)?(?:setting|setup|set-up|config\w*|runs?|baseline|recipe)?"
    r"\s*\(([^()]{3,120})\)\s*,?\s*"
)
# "with LoRA rank 16, lr 1e-4, does …": settings listed before the question
_LISTED_CONTEXT = re.compile(
    r"^((?:at|with|using|under)\s+[^,?]+?),\s+(?!(?:on|for|in)\s)([^,?]+?),\s+"
    r"(?=(?:does|do|is|are|can|will|would|should|how|which|what)\b)"
)


def _leading_context(text: str) -> str:
    """A leading context written as a list ("in our setting (LoRA rank 16, lr 1e-4), does
    …", "with LoRA rank 16, lr 1e-4, does …") as the one clause it means: "with LoRA rank 16
    and lr 1e-4, does …" — each setting in it held for every arm."""
    bracketed = _BRACKETED_CONTEXT.match(text)
    if bracketed:
        listed = " and ".join(part.strip() for part in bracketed.group(1).split(","))
        text = f"with {listed}, {text[bracketed.end() :]}"
    return _LISTED_CONTEXT.sub(r"\1 and \2, ", text)


def _closes_item(text: str, comma: int, end: int, *, end_needs_levels: bool = False) -> bool:
    """Whether the setting after the comma at `comma`, ending at `end`, is an item set apart:
    it ends the question ("…, n_examples=4?") or goes on a list of settings after the levels
    compared ("RLOO vs GRPO, lr=1e-5, group size 8: …"). `end_needs_levels`: ending the
    question counts only after levels compared too (a bare algorithm word)."""
    compared = _COMPARED.search(text[:comma])
    if _LIST_GOES_ON.match(text, end):
        return bool(compared)
    return bool(_QUESTION_END.match(text, end)) and (bool(compared) or not end_needs_levels)


def _bracketed_after_levels(text: str) -> str:
    """A list in brackets right after the levels compared ("RLOO vs GRPO (lr 1e-5, group size
    8) on chain_sum: …") as the list it means: ", lr 1e-5, group size 8, on chain_sum"."""
    for found in _BRACKETED_AFTER.finditer(text):
        if _COMPARED.search(text[: found.start()]):
            items = ", ".join(part.strip() for part in found.group(1).split(","))
            return f"{text[: found.start()]}, {items}, {text[found.end() :].lstrip()}"
    return text


def _still_varies(text: str, params: dict[str, Any] | None, held: str) -> bool:
    """Whether `text` still names a setting to vary other than `held` (and names `held` no
    more): a setting or PARAM by name, two levels of one ("RLOO beat GRPO"), or one level
    off its default ("LoRA"); the default alone ("is GRPO better with a KL of 0.1?") is the
    training it names, not a factor."""
    found = scan(text, params)
    mentions = [m for m in found if m.kind in ("factor", "value", "param")]
    if any(m.key == held for m in mentions):
        return False
    if any(m.kind == "model" for m in found):
        return True  # "with LoRA rank 16, would the 360M model do better?": the model varies
    levels: dict[str, set[str]] = {}
    for m in mentions:
        if m.kind == "value":
            levels.setdefault(m.key, set()).add(json.dumps(m.level, sort_keys=True, default=str))
    return any(
        m.key != "max_steps"
        and (
            m.kind != "value"
            or len(levels[m.key]) >= 2
            or (m.key in FACTORS and m.level != FACTORS[m.key].default)  # "LoRA": r=16
            # "does std normalization matter for RLOO?": on by default, named to vary
            or (m.key in FACTORS and m.key != "lora" and on_by_default(FACTORS[m.key]))
        )
        for m in mentions
    )


_KIND_WORDS = {bool: "a flag", int: "a whole number", float: "a number", str: "text"}


def _example_value(default: Any) -> str:
    """A value of `default`'s type, as a question would write it."""
    if isinstance(default, bool):
        return "true" if not default else "false"
    if isinstance(default, int | float):
        return f"{default * 2 or 1:g}"
    return "NAME"


def checked_held(q: Question, factor: str, task: str) -> dict[str, Level]:
    """The held settings as their factors' (or PARAMS') types, each within its bounds;
    one held at its default ("at the default temperature") as that default."""
    held: dict[str, Level] = {}
    for key, value in q.held.items():
        if key.startswith(WORKFLOW_PREFIX):
            if key != factor:
                held[key] = _held_param(q, key, value)
                _say_as_held(q, key, value, held[key])
            continue
        spec = FACTORS[key]
        if value == AT_DEFAULT:
            value = spec.default_for(task)
            if key != factor and value is not None:
                held[key] = value
            continue
        if not isinstance(value, float):  # a level word ("under RLOO", "with LoRA")
            if key != factor:
                held[key] = value
            continue
        if not spec.in_bounds(value):
            raise q.unreadable(f"{key} {value:g} is out of bounds ({spec.bounds_text()})")
        typed = as_factor_type(spec, value)
        if spec.kind in ("int", "lora") and not isinstance(typed, int):
            raise q.unreadable(f"{key} {value:g} is not a whole number")
        if key != factor:
            held[key] = typed
    return held


def _say_as_held(q: Question, key: str, written: Level, typed: Level) -> None:
    """The held setting's assumption with the value the arms get ("with the hint on":
    use_hint True), not the word the question wrote."""
    if written == AT_DEFAULT or typed == written:
        return
    was = f"{key} {describe_level(key, written)} for every arm"
    now = f"{key} {describe_level(key, typed)} for every arm"
    q.assumptions = [a.replace(was, now) for a in q.assumptions]


def _held_param(q: Question, key: str, value: Level) -> Level:
    """A PARAM held for every arm as the type of its default: "with few_shot 3" (an
    int), "with use_hint=true" (a flag), "with tool=search" (a word)."""
    assert q.params is not None
    name = key[len(WORKFLOW_PREFIX) :]
    default = q.params[name]
    if value == AT_DEFAULT:
        return default
    flags = {"true": True, "on": True, "yes": True, "false": False, "off": False, "no": False}
    if isinstance(default, bool) and (str(value).lower() in flags or value in (0.0, 1.0)):
        return flags[value] if isinstance(value, str) else bool(value)
    if isinstance(default, int) and not isinstance(default, bool) and isinstance(value, float):
        if value.is_integer():
            return int(value)
    elif isinstance(default, float) and isinstance(value, float):
        return value
    elif (default is None or isinstance(default, str)) and isinstance(value, str):
        return value
    written = f"{value:g}" if isinstance(value, float) else repr(value)
    kind = _KIND_WORDS.get(type(default))
    if kind is None:
        raise q.unreadable(
            f"it holds your workflow's {name} for every arm, but {name} is a "
            f"{type(default).__name__}: the template reader holds and varies numbers, "
            "flags and text only; leave it at its default"
        )
    raise q.unreadable(
        f"it holds your workflow's {name} at {written} for every arm, but {name} is "
        f"{kind} (default {default!r}): no arm can set it to that. Hold it at a value of "
        f"its type ('with {name}={_example_value(default)}')"
    )
