"""Names written slightly wrong: a setting's ("learnign rate", "grop size", "temprature"),
when the question names no setting otherwise, and a shipped task's ("chan_sum", "letter
countin"): one word or two, close enough (similarity 0.86) that no common word passes for
one. The reading says what it read each as.

Must not know what the names are read as beyond the catalogue's names, nor arms, budgets,
the gateway or the database.
"""

from __future__ import annotations

import difflib
import itertools
import re
from typing import Any

from researcher.planner.catalogue import TASKS
from researcher.planner.reading.mentions import scan

# settings' plain names a misspelling is matched against ("learnign rate", "grop size")
_SPELLED_SETTINGS = ("learning rate", "group size", "batch size", "weight decay", "kl penalty",
                     "kl coefficient", "clip range", "max tokens", "lora rank", "temperature",
                     "staleness")  # fmt: skip


def spelling_fixed(question: str, params: dict[str, Any] | None) -> tuple[str, str | None]:
    """`question` with a misspelt setting's name spelled right, when it names no setting
    otherwise ("does grop size 8 help?"), and the words as written; one or two words, close
    enough that no other word passes for one, never a task's name, nor a word the name holds
    whole ("the entropy coefficient" is no "kl coefficient")."""
    lower = question.lower()
    if any(m.kind in ("factor", "value", "param") for m in scan(lower, params)):
        return question, None
    words = list(re.finditer(r"[a-z][a-z_]{3,}", lower))
    spans = [(a.start(), b.end()) for a, b in itertools.pairwise(words)]
    spans += [(w.start(), w.end()) for w in words]
    tasks = [name.replace("_", " ") for name in TASKS]
    for start, end in spans:
        written = lower[start:end]
        close = difflib.get_close_matches(written, _SPELLED_SETTINGS, n=1, cutoff=0.86)
        if (
            close
            and close[0] != written
            and written not in close[0].split()
            and not difflib.get_close_matches(written.replace("_", " "), tasks, cutoff=0.86)
        ):
            return question[:start] + close[0] + question[end:], written
    return question, None


def near_task(text: str) -> tuple[str, str] | None:
    """(task, the words) of a misspelt shipped task's name in `text` ("chan_sum",
    "letter countin"): one word or two, close enough that no common word passes for one."""
    words = re.findall(r"[a-z][a-z_]{3,}", text)
    candidates = words + [f"{a} {b}" for a, b in itertools.pairwise(words)]
    names = {name.replace("_", " "): name for name in TASKS}
    for written in candidates:
        close = difflib.get_close_matches(written.replace("_", " "), names, n=1, cutoff=0.86)
        if close:
            return names[close[0]], written
    return None
