"""One training run as the gateway holds it in memory while it serves.

Owns: `Run` — the run's settings, status and step (its optimizer updates), the batches
that trained nothing (by reason, and the current streak of them), its live policies, its group buffer,
its open (in-flight) episodes by task family and group, the effective task mix at the
current step, the event that wakes its training loop, and the lock that keeps one
training step or checkpoint at a time. Counters live in the database (bumped in the transaction that
changes what they count). Knows nothing about HTTP or torch.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from gateway.runs.buffer import FinishedEpisode, GroupBuffer
from gateway.runs.samples import served_name
from gateway.runs.task_mix import effective_mix
from swarm.protocol import LoraSpec, RunSettings, RunStatus
from trainer.config import TrainSettings
from trainer.types import Policy

TERMINAL_STATUSES: frozenset[str] = frozenset({"stopped", "finished", "failed"})


@dataclass(frozen=True)
class PolicyPlan:
    """What a policy is built from (resolved: `base_model` is never None)."""

    base_model: str
    lora: LoraSpec | None = None

    def lora_dict(self) -> dict[str, Any] | None:
        return self.lora.model_dump() if self.lora is not None else None


@dataclass
class Run:
    name: str
    settings: RunSettings
    plans: dict[str, PolicyPlan]  # in creation order; the first is the default policy
    created_at: float
    resume_from: str | None = None
    status: RunStatus = "starting"
    step: int = 0
    error: str | None = None
    policies: dict[str, Policy] = field(default_factory=dict)
    # policy → (what it was built from: a checkpoint dir or a model name, its version then)
    built_from: dict[str, tuple[str, int]] = field(default_factory=dict)
    buffer: GroupBuffer = field(default_factory=GroupBuffer)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)  # one step or checkpoint at a time
    task: asyncio.Task[None] | None = None
    watcher: asyncio.Task[None] | None = None  # awaits a remote policy host's death
    last_metrics: dict[tuple[str | None, str], float] = field(default_factory=dict)
    # batches no policy trained a sample from (no step), by reason: all, and since the last step
    batches_dropped: dict[str, int] = field(default_factory=dict)
    dropped_in_a_row: dict[str, int] = field(default_factory=dict)
    # open episode id (or a reservation while one is created) → (task family, group key)
    in_flight: dict[str, tuple[str, str]] = field(default_factory=dict)
    # steps of checkpoints newer than the one a restart resumed from (weights-only ones):
    # what they hold was undone, so a checkpoint asked for at such a step is written again
    undone_checkpoints: set[int] = field(default_factory=set)
    _mix_set: tuple[object, object] | None = field(default=None, repr=False)
    _mix_since: int = field(default=0, repr=False)  # the step task_mix/schedule were set at

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @property
    def ready(self) -> bool:
        """All policies were created (the run can serve, train and checkpoint)."""
        return bool(self.policies) and len(self.policies) == len(self.plans)

    @property
    def max_steps_reached(self) -> bool:
        return self.settings.max_steps is not None and self.step >= self.settings.max_steps

    @property
    def no_learning_signal(self) -> str | None:
        """Why the run should stop, once `max_dropped_batches` batches in a row trained
        nothing ("no learning signal: 50 consecutive batches trained nothing
        (zero_variance 50)"); None until then."""
        limit = self.settings.max_dropped_batches
        in_a_row = sum(self.dropped_in_a_row.values())
        if limit is None or in_a_row < limit:
            return None
        reasons = ", ".join(f"{r} {n}" for r, n in sorted(self.dropped_in_a_row.items()))
        return f"no learning signal: {in_a_row} consecutive batches trained nothing ({reasons})"

    def model_of(self, policy: str) -> str:
        return served_name(self.name, policy)

    def policy_versions(self) -> dict[str, int]:
        return {name: policy.trainer.version for name, policy in self.policies.items()}

    def train_settings(self) -> TrainSettings:
        """The trainer's view of the current settings (read at each step: live edits apply):
        the fields of `TrainSettings`, every one a run setting (declared once, in
        `RunSettings`)."""
        return TrainSettings.model_validate(self.settings, from_attributes=True)

    def effective_task_mix(self) -> dict[str, float] | None:
        """The task mix at the current step: `task_mix`, moved along `task_mix_schedule`
        by the steps taken since either was last set (None: no mix)."""
        settings = self.settings
        if settings.task_mix is None:
            return None
        key = (settings.task_mix, settings.task_mix_schedule)
        if key != self._mix_set:
            self._mix_set, self._mix_since = key, self.step
        schedule = settings.task_mix_schedule
        if schedule is None:
            return dict(settings.task_mix)
        return effective_mix(
            settings.task_mix, schedule.to, schedule.steps, self.step - self._mix_since
        )

    def groups_held(self) -> tuple[int, dict[str, int], set[str]]:
        """(all groups, groups per family, open group keys): complete and open groups in
        the buffer, and the groups of open episodes not yet in it."""
        per_family = self.buffer.complete_by_family()
        open_groups = self.buffer.open_group_keys()
        for family, key in list(self.in_flight.values()):
            open_groups.setdefault(key, family)
        for family in open_groups.values():
            per_family[family] = per_family.get(family, 0) + 1
        return sum(per_family.values()), per_family, set(open_groups)

    def add_finished(self, episode: FinishedEpisode) -> None:
        """Buffer a finished episode and wake the training loop."""
        self.buffer.add(episode, self.settings.group_size)
        self.wake.set()
