"""The batch a question fixes: episodes per training step ("at a fixed batch of 64 episodes",
"with 64 samples per step") and batches written as groups ("4 groups of 16 vs 16 groups of
4"). The total is taken out of the text before anything else is read — it is no level of
the group size — and every arm keeps it (`Reading.episodes_per_step`): group_size x
batch_groups, the one not varied or held adjusted to it.

"N groups of M" twice is read by what differs: the same total (64 either way) is the group
size at that total; the same group size is the number of groups at that group size; the
same number of groups is the group size at that number; both differing with different
totals is two settings at once, refused. One "N prompts x M samples" alone is the setup:
both settings held.

Must not know how arms get the total (`design_space.py`), nor budgets, the gateway or the
database.
"""

from __future__ import annotations

import re


class BatchRefused(ValueError):
    """The batches named cannot be read as one setting varied; the message says why."""


_UNIT = r"(?:episode|sample|completion|rollout|sequence|generation|trajector(?:y|ie))"
_UNITS = rf"{_UNIT}s?"
_PER_STEP = r"(?:per|a|each|every|in each|in every)\s+(?:training\s+|gradient\s+|optimi[sz]er\s+)?(?:step|update|batch|iteration)"

# "64 episodes per step", "a fixed batch of 64 samples", "a total of 64 rollouts per step",
# "a budget of 64 samples per step"; each with the words that lead into it, so the blanked
# text keeps its grammar ("at a fixed batch of 64 episodes, is ..." → "at , is ...")
_TOTAL = re.compile(
    r"(?:\b(?:at|with|using|under|keeping|for|given)\s+)?(?:an?\s+|the\s+)?"
    r"(?:(?:fixed|constant|same|equal|matched)\s+)?(?:total\s+)?"
    rf"(?:(?:batch(?:\s+size)?|budget|total)\s+of\s+(\d+)\s+{_UNITS}(?:\s+{_PER_STEP})?"
    rf"|(\d+)\s+(?:total\s+)?{_UNITS}\s+{_PER_STEP}"
    rf"|(\d+)-{_UNIT}\s+batch(?:es)?)"
    r"(?:\s+(?:fixed|held|constant))?"
)

_PROMPTS = r"(?:groups?|prompts?|tasks?|questions?|problems?)"
# "4 groups of 16", "16 prompts x 4 samples", "16 prompts with 4 completions each", "4 prompts
# and 8 samples per prompt" (after "and" only with the samples named)
_GROUPS = re.compile(
    rf"\b(\d+)\s+{_PROMPTS}(?:\s+(?:of|x|×|\*|with|times)\s+(\d+)(?:\s+{_UNITS}(?:\s+each)?)?"
    rf"|(?:\s+{_PER_STEP})?\s*(?:,|\band\b)\s*(\d+)\s+{_UNITS}\s+(?:each|per\s+{_PROMPTS}))\b"
)
# "4x8 (prompts x samples per prompt)": a legend saying what each side of "AxB" counts
_TIMES = r"\s*(?:x|×|\*)\s*"
_LEGEND = re.compile(
    rf"\(\s*(?:({_PROMPTS}){_TIMES}{_UNITS}|{_UNITS}{_TIMES}{_PROMPTS})(?:\s+per\s+\w+)?\s*\)"
)
# the words that name a batch before it ("at a batch of", "our batch:", "batch is")
_BATCH_LEAD = re.compile(
    r"(?:\b(?:at|with|using|under)\s+)?(?:\b(?:an?|the|our|my)\s+)?\bbatch(?:\s+size)?"
    r"(?:\s+(?:of|is|was)|\s*[:=])?\s*$"
)
# words after which a setting is held: "with", "at", "we run", "we train with"
_HELD_LEAD = re.compile(
    r"\b(?:with|at|using|under|use|uses|run|runs|train|trains|have|has)\s+(?:a\s+|an\s+)?$"
)
_PER_STEP_AFTER = re.compile(rf"(?:\s+{_PER_STEP})?")
_COMPACT = re.compile(r"(?<![\w.])(\d+)\s*(?:x|×|\*)\s*(\d+)(?![\w.])")
_GROUPS_BEFORE = re.compile(rf"\b\d+\s+{_PROMPTS}\s+(?:of|x|×|\*|with|times)\s+$")
# "16 completions for 4 prompts", "4 samples per prompt on 16 prompts": the size first
_SIZE_FIRST = re.compile(
    rf"\b(\d+)\s+{_UNITS}\s+(?:each\s+)?(?:for|on|of|from|per\s+prompt\s+(?:on|for|x))\s+"
    rf"(?:each\s+of\s+)?(\d+)\s+{_PROMPTS}\b"
)


def batch_named(text: str) -> tuple[str, int | None, list[str]]:
    """`text` without the episodes per step it fixes, that total (None: none named) and
    what the reader assumed in words. Two "N groups of M" with one product fix that total
    and stay in the text (their group sizes are the levels); any other pair is read by
    `_pairs` — one setting differs, or the question is refused."""
    said: list[str] = []
    total: int | None = None
    # "4 prompts x 8 samples per step" is a batch written as groups, not a total of 8
    found = next(
        (m for m in _TOTAL.finditer(text) if not _GROUPS_BEFORE.search(text[: m.start()])), None
    )
    if found:
        total = int(next(g for g in found.groups() if g))
        text = text[: found.start()] + " " * (found.end() - found.start()) + text[found.end() :]
        said.append(
            f"{found.group(0).strip()!r}: about {total} episodes per step for every arm "
            "(group_size x batch_groups; the one not compared or held is set to keep it)"
        )
    compact: list[tuple[int, int, re.Match[str]]] = []
    if legend := _LEGEND.search(text):
        # "4x8 vs 8x4 (prompts x samples per prompt)": each AxB a batch in the legend's order
        text = text[: legend.start()] + " " * (legend.end() - legend.start()) + text[legend.end() :]
        prompts_first = legend.group(1) is not None
        compact = [
            (int(m.group(1)), int(m.group(2)), m)
            if prompts_first
            else (int(m.group(2)), int(m.group(1)), m)
            for m in _COMPACT.finditer(text)
        ]
    pairs = sorted(
        [(int(m.group(1)), int(m.group(2) or m.group(3)), m) for m in _GROUPS.finditer(text)]
        + [(int(m.group(2)), int(m.group(1)), m) for m in _SIZE_FIRST.finditer(text)]
        + compact,
        key=lambda pair: pair[2].start(),
    )
    if len(pairs) == 1:
        # one batch written as groups is the setup the question holds ("with 4 prompts x 8
        # samples per step, does lr 5e-5 beat 2e-5?"): both its settings, said as the held
        # settings' reader reads them
        groups, size, m = pairs[0]
        words = f"{groups} prompts per step and group size {size}"
        end = m.end() + len(_PER_STEP_AFTER.match(text, m.end()).group(0))
        # "our batch: 4 prompts x 8 samples", "4 x 8: does RLOO help?": held "with" it
        lead = _BATCH_LEAD.search(text[: m.start()])
        start = lead.start() if lead else m.start()
        led = _HELD_LEAD.search(text[:start])
        text = text[:start] + ("" if led else "with ") + words + text[end:]
    if len(pairs) >= 2:
        text, paired_total, paired_said = _pairs(text, pairs)
        if paired_total is not None and total is not None and paired_total != total:
            raise BatchRefused(
                f"it fixes {total} episodes per step but compares batches of {paired_total}; "
                "name one total"
            )
        total = total or paired_total
        said.extend(paired_said)
    return text, total, said


def _pairs(
    text: str, pairs: list[tuple[int, int, re.Match[str]]]
) -> tuple[str, int | None, list[str]]:
    """Two batches written as groups: the same total → the group size at that total (the
    text kept, "groups of M" read as group sizes); the same group size → the number of
    groups ("8 groups" read as batch groups, at that group size); else refused."""
    (groups_a, size_a, a), (groups_b, size_b, b) = pairs[0], pairs[1]
    if groups_a * size_a == groups_b * size_b:
        total = groups_a * size_a
        return (
            _rewritten(text, pairs[:2], "group size", 1),
            total,
            [
                f"{a.group(0)!r} and {b.group(0)!r}: the same {total} episodes per step, so the "
                "group size is compared at that total (prompts per step follow from it)"
            ],
        )
    if size_a == size_b:
        # the number of groups varies, the shared group size held ("with group size 4")
        rewritten = _rewritten(text, pairs[:2], "batch_groups", 0)
        return f"{rewritten.rstrip('? ')} with group size {size_a}?", None, []
    if groups_a == groups_b:
        # the group size varies, the shared number of groups held ("4 prompts x 8 samples vs
        # 4 prompts x 16 samples")
        rewritten = _rewritten(text, pairs[:2], "group size", 1)
        return f"{rewritten.rstrip('? ')} with {groups_a} groups per step?", None, []
    raise BatchRefused(
        f"{a.group(0)!r} and {b.group(0)!r} change two settings at once — the group size "
        f"({size_a} vs {size_b}) and the episodes per step ({groups_a * size_a} vs "
        f"{groups_b * size_b}); compare one at a time: the group size at a fixed batch "
        f"('does 4 groups of 16 beat 16 groups of 4?'), or the number of groups at one "
        "group size ('does 8 groups of 4 beat 4 groups of 4?')"
    )


def _rewritten(
    text: str, pairs: list[tuple[int, int, re.Match[str]]], setting: str, which: int
) -> str:
    """Each pair's words replaced by the setting it varies and its level ("16 prompts x 4
    samples" → "group size 4"), padded to the same length so positions stay."""
    for pair in sorted(pairs, key=lambda p: -p[2].start()):
        m = pair[2]
        words = f"{setting} {pair[which]}"
        text = text[: m.start()] + words.ljust(m.end() - m.start()) + text[m.end() :]
    return text
