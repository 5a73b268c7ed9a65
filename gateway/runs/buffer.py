"""A run's in-memory buffer of finished episodes, grouped for GRPO/RLOO baselines.

Owns: `GroupBuffer` — finished episodes by `group_id` until a group is complete (it holds
`group_size` episodes; an episode without a group_id is a complete group of one), then
complete groups oldest first until the training loop takes a batch. An episode that joins
a group id whose group is already complete starts a new group with that id. An open group
whose first episode finished before a deadline can be closed (`close_expired`): partial
groups big enough become complete (marked `partial`), the others are handed back to be
dropped. Every sample here is also a "buffered" `SampleRow` in the database, so a restart
can rebuild the buffer. Plain Python: knows nothing about HTTP, the database, or torch.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

from gateway.runs.task_mix import family_of, select
from trainer.types import Sample


@dataclass
class BufferedSample:
    sample: Sample
    row_id: int  # the `SampleRow` it is persisted as


@dataclass
class FinishedEpisode:
    episode_id: str
    group_id: str | None
    rewards: dict[str, float]  # per policy
    samples: dict[str, list[BufferedSample]] = field(default_factory=dict)  # per policy
    metrics: dict[str, float] = field(default_factory=dict)  # as the client reported them
    drift: dict[str, int] = field(default_factory=dict)  # its chat calls per drift status
    task_family: str | None = None
    code_version: str | None = None  # its client's, when it had a client that gave one

    @property
    def sample_count(self) -> int:
        return sum(len(samples) for samples in self.samples.values())


@dataclass
class BufferedGroup:
    group_id: str
    episodes: list[FinishedEpisode]
    partial: bool = False  # closed before it held group_size episodes
    completed_at: float = field(default=0.0, compare=False)  # time.monotonic(): completed

    @property
    def family(self) -> str:
        """Its task family: its first episode's ("default" when that had none)."""
        return family_of(self.episodes[0].task_family)

    @property
    def sample_count(self) -> int:
        return sum(episode.sample_count for episode in self.episodes)


@dataclass
class _OpenGroup:
    episodes: list[FinishedEpisode]
    opened_at: float  # time.monotonic() when its first episode finished


class GroupBuffer:
    def __init__(self) -> None:
        self._open: dict[str, _OpenGroup] = {}
        self._complete: deque[BufferedGroup] = deque()

    def add(self, episode: FinishedEpisode, group_size: int, *, now: float | None = None) -> bool:
        """Buffer a finished episode; True when it completed its group."""
        at = time.monotonic() if now is None else now
        if episode.group_id is None:
            self._complete.append(BufferedGroup(episode.episode_id, [episode], completed_at=at))
            return True
        group = self._open.setdefault(episode.group_id, _OpenGroup([], at))
        group.episodes.append(episode)
        if len(group.episodes) < group_size:
            return False
        del self._open[episode.group_id]
        self._complete.append(BufferedGroup(episode.group_id, group.episodes, completed_at=at))
        return True

    @property
    def complete_groups(self) -> int:
        return len(self._complete)

    @property
    def open_groups(self) -> int:
        return len(self._open)

    def oldest_open_at(self) -> float | None:
        """When the first episode of the oldest open group finished (None: no open group)."""
        return min((group.opened_at for group in self._open.values()), default=None)

    def close_expired(self, opened_before: float, min_size: int | None) -> list[BufferedGroup]:
        """Close every open group opened before `opened_before`: one holding at least
        `min_size` episodes becomes a complete partial group (None: none does); the others
        are removed and returned, for the caller to drop."""
        expired = [gid for gid, group in self._open.items() if group.opened_at < opened_before]
        dropped = []
        now = time.monotonic()
        for group_id in expired:
            episodes = self._open.pop(group_id).episodes
            group = BufferedGroup(group_id, episodes, partial=True, completed_at=now)
            if min_size is not None and len(group.episodes) >= min_size:
                self._complete.append(group)
            else:
                dropped.append(group)
        return dropped

    def take(self, count: int) -> list[BufferedGroup]:
        """The `count` oldest complete groups (fewer if fewer are complete), removed."""
        return [self._complete.popleft() for _ in range(min(count, len(self._complete)))]

    def take_by_family(self, want: Mapping[str, int], count: int) -> list[BufferedGroup]:
        """At most `count` complete groups, removed: each family's oldest `want[family]`,
        then the oldest others when a family has fewer (oldest first in the batch)."""
        groups = list(self._complete)
        chosen = select([group.family for group in groups], want, count)
        picked = set(chosen)
        self._complete = deque(group for i, group in enumerate(groups) if i not in picked)
        return [groups[i] for i in chosen]

    def complete_by_family(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for group in self._complete:
            counts[group.family] = counts.get(group.family, 0) + 1
        return counts

    def oldest_complete_at(self) -> float | None:
        """When the oldest complete group became complete (None: none is)."""
        return min((group.completed_at for group in self._complete), default=None)

    def open_group_keys(self) -> dict[str, str]:
        """Open group id → its task family."""
        return {gid: family_of(g.episodes[0].task_family) for gid, g in self._open.items()}

    def episodes(self) -> int:
        complete = sum(len(group.episodes) for group in self._complete)
        return complete + sum(len(group.episodes) for group in self._open.values())
