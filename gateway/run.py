"""One training run as the gateway holds it in memory while it serves.

Owns: `Run` — the run's settings, status and step, its live policies, its group buffer,
the event that wakes its training loop, and the lock that keeps one training step or
checkpoint at a time. Counters live in the database (bumped in the transaction that
changes what they count). Knows nothing about HTTP or torch.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from gateway.buffer import FinishedEpisode, GroupBuffer
from gateway.samples import served_name
from swarm.protocol import LoraSpec, RunSettings, RunStatus
from trainer.config import TrainSettings
from trainer.types import Policy

TERMINAL_STATUSES: frozenset[str] = frozenset({"stopped", "finished", "failed"})
_TRAIN_FIELDS = frozenset(TrainSettings.model_fields) & frozenset(RunSettings.model_fields)


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
    buffer: GroupBuffer = field(default_factory=GroupBuffer)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)  # one step or checkpoint at a time
    task: asyncio.Task[None] | None = None
    last_metrics: dict[tuple[str | None, str], float] = field(default_factory=dict)

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

    def model_of(self, policy: str) -> str:
        return served_name(self.name, policy)

    def policy_versions(self) -> dict[str, int]:
        return {name: policy.trainer.version for name, policy in self.policies.items()}

    def train_settings(self) -> TrainSettings:
        """The trainer's view of the current settings (read at each step: live edits apply)."""
        return TrainSettings(**self.settings.model_dump(include=set(_TRAIN_FIELDS)))

    def add_finished(self, episode: FinishedEpisode) -> None:
        """Buffer a finished episode and wake the training loop."""
        self.buffer.add(episode, self.settings.group_size)
        self.wake.set()
