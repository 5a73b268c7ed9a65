"""What `swarm run` prints, read back: the one-line cause of failed episodes
(`failure_cause`: "rollout raised IndexError: … at w.py:20 (task train0)") for the dry run,
the live edit and the report, and a client log's counts, causes and last reward
(`read_client_log`).

Must not know studies, the database or the gateway: it reads text.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

# what `swarm run` prints for a failed episode: "episode ep-… (task t3): rollout raised" and
# the traceback's last line, or "… rollout raised IndexError: … (again at file.py:20, …)"
_RAISED = re.compile(r"^\s*episode \S+ \(task ([^)]*)\): (.+)$", re.M)
_EXCEPTION_LINE = re.compile(r"^[\w.]+(?:Error|Exception|Exit|Interrupt|Warning)\b.*$", re.M)
_AGAIN_AT = re.compile(r"\s*\(again at (.+):(\d+), \d+ times\)")
_AT_LINE = re.compile(r'^\s*File "([^"]+)", line (\d+)', re.M)


def failure_cause(output: str) -> str | None:
    """What the episodes in `swarm run`'s output failed with, in one line: "rollout raised
    IndexError: list index out of range at w.py:20 (task train0)"; None when it names none."""
    raised = _RAISED.search(output)
    if raised is None:  # e.g. the workflow failed to import: the traceback's last frame
        last = list(_EXCEPTION_LINE.finditer(output))
        if not last:
            return None
        places = _AT_LINE.findall(output[: last[-1].start()])
        where = f" at {Path(places[-1][0]).name}:{places[-1][1]}" if places else ""
        return f"{last[-1].group(0).strip()}{where}"
    task, what = raised.group(1), raised.group(2).strip()
    if what.endswith("raised"):  # the traceback follows: its last exception line and place
        rest = output[raised.end() :]
        exception = _EXCEPTION_LINE.search(rest)
        places = _AT_LINE.findall(rest[: exception.start()] if exception else rest)
        if exception:
            what = f"{what} {exception.group(0).strip()}"
        if places:
            file, line = places[-1]
            what = f"{what} at {Path(file).name}:{line}"
    # a repeat names its place only in "(again at /path/w.py:20, 7 times)"
    what = _AGAIN_AT.sub(lambda m: f" at {Path(m.group(1)).name}:{m.group(2)}", what)
    return f"{what} (task {task})"


# a failed episode ("episode ep-… (task t3): rollout raised …"), the progress line
# ("475 done · 6.71 ep/s · reward 0.000 (last 50) · policy v0 · 159 aborted") and its last
# line ("run stopped — 321 finished, 132 aborted, mean reward (last 50) 1.960")
_FAILED_EPISODE = re.compile(r"^episode \S+ \(task [^)]*\): ", re.M)
_TASK = re.compile(r" \(task [^)]*\)$")
_PROGRESS = re.compile(r"(\d+)(?:/\d+)? done · [^\n]* · (\d+) aborted$", re.M)
_SUMMARY = re.compile(r" — (\d+) finished, (\d+) aborted")
_REWARD = re.compile(r"reward (-?\d+\.\d+|nan|-?inf) \(last (\d+)\)|"
                     r"mean reward \(last (\d+)\) (-?\d+\.\d+|nan|-?inf)")  # fmt: skip


@dataclass
class ClientLogFacts:
    """What one run's client logs say (every attempt's, added up)."""

    finished: int = 0
    aborted: int = 0
    causes: Counter[str] = field(default_factory=Counter)  # cause → episodes it ended
    examples: dict[str, str] = field(default_factory=dict)  # cause → its first line, with task
    recent_reward: float | None = None
    recent_n: int = 0


def read_client_log(text: str, facts: ClientLogFacts) -> None:
    """Add one client log's counts, causes and last reward to `facts`."""
    starts = [m.start() for m in _FAILED_EPISODE.finditer(text)]
    for start, end in zip(starts, [*starts[1:], len(text)][: len(starts)], strict=True):
        cause = failure_cause(text[start:end])
        if cause:
            key = _TASK.sub("", cause)
            facts.causes[key] += 1
            facts.examples.setdefault(key, cause)
    summary = _SUMMARY.findall(text)
    if summary:
        finished, aborted = map(int, summary[-1])
    elif progress := _PROGRESS.findall(text):
        done, aborted = map(int, progress[-1])
        finished = done - aborted
    else:
        finished, aborted = 0, len(starts)
    facts.finished += finished
    facts.aborted += aborted
    rewards = _REWARD.findall(text)
    if rewards:
        value, n, summary_n, summary_value = rewards[-1]
        facts.recent_reward, facts.recent_n = float(value or summary_value), int(n or summary_n)
