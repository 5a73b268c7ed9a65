"""Sentences of a question: where each ends (a dot of "Dr. GRPO" or "i.e." ends none) and
which one asks (the first with "?"), so that setup around it can be told from it.

Must not know what any sentence names (settings, tasks, numbers).
"""

from __future__ import annotations

import re

# a sentence ends at . ; ! ? or : followed by a space (a decimal's dot is not)
_SENTENCE_END = re.compile(r"(?<=[.;!?])\s+(?=\S)|(?<=:)\s+(?=[^\d\s.])")

# abbreviations whose dot ends no sentence
_ABBREVIATION = re.compile(r"(?:^|[\s(])(?:dr|e\.g|i\.e|vs|etc|cf|approx|fig|no|mr|ms)\.$", re.I)


def sentences(text: str) -> list[str]:
    """`text` cut into sentences, an abbreviation's dot ("Dr. GRPO", "i.e.") no end."""
    parts: list[str] = []
    for part in _SENTENCE_END.split(text.strip()):
        if parts and _ABBREVIATION.search(parts[-1]):
            parts[-1] = f"{parts[-1]} {part}"
        elif part:
            parts.append(part)
    return parts


def asking_span(text: str) -> tuple[int, int] | None:
    """Where the asking sentence (the first with "?") lies in `text`, when `text` has more
    than one sentence; None otherwise."""
    parts = sentences(text)
    if len(parts) < 2:
        return None
    start = 0
    for part in parts:
        start = text.find(part, start)
        if "?" in part:
            return start, start + len(part)
        start += len(part)
    return None


def outside_asking(text: str, at: int) -> bool:
    """Whether position `at` of `text` lies in a sentence other than the asking one:
    setup or a remark around the question."""
    span = asking_span(text)
    return span is not None and not span[0] <= at < span[1]
