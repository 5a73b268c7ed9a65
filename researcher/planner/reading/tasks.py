"""The task: the one after "held-out", "into", then "on", "for", "at", "of" or a verb ("help
arithmetic"; not "a mix of"), not after "training on" nor what is mixed in ("mixing in X",
"adding X"); other tasks named go to `tasks`, each at a difficulty level named beside it
("tiny countdown", "countdown tiny", "countdown at level easy": `task_levels`; a level the
task lacks, or two levels of one task, are refused). A misspelt task name is the closest
shipped one, said. None named: chain_sum (max_turns: guess_number; a task mix: chain_sum
with basic_arithmetic mixed in). Your own workflow: "workflow". One task named as trained on
and another as judged ("train on chain_sum, judge on basic_arithmetic: does lr 1e-4 help?")
is refused when the factor is no task mix: every arm trains on the task it is judged on.

Must not know the factor's levels or the outcome, nor arms, budgets, the gateway or the
database.
"""

from __future__ import annotations

import re

from researcher.planner.catalogue import (
    DEFAULT_TASK,
    TASKS,
    WORKFLOW_PREFIX,
    WORKFLOW_TASK,
    TaskInfo,
    task_info,
)
from researcher.planner.reading.mentions import Mention
from researcher.planner.reading.question import Question
from researcher.planner.reading.sentences import asking_span, outside_asking
from researcher.planner.reading.spelling import near_task

# a mixing question that names no task at all ("does multi-task mixing help?") is studied on
# two tasks bench/learnability.py measured the bundled model learning in 20 steps (chain_sum
# 0.27 -> 0.68, basic_arithmetic 0.47 -> 0.73, both easy): a mix of tasks it cannot learn
# answers nothing
MIX_DEFAULT_TASK = "chain_sum"

# difficulty words beside a task: a level the task has is read as its level; one it lacks
# is refused (names its levels), except for a task with one difficulty (said, not refused)
_DIFFICULTY_WORDS = r"tiny|easy|medium|standard|hard"

_LEVEL_SUFFIX = r"(?:[\s-]+(?:level|difficulty|setting|mode|version|category|split))"


def level_pattern(level: str, info: TaskInfo | None = None) -> str:
    """A level's words: "parallel_multiple" is also "parallel multiple", and the task's
    other words for it ("3-number" for countdown's easy)."""
    words = [re.escape(w) for w in level.split("_")]
    aliases = [words for words, named in (info.level_words if info else ()) if named == level]
    return "|".join([*aliases, r"[\s_-]?".join(words)])


def level_beside(text: str, start: int, end: int, words: str) -> str | None:
    """The level word (one of `words`, a regex alternation) written beside the task mention
    text[start:end]: before it ("tiny countdown", "the easy level of countdown") or after it
    ("countdown (tiny)", "countdown at level tiny", "countdown at the tiny level", "countdown
    tiny")."""
    before = re.search(
        rf"(?<![\w-])({words}){_LEVEL_SUFFIX}?(?:\s+of)?\s+(?:the\s+)?$", text[:start]
    )
    if before:
        return before.group(1)
    after = text[end:]
    for pattern in (
        rf"^\s*\(\s*(?:level\s+|category\s+)?({words}){_LEVEL_SUFFIX}?\s*\)",
        rf"^\s*,?\s*(?:(?:at|on|with|in)\s+)?(?:the\s+|its\s+)?(?:level|difficulty|category)"
        rf"\s*[:=]?\s*[\"']?({words})(?![\w-])",
        rf"^\s*,?\s*(?:at|on|with|in)\s+(?:the\s+|its\s+|an?\s+)?[\"']?({words})[\"']?"
        rf"{_LEVEL_SUFFIX}",
        rf"^\s*,?\s*(?:with|using|of)\s+(?:the\s+)?({words})(?![\w-])",
        rf"^\s*,?\s*at\s+(?:the\s+)?({words})(?![\w-])",  # "chain_sum at medium"
        # straight after: "countdown tiny", "countdown, tiny level", "bfcl's parallel category"
        rf"^(?:'s)?\s*,?\s*[\"']?({words})[\"']?{_LEVEL_SUFFIX}?(?![\w-])",
    ):
        found = re.match(pattern, after)
        if found:
            return found.group(1)
    return None


def spelled_level(word: str, info: TaskInfo) -> str:
    """The level a matched word spells ("parallel multiple" → parallel_multiple)."""
    for level in info.levels:
        if re.fullmatch(level_pattern(level, info), word):
            return level
    raise AssertionError(f"{word!r} matched none of {info.levels}")  # the pattern came from them


def read_task(q: Question, factor: str) -> tuple[str, list[str]]:
    """(the judged task, every task named) — "workflow" for the user's own workflow."""
    if q.params is not None:
        # a text PARAM varied: a task's name is likely one of its values ("the calculator
        # tool instead of search"), not a task
        text_param = factor.startswith(WORKFLOW_PREFIX) and isinstance(
            q.params.get(factor.removeprefix(WORKFLOW_PREFIX)), str
        )
        if q.of("task") and not text_param:
            q.assumptions.append(
                "the tasks the question names are read as your workflow's own tasks"
            )
        return WORKFLOW_TASK, [WORKFLOW_TASK]
    named = q.of("task")
    partners = {m.key for m in named if factor == "task_mix" and _mixed_in(q, m)}
    ranked = sorted(
        (-_judged_strength(q, m), order, m.key)
        for order, m in enumerate(named)
        if m.key not in partners
    )
    families = list(dict.fromkeys(m.key for m in named))
    judged = [key for _, _, key in ranked]
    if judged:
        task = judged[0]
    elif factor == "max_turns" or "max_turns" in q.held:
        task = "guess_number"
        q.assumptions.append("max_turns is the guessing game's setting: task guess_number")
    elif factor == "merge" or "merge" in q.held:
        task = "guess_number"
        q.assumptions.append(
            "no task named to judge on: guess_number (merging changes only episodes of "
            "several calls, so a multi-turn task)"
        )
    elif factor == "task_mix" and not partners:
        task = MIX_DEFAULT_TASK
        q.assumptions.append(
            f"no task named to judge on: {task} (a mixing question with no task named is "
            "studied on two tasks the bundled model learns, bench/learnability.py)"
        )
    elif (near := near_task(q.masked)) is not None:
        task, written = near
        q.assumptions.append(
            f"{written!r} read as the task {task} (the shipped task closest to it)"
        )
    else:
        task = DEFAULT_TASK if DEFAULT_TASK not in partners else "basic_arithmetic"
        q.assumptions.append(f"no task named to judge on: {task} (the default task)")
    if factor == "merge" and not TASKS[task].multi_turn:
        multi = ", ".join(name for name, info in TASKS.items() if info.multi_turn)
        raise q.unreadable(
            f"it varies how an episode's calls are merged, but {task} is one call per "
            f"episode, so every layout trains the same sequences. Ask it on a multi-turn "
            f"task ({multi}), e.g. 'does timeline merging beat tree on guess_number?'",
            how=False,
        )
    if factor != "task_mix":
        _refuse_training_on_another_task(q, named)
        _refuse_tasks_compared(q, named, factor)
        unjudged = [family for family in families if family != task]
        if unjudged:
            # "does group size 8 help both chain_sum and countdown?": one task is judged
            q.assumptions.append(
                f"{' and '.join(unjudged)} also named, but a study of {factor} trains and "
                f"judges one task: {task}; ask again about {unjudged[0]} for its own answer"
            )
    return task, list(dict.fromkeys([task, *families]))


# a task named as the one trained on: "train on chain_sum", "trained only on countdown",
# "chain_sum training"
_TRAINED_BEFORE = re.compile(r"\btrain(?:ed|ing|s)?\s+(?:only\s+|just\s+)?on\s+(?:the\s+)?$")
_TRAINED_AFTER = re.compile(r"^\s+training\b(?!\s+on\b)")


def _refuse_training_on_another_task(q: Question, named: list[Mention]) -> None:
    """Refuses a question that trains on one task and judges on another ("train on
    chain_sum, judge on basic_arithmetic: does lr 1e-4 help?"): each arm of a study of a
    run setting trains on the task it is judged on, so it would silently answer another
    question."""
    trained = {
        m.key
        for m in named
        if _TRAINED_BEFORE.search(q.text[: m.start]) or _TRAINED_AFTER.match(q.text[m.end :])
    }
    others = [m.key for m in named if m.key not in trained]
    if not trained or not others:
        return
    a, b = sorted(trained)[0], others[0]
    raise q.unreadable(
        f"it trains on {a} and judges on {b}; a study of a run setting trains every arm on "
        f"the task it judges it on. Ask about {b} alone (trained and judged on it), or "
        f"whether mixing {a} into {b} training helps on {b} ('does mixing {a} into {b} "
        f"training help on {b}?')",
        how=False,
    )


# "does chain_sum or countdown learn faster", "which task, A or B, …": the tasks compared
_TASKS_ASKED = re.compile(
    r"\b(?:does|do|is|are|will|would|which(?: task)?,?|whether)\s+(?:the\s+)?$"
)
_TASK_OR = re.compile(r"\s*(?:,\s*)?(?:or|vs\.?|versus)\s+(?:the\s+)?")
# "does countdown learn faster than chain_sum", "is letter counting easier than chain_sum"
_TASK_THAN = re.compile(
    r"\s+(?:\w+\s+){0,3}?(?:faster|slower|quicker|easier|harder|better|worse|more slowly|"
    r"more quickly)\s+than\s+(?:the\s+)?"
)
# "which learns faster with lr 1e-4, countdown or chain_sum?", "help more on A or B?"
_WHICH = re.compile(r"\bwhich\b")
_MORE_ON = re.compile(r"\bmore\s+(?:on|for|with|in)\s+(?:the\s+)?$")


def _refuse_tasks_compared(q: Question, named: list[Mention], factor: str) -> None:
    """Refuses "does chain_sum or countdown learn faster with group size 8?": it compares
    two tasks, not two levels of a run setting, and tasks' rewards are on no common scale."""
    for first, second in zip(named, named[1:], strict=False):
        between = q.text[first.end : second.start]
        before = q.text[: first.start]
        if first.key != second.key and (
            (_TASK_OR.fullmatch(between) and (_TASKS_ASKED.search(before) or _WHICH.search(before)))
            or (_TASK_OR.fullmatch(between) and _MORE_ON.search(before))
            or _TASK_THAN.fullmatch(between)
        ):
            raise q.unreadable(
                f"it compares two tasks ({first.key} or {second.key}), not two levels of a run "
                f"setting; a study varies a setting ({factor} here) on one task. Ask about "
                f"each task on its own ('does {factor} … help {first.key}?'); how fast the "
                "bundled model learns each task is measured in bench/learnability.py",
                how=False,
            )


def read_task_levels(q: Question, task: str, tasks: list[str]) -> dict[str, str]:
    """The difficulty level named beside each task that has levels ("tiny countdown",
    "countdown at level easy", "parallel function calling"); the judged task's default
    is said when none is named. Two levels of one task, or one it lacks, are refused."""
    if q.params is not None:
        return {}
    found: dict[str, str] = {}
    for m in q.of("task"):
        info = task_info(m.key)
        if info is None:
            continue
        longest_first = sorted(info.levels, key=len, reverse=True)
        own = "|".join(level_pattern(level, info) for level in longest_first)
        word = level_beside(q.text, m.start, m.end, own) if own else None
        if word is not None:
            level = spelled_level(word, info)
        else:
            other = level_beside(q.text, m.start, m.end, _DIFFICULTY_WORDS)
            if other is None:
                continue
            if not info.levels:
                q.assumptions.append(
                    f"{m.key} is served at one difficulty here: {other!r} changes nothing"
                )
                continue
            raise q.unreadable(
                f"{m.key} has no {info.level_knob} {other!r}; its {info.level_knob}s are "
                f"{', '.join(info.levels)}, easiest first (default {info.default_level})"
            )
        if found.get(m.key, level) != level:
            raise q.unreadable(
                f"it names two {info.level_knob}s of {m.key} ({found[m.key]} and {level}); "
                f"a study trains and judges a task at one {info.level_knob}: comparing "
                "levels is no run setting. Ask about one"
            )
        found[m.key] = level
    judged = task_info(task)
    if judged is not None and judged.levels:
        # "At the tiny level, does lr 5e-5 help countdown?": the asking sentence's level,
        # away from the task's name, over one a sentence of setup named
        own = "|".join(level_pattern(level, judged) for level in judged.levels)
        span = asking_span(q.text) or (0, len(q.text))
        asked = re.search(
            rf"\b(?:at|on|with|in)\s+(?:the\s+|its\s+)?({own}){_LEVEL_SUFFIX}(?![\w-])",
            q.text[span[0] : span[1]],
        )
        where = [m.start for m in q.of("task") if m.key == task]
        if asked and (task not in found or all(outside_asking(q.text, p) for p in where)):
            found[task] = spelled_level(asked.group(1), judged)
    if judged is not None and task not in found and judged.level_words:
        # a level's own words away from the task's name: "on bfcl, does lr 5e-5 help
        # parallel calls?"
        hits = {
            level
            for words, level in judged.level_words
            if re.search(rf"(?<!\w)(?:{words})(?!\w)", q.text)
        }
        if len(hits) == 1:
            found[task] = hits.pop()
    for family in tasks:
        info = task_info(family)
        if info is None or not info.levels:
            continue
        if family in found:
            q.assumptions.append(f"{family} at {info.level_knob} {found[family]} (as named)")
        elif family == task:
            others = ", ".join(level for level in info.levels if level != info.default_level)
            q.assumptions.append(
                f"{family} at its default {info.level_knob}, {info.default_level} (name "
                f"another to choose it: {others})"
            )
    return found


def _mixed_in(q: Question, mention: Mention) -> bool:
    """Whether a task is what is mixed in ("mixing in X", "adding X", "mixing X into")."""
    before = q.text[: mention.start]
    after = q.text[mention.end :]
    lead = r"(?:the\s+|some\s+|a\s+bit\s+of\s+|\d+%\s+(?:of\s+)?)?$"
    share_of = (  # "30% of the batch is countdown", "a quarter of prompts from countdown"
        r"\bof\s+(?:the\s+|each\s+|every\s+|our\s+|a\s+)?(?:batch(?:es)?|data|prompts|"
        r"episodes|training(?:\s+data)?)\s+(?:is|are|comes?\s+from|drawn\s+from|from|being)"
        r"\s+(?:from\s+)?(?:the\s+)?$"
    )
    share = r"\b(?:share|portion|fraction|proportion|weight|amount)\s+of\s+(?:the\s+)?$"
    return bool(
        re.search(share_of, before)
        or re.search(share, before)  # "a 20% share of spell_backward in the mix"
        or re.search(r"\b(?:an?\s+)?(?:\w+\s+)?tasks?\s*\(\s*$", before)  # "an easier task (X)"
        and re.search(r"\b(?:mix\w*\s+in|add\w*)\s+(?:an?\s+)?(?:\w+\s+)?tasks?\s*\(\s*$", before)
        or re.search(
            rf"\b(?:mix\w*\s+in|add\w*|includ\w*|throw\w*\s+in|(?:train\w*|together) with|"
            rf"alongside)\s+{lead}",
            before,
        )
        or (
            re.search(rf"\bmix\w*\s+{lead}", before)
            and re.match(r"\s*(?:tasks?\s+)?(?:into|in with|with|in)\b", after)
        )
    )


def _judged_strength(q: Question, mention: Mention) -> int:
    """How strongly the words around a task mention say it is the judged one (3: held-out,
    0: trained on or mixed in)."""
    before = q.masked[: mention.start]
    after = q.masked[mention.end :]
    if re.search(r"\b(?:held[\s-]?out|test|into|onto)\s+(?:the\s+)?(?:held[\s-]?out\s+)?$", before):
        return 3
    if re.search(
        r"[.;]\s[^.;?]*\b(?:also|too|as well|likewise|equally)\b[^.;?]*$", q.text[: mention.start]
    ):
        return 3  # "We found group size 8 helps chain_sum. Does it also help countdown?"
    if re.search(
        r"\b(?:question|study|experiment|this)\s+is\s+(?:(?:only|really|all)\s+)?about\s+(?:the\s+)?$",
        q.text[: mention.start],
    ):
        return 3  # "Our main task is letter counting, but this question is about countdown"
    if re.search(
        r"\bsingle[\s-]task\s+(?:training\s+)?(?:on|for)\s+(?:the\s+)?$", q.text[: mention.start]
    ):
        return 3  # "multi-task training … better than single-task on letter_counting"
    if re.search(  # unmasked: "multi-task training on X" is itself a mention
        r"\b(?:train\w*|mix\w*|add\w*)\s+(?:only\s+)?(?:on|in|with)\s+(?:the\s+)?$",
        q.text[: mention.start],
    ):
        return 0
    mixed = r"\b(?:mix\w*|blend\w*|combination|ratio|split)\s+of\s+(?:the\s+)?$"
    if re.search(mixed, q.text[: mention.start]):  # "mix" is itself a mention, masked
        return 1  # "a 50/50 mix of A and B": A is no more judged than B
    verb = r"help\w*|hurt\w*|improv\w*|boost\w*|harm\w*|degrad\w*|benefit\w*"
    if re.match(r"\s+(?:alone|only|by itself|on its own|unmixed)\b", after) or re.search(
        r"\b(?:pure|only|just)\s+$", before
    ):
        return 2  # "does a 75/25 countdown/chain_sum mix beat chain_sum alone?"
    if re.search(rf"\b(?:on|for|at|in|of|{verb})\s+(?:the\s+)?$", before) or re.match(
        r"\s*(?:held[\s-]?out\s+)?(?:accuracy|performance|scores?|results?)\b", after
    ):
        return 2
    return 1
