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


_FRACTIONS = {"half": 0.5, "third": 1 / 3, "quarter": 0.25, "fifth": 0.2, "tenth": 0.1}
_FRACTION = re.compile(r"\b(?:(a|one|two|three)[\s-])?(half|thirds?|quarters?|fifths?|tenths?)\b")
_COUNTS = {
    w: i for i, w in enumerate("zero one two three four five six seven eight nine ten".split())
} | {"a": 1}
_COUNT = r"(\d+|one|two|three|four|five|six|seven|eight|nine|ten)"
# "one part countdown for every four (parts) of chain_sum", "1 part X to 3 parts Y",
# "1 countdown prompt per 3 chain_sum prompts"
_PARTS = re.compile(
    rf"\b{_COUNT} (?:parts? (?:of )?)?(.{{2,30}}?) (?:prompts? |examples? |items? )?"
    rf"(?:for|to|per) (?:every |each )?{_COUNT}\b"
)
# "1 in 4 prompts countdown", "one in five prompts from chain_sum"
_ONE_IN = re.compile(
    rf"\b{_COUNT} (?:in|out of) {_COUNT} (?:prompts|examples|items|episodes|tasks)"
    r"(?: (?:are|is|from|being))*\s+"
)
_THREE_WAY = re.compile(r"\b(\d{1,2}) ?: ?(\d{1,2}) ?: ?(\d{1,2})\b")
# the words between a share and the task it is of: "30% countdown", "a 20% share of X",
# "30% of the batch is countdown"; and between a task and its share: "chain_sum 80%",
# "basic_arithmetic at 0.25 weight", "chain_sum: 0.8", "letter counting (say 10%)"
_SHARE_THEN_TASK = re.compile(
    r"\s*(?:(?:share|portion|fraction|weight|part)\s+(?:of\s+)?)?(?:of\s+(?:the\s+|each\s+|"
    r"every\s+|our\s+|a\s+)?(?:batch(?:es)?|data|prompts|episodes|mix|training(?:\s+data)?)"
    r"\s+(?:is|are|being|comes?\s+from|drawn\s+from|from)\s+(?:from\s+)?|of\s+)?(?:the\s+)?"
)
_TASK_THEN_SHARE = re.compile(r"\s*(?::|=|\bat|\bwith|\bfrom|\(\s*say|\(|\bweight(?:ed)?)?\s*")


def _task_at(q: Question, start: int, end: int) -> str | None:
    """The task a share at [start, end) is written of: the one right after it, else right
    before it."""
    tasks = q.of("task")
    after = [
        m for m in tasks if m.start >= end and _SHARE_THEN_TASK.fullmatch(q.text[end : m.start])
    ]
    if after:
        return min(after, key=lambda m: m.start).key
    before = [
        m for m in tasks if m.end <= start and _TASK_THEN_SHARE.fullmatch(q.text[m.end : start])
    ]
    return max(before, key=lambda m: m.end).key if before else None


_LISTED = re.compile(r"\s*(?:[:/,+&]|,?\s*\band\b|\bto\b|\bvs\.?)\s*(?:the\s+)?")


def _tasks_beside(q: Question, start: int, end: int) -> list[str]:
    """The tasks listed right beside a ratio, in its order ("3:1 countdown:chain_sum", "a
    2:1:1 mix of A, B and C", "countdown/chain_sum at 3:1")."""
    tasks = sorted(q.of("task"), key=lambda m: m.start)

    def chain(first: int) -> list[str]:
        listed = [tasks[first]]
        for m in tasks[first + 1 :]:
            if not _LISTED.fullmatch(q.text[listed[-1].end : m.start]):
                break
            listed.append(m)
        return [m.key for m in listed]

    after = [i for i, m in enumerate(tasks) if end <= m.start <= end + 25]
    if after and len(listed := chain(after[0])) >= 2:
        return listed
    before = [i for i, m in enumerate(tasks) if start - 20 <= m.end <= start]
    for i in before:  # the list that ends right before the ratio
        first = i
        while first and _LISTED.fullmatch(q.text[tasks[first - 1].end : tasks[first].start]):
            first -= 1
        if len(listed := chain(first)) >= 2:
            return listed
    return []


def _count(word: str) -> int:
    return int(_COUNTS.get(word, word))


def _written_mixes(q: Question, task: str) -> list[tuple[int, dict[str, float]]]:
    """Every mix written, at its position: {task: share} for the tasks it names ("" for
    the tasks mixed in when the share names none: "a 3:1 mix", "mixing in 10%")."""
    found: list[tuple[int, dict[str, float]]] = []
    three_way = [(m.start(), m.end()) for m in _THREE_WAY.finditer(q.text)]
    for m in q.of("aside", "ratio"):  # the judged task first unless the tasks beside say
        if any(start <= m.start < end for start, end in three_way):
            continue  # "2:1" of "2:1:1"
        first, second = (int(g) for g in m.groups)
        beside = _tasks_beside(q, m.start, m.end)
        if len(beside) >= 2:
            found.append((m.start, {beside[0]: first, beside[1]: second}))
        else:
            found.append((m.start, {task: first, "": second}))
    for m in _THREE_WAY.finditer(q.text):
        beside = _tasks_beside(q, m.start(), m.end())
        if len(beside) == 3:
            found.append((m.start(), dict(zip(beside, (int(g) for g in m.groups()), strict=True))))
    for m in _PARTS.finditer(q.text):
        first_task = _task_at(q, m.start(2), m.start(2))
        second_task = _task_at(q, m.end(), m.end())
        if first_task is not None and first_task != second_task:
            other = second_task or (task if first_task != task else "")
            found.append((m.start(), {first_task: _count(m.group(1)), other: _count(m.group(3))}))
    for m in _ONE_IN.finditer(q.text):
        named = _task_at(q, m.end(), m.end())
        if named is not None and _count(m.group(2)) > _count(m.group(1)):
            found.append((m.start(), {named: _count(m.group(1)) / _count(m.group(2))}))
    shares: list[tuple[int, int, float]] = []  # (start, end, share) of each number
    for position, value, percent in written_numbers(q.text, q.mentions):
        share = value / 100 if percent else value
        if 0 < share < 1 and (percent or "." in q.text[position : position + 8]):
            written = re.match(r"-?[\d.]+\s*%?", q.text[position:])
            shares.append((position, position + len(written.group(0)), share))
    for m in _FRACTION.finditer(q.text):
        if m.group(1) is None and m.group(2) not in ("half",):
            continue  # "thirds" alone: no share
        share = _count(m.group(1) or "one") * _FRACTIONS[m.group(2).rstrip("s")]
        if 0 < share < 1:
            shares.append((m.start(), m.end(), share))
    group: dict[str, float] = {}
    group_at = last_end = -1
    for start, end, share in sorted(shares):
        named = _task_at(q, start, end)
        key = named if named is not None else ""
        if group and (key in group or start - last_end > 40 or key == "" or "" in group):
            found.append((group_at, group))
            group = {}
        if not group:
            group_at = start
        group[key] = share
        last_end = end
    if group:
        found.append((group_at, group))
    return sorted(found, key=lambda pair: pair[0])


def _completed(written: dict[str, float], task: str, partners: list[str]) -> dict[str, float]:
    """A written mix as a level: shares summing to 1. Parts and ratios are normalized; ""
    is the share of the tasks mixed in that the text does not name; the judged task, when
    not named, has what is left ("30% countdown": chain_sum 0.7), and the partners not
    named share the rest ("chain_sum 0.7": the partners 0.3)."""
    total = sum(written.values())
    if total > 1 + 1e-9:  # parts: "3:1", "one part X for every four of Y"
        written = {k: v / total for k, v in written.items()}
    shares = {k: v for k, v in written.items() if k}
    unnamed = written.get("", 0.0)
    if task not in shares:
        shares[task] = max(0.0, 1 - sum(shares.values()) - unnamed)
    left = 1 - sum(shares.values())
    others = [p for p in partners if p not in shares]
    if left > 1e-9 and others:
        shares.update({p: left / len(others) for p in others})
    elif sum(shares.values()) > 0:
        shares = {k: v / sum(shares.values()) for k, v in shares.items()}
    return {k: round(v, 4) for k, v in shares.items()}


def _evenly(task: str, partners: list[str], share: float) -> dict[str, float]:
    """`task` with `share` of the tasks split evenly among `partners`."""
    return {task: round(1 - share, 4), **{p: round(share / len(partners), 4) for p in partners}}


def mix_levels(q: Question, task: str, tasks: list[str]) -> tuple[list[Level], Level]:
    """The task mixes compared, the judged task alone first (the control) unless two mixes
    are set against each other."""
    partners = [t for t in tasks if t != task]
    if not partners:
        partners = [MIX_PARTNER.get(task, "arithmetic")]
        q.assumptions.append(f"no task named to mix in: {partners[0]}")
    placed: list[tuple[int, dict[str, float]]] = []
    for position, written in _written_mixes(q, task):
        mix = _completed(written, task, partners)
        mix = {t: mix[t] for t in sorted(mix, key=lambda t: t != task)}  # the judged task first
        if 0 < mix.get(task, 0.0) < 1 and all(mix != m for _, m in placed):
            placed.append((position, mix))
    if (
        len(placed) == 2
        and not re.search(r"\b(?:alone|only|by itself|on its own|unmixed|pure)\b", q.text)
        and (contrasted := contrasted_index(q.text, [p for p, _ in placed])) is not None
    ):  # "is a 90/10 split better than 50/50?": two mixes, the one compared against first
        mixes = [mix for _, mix in placed]
        control = mixes[contrasted]
        q.assumptions.append("two mixes compared: the one compared against is the control")
        return [control, *(m for m in mixes if m != control)], control
    mixes = [mix for _, mix in placed]
    if not mixes and BEST.search(q.masked):
        # "which mix of A and B is best for B?": a sweep of the share mixed in
        mixes = [_evenly(task, partners, share) for share in (0.25, 0.5)]
        q.assumptions.append(
            f"which mix is best: {task} alone (control), and {', '.join(partners)} as 25% and "
            "50% of the tasks (a sweep)"
        )
    if not mixes:
        mixes = [_evenly(task, partners, len(partners) / (len(partners) + 1))]
        q.assumptions.append(f"mixed arm: {task} and {', '.join(partners)} in equal shares")
    alone: dict[str, float] = {task: 1.0}
    levels: list[Level] = [alone, *mixes]
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
    if len(chosen) >= 3 and re.search(
        r"\b(?:beats?|outperforms?|better than)\s+(?:both|all|each|every)\b", q.text
    ):
        raise q.unreadable(
            "it asks whether one model beats each of the others: a study compares each "
            "treatment with one control. Ask one pair at a time ('does Qwen beat the 360M "
            "model?'), or 'which base model is best?'",
            how=False,
        )
    way = way_asked(q.text, q.of("factor", "base_model"))
    if q.direction == "noninferior" and re.search(r"\b(?:enough|suffic\w*)\b", q.text):
        way = "lower"  # "is 135M enough, or do we need 360M?": the larger is the control
    control = chosen[-1] if way == "lower" else chosen[0]
    q.assumptions.append(
        f"control {control}: the {'largest' if way == 'lower' else 'smallest'} model"
    )
    return [control, *(m for m in chosen if m != control)], control
