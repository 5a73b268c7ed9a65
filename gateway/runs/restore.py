"""Bringing runs back: at startup, the runs an earlier gateway process left in the
database (`restore`); while serving, a run whose policy's host process died (`recover`).

Owns: `RunRestorer` — rebuilding a `Run` from its rows (settings saved by an older gateway
that no longer validate are kept as they were and the run listed as failed:
`stored_settings`), aborting the episodes it left open, rewinding it to its latest
checkpoint, rebuilding its group buffer from the finished episodes no step consumed (the
same `FinishedEpisode`s `gateway.runs.samples.finished_episode` built when they finished), and
creating its policies again. What it needs of the run manager (aborting episodes, creating
and closing policies, setting the status, starting the training loop) it asks through
`RunControl`. Knows nothing about routes or torch.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import anyio
from pydantic import ValidationError

from gateway.recording.recorder import EpisodeRecord, EpisodeRecorder
from gateway.runs.buffer import FinishedEpisode, GroupBuffer
from gateway.runs.checkpoints import restart_point
from gateway.runs.release import EndedRuns
from gateway.runs.run import PolicyPlan, Run
from gateway.runs.samples import finished_episode
from gateway.runs.store import RunStore
from swarm.protocol import LoraSpec, RunSettings

log = logging.getLogger(__name__)

RESTART_REASON = "gateway restarted"  # why episodes left open by a killed gateway end
HOST_LOST_REASON = "policy host lost"  # why episodes end when a policy's Ray actor died


def stored_settings(stored: dict) -> tuple[RunSettings, str | None]:
    """A run's settings as the database keeps them, and why they are no longer valid (None:
    valid). Invalid ones are kept as they are (listed, never trained with)."""
    try:
        return RunSettings.model_validate(stored), None
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        known = {k: v for k, v in stored.items() if k in RunSettings.model_fields}
        return RunSettings.model_construct(**known), f"stored setting {field}: {first['msg']}"


class RunControl(Protocol):
    """What restoring a run asks of the run manager."""

    async def abort_open_episodes(self, run: str, *, reason: str) -> int: ...

    async def create_policies(
        self, run: Run, resume_from_of: Callable[[str, PolicyPlan], str | None], doing: str
    ) -> bool: ...

    async def close_policies(self, run: Run, *, unregister: bool = True) -> None: ...

    async def set_status(self, run: Run, status: str, *, error: str | None = None) -> None: ...

    def start_training(self, run: Run) -> None: ...


class RunRestorer:
    def __init__(
        self,
        *,
        runs: dict[str, Run],
        stored_versions: dict[str, dict[str, int]],
        store: RunStore,
        recorder: EpisodeRecorder,
        ended: EndedRuns,
        control: RunControl,
        can_train: bool,
    ):
        self._runs = runs  # the run manager's: restored runs join it
        self._stored_versions = stored_versions
        self._store = store
        self._recorder = recorder
        self._ended = ended
        self._control = control
        self._can_train = can_train  # the gateway has a policy factory

    async def restore(self) -> None:
        """Rebuild the runs of an earlier gateway process from the database (startup).

        The runs' episodes left open are aborted ("gateway restarted"; recording-only
        episodes, of no run, stay open: their calls are all in the database). Stopped,
        finished and failed runs are listed; their policies answer again from the
        ended-policy pool where their final weights are known (`EndedRuns.serve_restored`),
        nothing loaded until asked. Each starting, running or paused run resumes from its
        restart point — the newest checkpoint with its optimizer state, else the newest
        (`gateway.runs.checkpoints.restart_point`) — (each policy from its own directory;
        the base model, or the run's
        `resume_from`, when it has none): its step is the checkpoint's, the steps after it
        are rewound (their samples are trained again, their metrics go), the group buffer
        is rebuilt from the finished episodes no step consumed, and its training loop
        restarts; a paused run stays paused. Without a policy factory, live runs are listed
        as failed here (the database keeps them for a gateway that can train)."""
        for row in await anyio.to_thread.run_sync(self._store.rows):
            if row.id in self._runs:
                continue
            await self._control.abort_open_episodes(row.id, reason=RESTART_REASON)
            policies = await anyio.to_thread.run_sync(self._store.policies, row.id)
            settings, invalid = stored_settings(row.settings)
            run = Run(
                name=row.id,
                settings=settings,
                plans={
                    p.name: PolicyPlan(
                        base_model=p.base_model,
                        lora=LoraSpec.model_validate(p.lora) if p.lora is not None else None,
                    )
                    for p in policies
                },
                created_at=row.created_at,
                resume_from=row.resume_from,
                status=row.status,  # type: ignore[arg-type]
                step=row.step,
                error=row.error,
            )
            self._runs[run.name] = run
            self._stored_versions[run.name] = {p.name: p.version for p in policies}
            await self._load_dropped_batches(run)
            if run.is_terminal:
                await self._ended.serve_restored(run, self._stored_versions[run.name])
                continue
            if invalid is not None:  # saved by an older gateway, before today's bounds
                run.status, run.error = "failed", f"not restored: {invalid}"
                log.warning("run %s: %s", run.name, run.error)
                continue
            if not self._can_train:
                run.status = "failed"
                run.error = (
                    f"not restored: this gateway has no policy factory (the run was {row.status})"
                )
                log.warning("run %s: %s", run.name, run.error)
                continue
            await self._restart(run)

    async def recover(self, run: Run, reason: str) -> None:
        """A policy's host process died: do what a gateway restart does for this run —
        stop its loop, free its other hosts, abort its open episodes ("policy host lost"),
        rewind to the latest checkpoint, rebuild the buffer from the persisted episodes and
        create the policies again from the checkpoint. A stopped, finished or failed run
        only frees its policies (it trains no more)."""
        log.warning("run %s: %s; restoring it from its latest checkpoint", run.name, reason)
        if run.task is not None and run.task is not asyncio.current_task():
            run.task.cancel()
            await asyncio.gather(run.task, return_exceptions=True)
        run.task = None
        if run.is_terminal:
            async with run.lock:
                await self._control.close_policies(run)
            return
        previous = run.status
        await self._control.set_status(run, "starting")  # new episodes wait (429) meanwhile
        await self._control.abort_open_episodes(run.name, reason=HOST_LOST_REASON)
        async with run.lock:
            await self._control.close_policies(run)
        run.buffer = GroupBuffer()
        run.status = previous  # _restart brings a paused run back paused
        await self._restart(run)

    async def _restart(self, run: Run) -> None:
        checkpoints = await anyio.to_thread.run_sync(self._store.checkpoints, run.name)
        latest = await anyio.to_thread.run_sync(restart_point, checkpoints, list(run.plans))
        step = latest.step if latest is not None else 0
        run.undone_checkpoints = {row.step for row in checkpoints if row.step > step}
        if run.undone_checkpoints:
            log.warning(
                "run %s: weights-only checkpoint(s) at step %s hold steps this restart undoes; "
                "they stay as written until the run saves at that step again", run.name,
                ", ".join(str(s) for s in sorted(run.undone_checkpoints)),
            )  # fmt: skip
        deltas = await anyio.to_thread.run_sync(self._store.rewind, run.name, step)
        run.step = step
        await self._load_dropped_batches(run)
        buffered = await anyio.to_thread.run_sync(self.buffered_episodes, run)
        for episode in buffered:
            run.buffer.add(episode, run.settings.group_size)
        log.info(
            "run %s: restarting at step %d from %s; %d sample(s) of later steps to train "
            "again; %d finished episode(s) buffered",
            run.name,
            step,
            latest.path if latest is not None else "its base model(s)",
            deltas["samples_buffered"],
            len(buffered),
        )

        def checkpoint_of(name: str, plan: PolicyPlan) -> str | None:
            return str(Path(latest.path) / name) if latest is not None else None

        if not await self._control.create_policies(run, checkpoint_of, "restoring"):
            return
        await anyio.to_thread.run_sync(
            self._store.set_policy_versions, run.name, run.policy_versions()
        )
        await self._control.set_status(run, "paused" if run.status == "paused" else "running")
        self._control.start_training(run)

    async def _load_dropped_batches(self, run: Run) -> None:
        run.batches_dropped, run.dropped_in_a_row = await anyio.to_thread.run_sync(
            self._store.dropped_batches, run.name, run.step
        )

    def buffered_episodes(self, run: Run) -> list[FinishedEpisode]:
        """The finished episodes the run's buffer held, read back from the database (off
        the event loop)."""
        return [
            finished_episode(
                EpisodeRecord.from_row(row),
                samples,
                self._recorder.get_calls(row.id),
                policies=list(run.plans),
                code_version=code_version,
            )
            for row, samples, code_version in self._store.unconsumed(run.name)
        ]
