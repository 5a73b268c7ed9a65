"""`swarm run --watch`: restart the workflow with its new code when its files change.

Owns: watching a workflow's sources (the file, the `.py` files beside it, and the modules it
imported from under its folder) by polling their mtimes and sizes; reloading it (the user's
modules evicted from `sys.modules` first, and put back when the new code does not load);
and `WatchedRun`, which runs one `WorkflowRunner` per code version. An edit that loads stops
the old runner as Ctrl-C would (its open episodes aborted with "workflow changed …", its
client deregistered), then registers a new client with the new `code_version` and goes on.
An edit that does not load is printed and the old code keeps running; so does a touch, or
a new file the workflow does not import. A workflow error at run time (`tasks()` raising)
waits for the next edit instead of ending the process.

Must not know about argument parsing or signals (`swarm.cli`), nor how episodes are run
(`swarm.runner`) or requests sent (`swarm.client`).
"""

from __future__ import annotations

import asyncio
import importlib
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import ModuleType

from rich.console import Console

from swarm.client import SwarmClient
from swarm.errors import WorkflowError
from swarm.progress import RunProgress
from swarm.runner import Outcome, RunnerSettings, RunSummary, WorkflowRunner
from swarm.workflow import (
    Workflow,
    load_workflow,
    local_modules,
    source_version,
    workflow_module_name,
)

DEFAULT_POLL_S = 0.5

Stat = tuple[int, int] | None  # (mtime_ns, size); None: the file is missing


class WorkflowSources:
    """The files a loaded workflow is made of, polled for changes, and its reloading."""

    def __init__(self, workflow: Workflow):
        self.path = workflow.path
        self.directory = workflow.path.parent
        self.helper_files = workflow.helper_files
        self.also_watched: set[Path] = set()  # touched by an attempt that did not load
        self._stats = self._stat_all()

    def watched_files(self) -> set[Path]:
        files = {self.path, *self.helper_files, *self.also_watched}
        files.update(self.directory.glob("*.py"))
        return files

    def changed(self) -> bool:
        """Whether any watched file was written, created or removed since the last call."""
        stats = self._stat_all()
        if stats == self._stats:
            return False
        self._stats = stats
        return True

    def version_now(self) -> str:
        """The code version the files on disk would load as (with the known helpers)."""
        return source_version(self.path, self.helper_files)

    def load(self) -> Workflow:
        """Import the workflow afresh, its helper modules too. Raises `WorkflowError` and
        leaves `sys.modules` as it was when the new code does not load."""
        importlib.invalidate_caches()
        workflow_name = workflow_module_name(self.path)
        saved: dict[str, ModuleType] = local_modules(self.directory)
        if workflow_name in sys.modules:
            saved[workflow_name] = sys.modules[workflow_name]
        for name in saved:
            del sys.modules[name]
        try:
            workflow = load_workflow(self.path)
        except WorkflowError:
            tried = local_modules(self.directory)
            self.also_watched.update(_module_file(m) for m in tried.values())
            for name in tried:
                del sys.modules[name]
            sys.modules.update(saved)
            self._stats = self._stat_all()  # with those files: no change to report yet
            raise
        self.helper_files = workflow.helper_files
        self.also_watched.clear()
        self._stats = self._stat_all()
        return workflow

    def _stat_all(self) -> dict[Path, Stat]:
        return {path: _stat(path) for path in self.watched_files()}


def _stat(path: Path) -> Stat:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


def _module_file(module: ModuleType) -> Path:
    return Path(module.__file__ or "").resolve()


class WatchedRun:
    """Runs a workflow like `WorkflowRunner`, restarting it whenever its code changes.

    `make_client(workflow)` builds the (unregistered) client of each code version; one
    `RunProgress` per code version shows on `console`. `--max-episodes` counts over all of
    them, as do the summary's finished and aborted counts.
    """

    def __init__(
        self,
        workflow: Workflow,
        settings: RunnerSettings,
        make_client: Callable[[Workflow], SwarmClient],
        console: Console,
        *,
        poll_s: float = DEFAULT_POLL_S,
    ):
        self.workflow = workflow
        self.settings = settings
        self.make_client = make_client
        self.console = console
        self.poll_s = poll_s
        self.reloads = 0
        self._runner: WorkflowRunner | None = None
        self._stopped: tuple[Outcome, str] | None = None
        self._stopping = asyncio.Event()

    def stop(self, outcome: Outcome, message: str) -> None:
        """End the run (a signal): the current runner stops cleanly, no restart follows."""
        if self._stopped is None:
            self._stopped = (outcome, message)
        self._stopping.set()
        if self._runner is not None:
            self._runner.stop(outcome, message)

    async def run(self) -> RunSummary:
        sources = WorkflowSources(self.workflow)
        summaries: list[RunSummary] = []
        self._say(
            f"watching {self.workflow.path.name} and the .py files beside it "
            f"(code {self.workflow.code_version}); an edit restarts it with the new code"
        )
        while self._stopped is None and self._episodes_left(summaries) != 0:
            summary, changed_to = await self._run_until_changed(sources, summaries)
            summaries.append(summary)
            if changed_to is None:
                if summary.outcome is not Outcome.WORKFLOW_FAILED or self._stopped is not None:
                    break
                self._say(
                    f"workflow error: {summary.message}\n"
                    f"waiting for {self.workflow.path.name} to change (Ctrl-C to leave)"
                )
                waiting = asyncio.create_task(self._stopping.wait())
                try:
                    changed_to = await self._next_workflow(sources, until=waiting)
                finally:
                    waiting.cancel()
                if changed_to is None:
                    break
            self.reloads += 1
            self._say(
                f"reloaded workflow (code {self.workflow.code_version} → {changed_to.code_version})"
            )
            self.workflow = changed_to
        return self._total(summaries)

    async def _run_until_changed(
        self, sources: WorkflowSources, summaries: list[RunSummary]
    ) -> tuple[RunSummary, Workflow | None]:
        """Run the current code until it ends (None) or new code loads (the new workflow)."""
        settings = replace(self.settings, max_episodes=self._episodes_left(summaries))
        async with self.make_client(self.workflow) as client:
            progress = RunProgress(self.console, total=settings.max_episodes)
            self._runner = runner = WorkflowRunner(self.workflow, settings, client, progress)
            if self._stopped is not None:  # a signal while the last one was winding down
                runner.stop(*self._stopped)
            running = asyncio.create_task(runner.run(), name="swarm-runner")
            try:
                changed_to = await self._next_workflow(sources, until=running)
                if changed_to is not None:
                    old, new = self.workflow.code_version, changed_to.code_version
                    self._say(f"workflow changed: stopping code {old}, then starting code {new}")
                    runner.stop(
                        Outcome.RELOADING,
                        f"code {old} → {new}",
                        abort_reason=f"workflow changed (code {old} → {new}); "
                        "the client restarts with the new code",
                    )
                return await running, changed_to
            finally:
                if not running.done():  # cancelled from outside: leave as Ctrl-C twice would
                    running.cancel()
                self._runner = None

    async def _next_workflow(
        self, sources: WorkflowSources, *, until: asyncio.Future
    ) -> Workflow | None:
        """Poll the sources until new code loads (returned) or `until` is done (None)."""
        failed = False
        while True:
            await asyncio.wait({until}, timeout=self.poll_s)
            if until.done():
                return None
            if not sources.changed():
                continue
            if sources.version_now() == self.workflow.code_version:
                if failed:
                    self._say(f"workflow is back to code {self.workflow.code_version}")
                    failed = False
                continue  # touched, or a file the workflow does not import
            try:
                workflow = sources.load()
            except WorkflowError as error:
                failed = True
                self._say(
                    f"workflow changed but does not load; still running code "
                    f"{self.workflow.code_version}:\n{error}"
                )
                continue
            if workflow.code_version != self.workflow.code_version:
                return workflow

    def _episodes_left(self, summaries: list[RunSummary]) -> int | None:
        if self.settings.max_episodes is None:
            return None
        done = sum(s.finished + s.aborted for s in summaries)
        return max(self.settings.max_episodes - done, 0)

    def _total(self, summaries: list[RunSummary]) -> RunSummary:
        if self._stopped is not None:  # a signal: whatever the code was doing then
            outcome, message = self._stopped
        elif summaries and summaries[-1].outcome is not Outcome.RELOADING:
            outcome, message = summaries[-1].outcome, summaries[-1].message
        else:  # changed code with no episodes left to run
            outcome, message = Outcome.COMPLETED, ""
        if self.reloads:
            plural = "s" if self.reloads != 1 else ""
            message = "; ".join(filter(None, [message, f"{self.reloads} reload{plural}"]))
        with_rewards = [s for s in summaries if s.mean_recent_reward is not None]
        return RunSummary(
            outcome=outcome,
            message=message,
            finished=sum(s.finished for s in summaries),
            aborted=sum(s.aborted for s in summaries),
            mean_recent_reward=with_rewards[-1].mean_recent_reward if with_rewards else None,
            recent_episodes=with_rewards[-1].recent_episodes if with_rewards else 0,
        )

    def _say(self, text: str) -> None:
        self.console.print(text, markup=False, highlight=False, soft_wrap=True)
