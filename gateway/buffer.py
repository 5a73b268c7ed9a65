"""A run's in-memory buffer of finished episodes, grouped for GRPO/RLOO baselines.

Owns: `GroupBuffer` — finished episodes by `group_id` until a group is complete (it holds
`group_size` episodes; an episode without a group_id is a complete group of one), then
complete groups oldest first until the training loop takes a batch. An episode that joins
a group id whose group is already complete starts a new group with that id. Every sample
here is also a "buffered" `SampleRow` in the database, so a restart can rebuild the buffer.
Plain Python: knows nothing about HTTP, the database, or torch.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

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

    @property
    def sample_count(self) -> int:
        return sum(len(samples) for samples in self.samples.values())


@dataclass
class BufferedGroup:
    group_id: str
    episodes: list[FinishedEpisode]


class GroupBuffer:
    def __init__(self) -> None:
        self._open: dict[str, list[FinishedEpisode]] = {}
        self._complete: deque[BufferedGroup] = deque()

    def add(self, episode: FinishedEpisode, group_size: int) -> bool:
        """Buffer a finished episode; True when it completed its group."""
        if episode.group_id is None:
            self._complete.append(BufferedGroup(episode.episode_id, [episode]))
            return True
        members = self._open.setdefault(episode.group_id, [])
        members.append(episode)
        if len(members) < group_size:
            return False
        del self._open[episode.group_id]
        self._complete.append(BufferedGroup(episode.group_id, members))
        return True

    @property
    def complete_groups(self) -> int:
        return len(self._complete)

    @property
    def open_groups(self) -> int:
        return len(self._open)

    def take(self, count: int) -> list[BufferedGroup]:
        """The `count` oldest complete groups (fewer if fewer are complete), removed."""
        return [self._complete.popleft() for _ in range(min(count, len(self._complete)))]

    def episodes(self) -> int:
        groups = [*self._complete, *(BufferedGroup(g, m) for g, m in self._open.items())]
        return sum(len(group.episodes) for group in groups)
