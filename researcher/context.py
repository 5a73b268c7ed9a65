"""What every node of the study graph may use: the runtime context (LangGraph `Runtime`).

Owns: `StudyContext` — settings (`parallel_runs` resolved to a number: researcher/
concurrency.py), the study's folder, the database, the gateway client, the planner and the
launcher (the study's `settings.launcher`; `launcher_for` finds the one that
started a recorded client) — and the two things every node does with them: record an event
(database + console) and account the budget (wall time while the researcher runs; time
while it was dead or paused is not spent). Built once per `researcher start/resume`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from sqlalchemy.engine import Engine
from sqlmodel import Session

from experiments_db import crud
from experiments_db.db import session_scope
from experiments_db.studies import StudyRow
from researcher.concurrency import ParallelRuns, with_resolved_parallel_runs
from researcher.gateway_api import GatewayAPI
from researcher.launcher import ClientLimits, ClientRecord, Launcher, LocalLauncher, make_launcher
from researcher.planner.base import Planner
from researcher.settings import StudySettings, format_duration


def client_limits(settings: StudySettings) -> ClientLimits:
    memory = settings.client_memory_mb
    return ClientLimits(
        cpu_s=settings.client_cpu_s,
        memory_bytes=None if memory is None else memory << 20,
        processes=settings.client_processes,
    )


@dataclass
class StudyContext:
    study_id: str
    settings: StudySettings
    directory: Path
    db: Engine
    gateway: GatewayAPI
    planner: Planner
    launcher: Launcher = field(default_factory=LocalLauncher)
    console: Console = field(default_factory=lambda: Console(stderr=True))
    step_seconds: float = 12.0  # the planner's estimate of one training step
    poll_s: float = 2.0
    _last_tick: float = field(default_factory=time.monotonic)
    _other_launchers: dict[str, Launcher] = field(default_factory=dict)
    parallel_runs: ParallelRuns = field(init=False)  # how many runs train at once, and why

    def __post_init__(self) -> None:
        # launch and monitor read settings.parallel_runs as a number: "auto" is asked of
        # the gateway here, once per context (researcher start / resume)
        self.settings, self.parallel_runs = with_resolved_parallel_runs(self.settings, self.gateway)

    def launcher_for(self, client: ClientRecord) -> Launcher:
        """The launcher that started `client` (a `client_process` row names it)."""
        kind = getattr(client, "launcher", self.launcher.name)
        if kind == self.launcher.name:
            return self.launcher
        if kind not in self._other_launchers:
            self._other_launchers[kind] = make_launcher(
                kind, ray_address=self.settings.ray_address, limits=self.client_limits,
                allow_env=tuple(self.settings.client_env_allow),
            )  # fmt: skip
        return self._other_launchers[kind]

    @property
    def client_limits(self) -> ClientLimits:
        return client_limits(self.settings)

    def client_dir(self, name: str) -> Path:
        """The working directory and HOME of a client (its scratch folder, nothing else)."""
        return self.directory / "clients" / name

    @contextmanager
    def session(self) -> Iterator[Session]:
        with session_scope(self.db) as session:
            yield session

    def study(self) -> StudyRow:
        with self.session() as session:
            study = crud.get_study(session, study_id=self.study_id)
        assert study is not None, self.study_id
        return study

    def event(
        self,
        phase: str,
        kind: str,
        message: str,
        *,
        reason: str | None = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        with self.session() as session:
            crud.add_event(
                session,
                study_id=self.study_id,
                phase=phase,
                kind=kind,
                message=message,
                reason=reason,
                data=data,
            )
        # the budget used up to now (the study's count stops at the node's last tick)
        used = self.study().budget_used_s + time.monotonic() - self._last_tick
        style = {"error": "red", "problem": "yellow", "result": "green"}.get(kind, "cyan")
        self.console.print(
            f"[dim]{format_duration(used)}[/dim] [{style}]{phase:>10}[/{style}] {message}"
            + (f" [dim]({reason})[/dim]" if reason else "")
        )

    def tick(self, phase: str | None = None, **fields: Any) -> float:
        """Add the wall time since the last tick to the budget used; set `phase` and
        `fields` on the study. Returns the budget used."""
        now = time.monotonic()
        spent, self._last_tick = now - self._last_tick, now
        with self.session() as session:
            study = crud.get_study(session, study_id=self.study_id)
            assert study is not None
            changes: dict[str, Any] = {"budget_used_s": study.budget_used_s + spent, **fields}
            if phase is not None:
                changes["phase"] = phase
            study = crud.update_study(session, study_id=self.study_id, **changes)
        return study.budget_used_s

    def restart_clock(self) -> None:
        """Forget the time since the last tick (the researcher was dead or paused)."""
        self._last_tick = time.monotonic()

    def budget_left(self) -> float:
        study = self.study()
        return study.budget_s - study.budget_used_s
