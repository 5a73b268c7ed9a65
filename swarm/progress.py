"""What `swarm run` shows while it works: a progress bar, failures as they happen, a summary.

Owns: the counters a person watches (episodes done, episodes/s, mean reward of the last 50,
policy version, aborted count) and how they are shown — a `rich.progress` bar on a
terminal, a plain line every few seconds otherwise (logs, the researcher's launcher), and
rollout tracebacks printed the moment they happen, above the bar.

Must not know about HTTP, episodes' wire types or workflows: the runner tells it numbers
and text.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Mapping

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

RECENT_REWARDS = 50


class RunProgress:
    """Counters of one `swarm run`, shown live. Use as a context manager."""

    def __init__(
        self,
        console: Console | None = None,
        *,
        total: int | None = None,
        description: str = "episodes",
        log_every_s: float = 10.0,
    ):
        self.console = console or Console(stderr=True)
        self.total = total
        self.description = description
        self.log_every_s = log_every_s
        self.finished = 0
        self.aborted = 0
        self.recent_rewards: deque[float] = deque(maxlen=RECENT_REWARDS)
        self.policy_versions: dict[str, int] = {}
        self.started_at = time.monotonic()
        self._last_logged_at = self.started_at
        self._bar: Progress | None = None
        self._bar_task: TaskID | None = None

    # -- lifecycle ----------------------------------------------------------------------

    def __enter__(self) -> RunProgress:
        self.started_at = self._last_logged_at = time.monotonic()
        if self.console.is_terminal:
            self._bar = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                TextColumn("{task.fields[counts]}"),
                TimeElapsedColumn(),
                console=self.console,
                refresh_per_second=4,
            )
            self._bar.start()
            self._bar_task = self._bar.add_task(self.description, total=self.total, counts="")
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._bar is not None:
            self._refresh()
            self._bar.stop()
            self._bar = None
        else:
            self.message(f"{self.description}: {self.counts()}")

    # -- events -------------------------------------------------------------------------

    def episode_finished(self, reward: float) -> None:
        self.finished += 1
        self.recent_rewards.append(reward)
        self._refresh()

    def episode_aborted(self) -> None:
        self.aborted += 1
        self._refresh()

    def saw_policy_versions(self, versions: Mapping[str, int]) -> None:
        for policy, version in versions.items():
            self.policy_versions[policy] = max(version, self.policy_versions.get(policy, version))

    def failure(self, text: str) -> None:
        """Print a rollout's traceback (or another failure) now, above the bar."""
        self.console.print(text.rstrip(), markup=False, highlight=False, soft_wrap=True)

    def message(self, text: str) -> None:
        self.console.print(text, markup=False, highlight=False, soft_wrap=True)

    # -- numbers ------------------------------------------------------------------------

    @property
    def done(self) -> int:
        return self.finished + self.aborted

    @property
    def episodes_per_s(self) -> float:
        elapsed = time.monotonic() - self.started_at
        return self.done / elapsed if elapsed > 0 else 0.0

    @property
    def mean_recent_reward(self) -> float | None:
        if not self.recent_rewards:
            return None
        return sum(self.recent_rewards) / len(self.recent_rewards)

    def counts(self) -> str:
        """e.g. `120/200 done · 3.1 ep/s · reward 0.42 (last 50) · policy v7 · 2 aborted`."""
        done = f"{self.done}/{self.total}" if self.total is not None else str(self.done)
        reward = self.mean_recent_reward
        reward_text = (
            "reward –"
            if reward is None
            else f"reward {reward:.3f} (last {len(self.recent_rewards)})"
        )
        return " · ".join(
            [
                f"{done} done",
                f"{self.episodes_per_s:.2f} ep/s",
                reward_text,
                f"policy {self._versions_text()}",
                f"{self.aborted} aborted",
            ]
        )

    def _versions_text(self) -> str:
        if not self.policy_versions:
            return "v?"
        if len(self.policy_versions) == 1:
            return f"v{next(iter(self.policy_versions.values()))}"
        return " ".join(
            f"{name}:v{version}" for name, version in sorted(self.policy_versions.items())
        )

    def _refresh(self) -> None:
        if self._bar is not None and self._bar_task is not None:
            self._bar.update(self._bar_task, completed=self.done, counts=self.counts())
            return
        now = time.monotonic()
        if now - self._last_logged_at >= self.log_every_s:
            self._last_logged_at = now
            self.message(f"{self.description}: {self.counts()}")
