"""Checkpoints of runs: where they are written, saving them, and which are kept.

Owns: `RunCheckpoints` — every policy of a run saved under
`<state_dir>/runs/<run>/checkpoints/step-<n>/<policy>` (a run or policy name never chooses
a path outside the runs directory), under the run's lock; a second request at the same
step answers the first checkpoint (written again with the optimizer state when the first
had none and this one asks for it, and whole when a restart undid the step it held). For a single-policy run the step directory also holds
relative symlinks to every entry of its policy's directory, so the step directory itself
is that policy's checkpoint (`from_pretrained(path)`, `resume_from`) while
`step-<n>/<policy>` stays what every reader (restore, the ended-policy pool) opens. One that
would not fit on the disk is not written (never half of one) and pauses the run, why in
its `error`. Retention per the run's `keep_checkpoints` (the newest N and the best by
reward/mean; only the `restart_point` — the newest resumable one — keeps the optimizer
state a restart needs, and none once the run ended). Status changes go through the run manager's `set_status`; knows nothing about
routes or torch.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from experiments_db.models import CheckpointRow
from gateway.errors import CheckpointNotFound, Conflict, InsufficientStorage, Unprocessable
from gateway.runs.run import Run
from gateway.runs.store import RunStore
from gateway.settings import GatewaySettings
from swarm.protocol import CheckpointPublic
from trainer.errors import InsufficientDisk
from trainer.types import OPTIMIZER_FILE, RESUME_FILES

log = logging.getLogger(__name__)

SetStatus = Callable[..., Awaitable[None]]  # RunManager.set_status(run, status, *, error=)


def checkpoint_public(row: CheckpointRow, policies: list[str]) -> CheckpointPublic:
    """The wire form of a checkpoint row of a run with these policies (reads the disk:
    call it off the event loop)."""
    directory = Path(row.path)
    paths = {name: str(directory / name) for name in policies}
    return CheckpointPublic(
        step=row.step,
        path=row.path,
        created_at=row.created_at,
        policies=paths,
        optimizer=bool(paths) and all(Path(p, OPTIMIZER_FILE).is_file() for p in paths.values()),
    )


def restart_point(rows: list[CheckpointRow], policies: list[str]) -> CheckpointRow | None:
    """The checkpoint a restart resumes from: the newest one every policy of which still has
    its optimizer state (it continues exactly), else the newest (a fresh optimizer from its
    weights); None without any. A weights-only checkpoint asked for on a live run
    (`{"optimizer": false}`) is never the restart point while a resumable one is kept.
    Reads the disk: call it off the event loop."""
    for row in reversed(rows):
        if checkpoint_public(row, policies).optimizer:
            return row
    return rows[-1] if rows else None


def link_policy_into_step(directory: Path, policy: str) -> None:
    """Relative symlinks `directory/<entry>` → `<policy>/<entry>` for every entry of the
    policy's checkpoint (a name the step directory already holds otherwise is skipped)."""
    for entry in (directory / policy).iterdir():
        link = directory / entry.name
        target = Path(policy) / entry.name
        if link.is_symlink():
            if Path(os.readlink(link)) == target:
                continue
            link.unlink()
        elif link.exists():
            log.warning("%s exists: not linked to %s", link, target)
            continue
        link.symlink_to(target, target_is_directory=entry.is_dir())


def released(run: Run) -> bool:
    """The run's training state was freed (it ended): nothing more to train or save."""
    return any(getattr(policy.trainer, "released", False) for policy in run.policies.values())


class RunCheckpoints:
    def __init__(self, *, settings: GatewaySettings, store: RunStore, set_status: SetStatus):
        self._settings = settings
        self._store = store
        self._set_status = set_status

    def directory(self, run: Run, step: int) -> Path:
        return self._contained(self._settings.runs_dir / run.name / "checkpoints" / f"step-{step}")

    def keep(self, run: Run) -> int:
        """How many checkpoints the run keeps besides its best (0: all, whole)."""
        keep = run.settings.keep_checkpoints
        return self._settings.keep_checkpoints if keep is None else keep

    async def checkpoint(self, run: Run, *, resumable: bool = True) -> CheckpointPublic | None:
        """Save every policy under `<state_dir>/runs/<run>/checkpoints/step-<n>/<policy>`
        (`resumable`: with the optimizer state a restart needs); a second request at the
        same step returns the first checkpoint. Older ones go per `keep_checkpoints`. None
        when the disk lacks room (nothing written, the run paused, why in its `error`) or
        when the run ended and its training state is gone."""
        if not run.ready:
            raise Conflict(f"Run {run.name!r} has no policies to save.", code="run_not_live")
        async with run.lock:
            return await self.save(run, resumable=resumable)

    async def on_request(self, run: Run, *, optimizer: bool = True) -> CheckpointPublic:
        """A checkpoint asked for (`POST /runs/{id}/checkpoints`; `optimizer` false: weights
        only): a 409 when the run ended (its training state is gone), a 507 when the disk
        lacks room."""
        saved = await self.checkpoint(run, resumable=optimizer)
        if saved is not None:
            return saved
        if released(run):
            raise Conflict(
                f"Run {run.name!r} is {run.status}; its training state was freed, so it has "
                "no new checkpoint to save (GET /runs/{id}/checkpoints lists the kept ones).",
                code="run_not_live",
            )
        raise InsufficientStorage(run.error or "not enough disk space for a checkpoint")

    async def save(
        self, run: Run, *, resumable: bool, pause_on_full_disk: bool = True
    ) -> CheckpointPublic | None:
        """`checkpoint`'s body, under the run lock; without `pause_on_full_disk` a disk
        without room raises `InsufficientDisk` (nothing written) instead of pausing."""
        if released(run):
            log.info("run %s: no checkpoint: the run ended (training state freed)", run.name)
            return None
        step = run.step
        row = await anyio.to_thread.run_sync(self._store.checkpoint, run.name, step)
        if (
            row is None
            or step in run.undone_checkpoints
            or (resumable and not await self._resumable(row, run))
        ):
            directory = self.directory(run, step)
            targets = {name: self._policy_dir(directory, name) for name in run.policies}
            try:
                for name, policy in run.policies.items():
                    if resumable:
                        await policy.trainer.save_checkpoint(str(targets[name]))
                    else:
                        await policy.trainer.save_checkpoint(str(targets[name]), resumable=False)
            except InsufficientDisk as error:
                if row is None:
                    # policies saved before this one make no checkpoint: never half of one
                    await anyio.to_thread.run_sync(
                        lambda: shutil.rmtree(directory, ignore_errors=True)
                    )
                if not pause_on_full_disk:
                    raise
                await self._pause_for_disk(run, step, error)
                return None
            if len(targets) == 1:  # the step directory is that policy's checkpoint too
                (only_policy,) = targets
                await anyio.to_thread.run_sync(link_policy_into_step, directory, only_policy)
            if row is None:
                row = await anyio.to_thread.run_sync(
                    self._store.add_checkpoint, run.name, step, str(directory)
                )
            run.undone_checkpoints.discard(step)
            log.info(
                "run %s: checkpoint at step %d in %s%s", run.name, step, directory,
                "" if resumable else " (weights only)",
            )  # fmt: skip
            await anyio.to_thread.run_sync(self.retain, run, False)
        return await anyio.to_thread.run_sync(checkpoint_public, row, list(run.plans))

    async def _resumable(self, row: CheckpointRow, run: Run) -> bool:
        public = await anyio.to_thread.run_sync(checkpoint_public, row, list(run.plans))
        return public.optimizer

    async def _pause_for_disk(self, run: Run, step: int, error: InsufficientDisk) -> None:
        why = (
            f"checkpoint at step {step} not written: {error}; the run is paused: free disk "
            "space, then resume it"
        )
        log.error("run %s: %s", run.name, why)
        await anyio.to_thread.run_sync(
            lambda: self._store.add_metrics(
                run.name,
                step,
                {
                    "checkpoint/disk_needed_bytes": error.needed,
                    "checkpoint/disk_free_bytes": error.free,
                },
            )
        )
        status = "paused" if run.status in ("running", "paused") else run.status
        await self._set_status(run, status, error=why)

    def retain(self, run: Run, ended: bool) -> None:
        """Keep the newest `keep_checkpoints` and the best by reward/mean (rows first, then
        directories: a row never names a missing checkpoint), and, while the run lives, its
        `restart_point`; the optimizer state and masters (`RESUME_FILES`) stay in that one
        only, and in none once the run ended. `keep_checkpoints` 0 keeps everything as
        written."""
        keep = self.keep(run)
        rows = self._store.checkpoints(run.name) if keep else []
        if not rows:
            return  # keep 0: every checkpoint stays whole
        restart = restart_point(rows, list(run.plans))
        kept_steps = {r.step for r in rows[-keep:]}
        if not ended and restart is not None:
            kept_steps.add(restart.step)  # kept whole, however many came after it
        scores = self._store.step_scores(run.name, [r.step for r in rows])
        if scores:
            kept_steps.add(max(scores, key=lambda step: (scores[step], step)))
        dropped = [r for r in rows if r.step not in kept_steps]
        if dropped:
            self._store.delete_checkpoints(run.name, [r.step for r in dropped])
            for row in dropped:
                if (path := self._inside(row.path)) is not None:
                    shutil.rmtree(path, ignore_errors=True)
            log.info(
                "run %s: removed checkpoint(s) at step %s (keeping %s)",
                run.name,
                ", ".join(str(r.step) for r in dropped),
                ", ".join(str(step) for step in sorted(kept_steps)),
            )
        for row in rows:
            if row.step in kept_steps and (ended or row is not restart):
                if (path := self._inside(row.path)) is not None:
                    for name in RESUME_FILES:  # the policies' files, then the links to them
                        for resume_file in [*path.glob(f"*/{name}"), path / name]:
                            if resume_file.is_file() or resume_file.is_symlink():
                                resume_file.unlink(missing_ok=True)

    async def delete(self, run: Run, step: int) -> Path | None:
        """Delete `run`'s checkpoint at `step`: its row, then its files; the directory it was
        in (None when it lay outside the runs directory: its files are left alone)."""
        row = await anyio.to_thread.run_sync(self._store.checkpoint, run.name, step)
        if row is None:
            raise CheckpointNotFound(f"Run {run.name!r} has no checkpoint at step {step}.")
        path = self._inside(row.path)
        await anyio.to_thread.run_sync(self._store.delete_checkpoints, run.name, [step])
        if path is not None:
            await anyio.to_thread.run_sync(lambda: shutil.rmtree(path, ignore_errors=True))
        log.info("run %s: checkpoint at step %d deleted on request", run.name, step)
        return path

    def _contained(self, path: Path | str) -> Path:
        """`path` resolved; an error unless it lies inside the runs directory (a run or
        policy name must never choose where files are written or deleted)."""
        root = self._settings.runs_dir.resolve()
        resolved = Path(path).resolve()
        if not resolved.is_relative_to(root) or resolved == root:
            raise Unprocessable(
                f"checkpoint path {str(path)!r} lies outside the state directory ({root}); "
                "nothing was written",
                param="policies",
                code="path_outside_state_dir",
            )
        return resolved

    def _policy_dir(self, directory: Path, policy: str) -> Path:
        target = self._contained(directory / policy)
        if target.parent != directory:
            raise Unprocessable(
                f"policy name {policy!r} is not a single path component; nothing was written",
                param="policies",
                code="path_outside_state_dir",
            )
        return target

    def _inside(self, path: str) -> Path | None:
        """A stored checkpoint path, resolved, when it lies in the runs directory; else None
        (logged): files outside it are never deleted (e.g. after the state dir moved)."""
        try:
            return self._contained(path)
        except Unprocessable:
            log.warning("checkpoint %s lies outside %s: its files are left alone", path,
                        self._settings.runs_dir)  # fmt: skip
            return None
