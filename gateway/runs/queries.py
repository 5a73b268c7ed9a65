"""The read side of run control: what `GET /runs…` answers.

Owns: `RunQueries` — the runs of this gateway process looked up by name (an unknown one is
a 404 `run_not_found`), a run's public view (`RunPublic`: status, step, settings, its
policies and their versions, the counters its database row keeps), its kept checkpoints,
its metrics and a page of its episodes. Changes nothing, in memory or in the database.
Knows nothing about routes or torch.
"""

from __future__ import annotations

from collections.abc import Mapping

import anyio

from experiments_db.models import RunRow
from gateway.errors import RunNotFound
from gateway.recording.recorder import EpisodeRecorder
from gateway.runs.checkpoints import checkpoint_public
from gateway.runs.run import Run
from gateway.runs.store import RunStore
from swarm.protocol import (
    CheckpointPublic,
    EpisodeSummary,
    MetricPoint,
    PolicyPublic,
    RunCounters,
    RunPublic,
)


class RunQueries:
    def __init__(
        self,
        *,
        runs: Mapping[str, Run],
        stored_versions: Mapping[str, Mapping[str, int]],
        store: RunStore,
        recorder: EpisodeRecorder,
    ):
        self._runs = runs  # the run manager's, read live
        self._stored_versions = stored_versions  # restored runs whose policies are not loaded
        self._store = store
        self._recorder = recorder

    def find(self, name: str) -> Run | None:
        return self._runs.get(name)

    def get(self, name: str) -> Run:
        run = self._runs.get(name)
        if run is None:
            raise RunNotFound(f"No run named {name!r}.", param="run")
        return run

    def runs(self) -> list[Run]:
        return list(self._runs.values())

    async def public(self, name: str) -> RunPublic:
        run = self.get(name)
        row = await anyio.to_thread.run_sync(self._store.row, name)
        return self._public(run, row)

    async def list_public(self) -> list[RunPublic]:
        rows = {row.id: row for row in await anyio.to_thread.run_sync(self._store.rows)}
        return [self._public(run, rows.get(run.name)) for run in list(self._runs.values())]

    def _public(self, run: Run, row: RunRow | None) -> RunPublic:
        counters = RunCounters.model_validate(row, from_attributes=True) if row else RunCounters()
        versions = run.policy_versions() or self._stored_versions.get(run.name, {})
        return RunPublic(
            id=run.name,
            name=run.name,
            status=run.status,
            step=run.step,
            settings=run.settings,
            policies={
                name: PolicyPublic(
                    name=name,
                    model=run.model_of(name),
                    base_model=plan.base_model,
                    lora=plan.lora,
                    version=versions.get(name, 0),
                )
                for name, plan in run.plans.items()
            },
            created_at=run.created_at,
            error=run.error,
            batches_dropped=dict(run.batches_dropped),
            batches_dropped_in_a_row=sum(run.dropped_in_a_row.values()),
            **counters.model_dump(),
        )

    async def checkpoints(self, name: str) -> list[CheckpointPublic]:
        policies = list(self.get(name).plans)
        rows = await anyio.to_thread.run_sync(self._store.checkpoints, name)
        return await anyio.to_thread.run_sync(
            lambda: [checkpoint_public(row, policies) for row in rows]
        )

    async def metrics(
        self, name: str, *, since: int | None, metric: str | None = None
    ) -> list[MetricPoint]:
        self.get(name)
        rows = await anyio.to_thread.run_sync(
            lambda: self._store.metrics(name, since_step=since, name=metric)
        )
        return [
            MetricPoint(step=r.step, name=r.name, value=r.value, time=r.time, policy=r.policy)
            for r in rows
        ]

    async def episodes(
        self,
        name: str,
        *,
        status: str | None,
        limit: int,
        offset: int,
        group_id: str | None = None,
    ) -> list[EpisodeSummary]:
        """A page of the run's episodes, newest first (the recorder owns them)."""
        self.get(name)
        records = await anyio.to_thread.run_sync(
            lambda: self._recorder.list_episodes(
                run=name, status=status, group_id=group_id, limit=limit, offset=offset
            )
        )
        return [EpisodeSummary.model_validate(r, from_attributes=True) for r in records]
