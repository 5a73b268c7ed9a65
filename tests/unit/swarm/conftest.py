"""Fixtures for the swarm client's tests: a fake gateway, clients bound to it, a captured console."""

from __future__ import annotations

import io
import types
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from swarm.client import SwarmClient
from swarm.progress import RunProgress
from swarm.runner import RunnerSettings, RunSummary, WorkflowRunner
from swarm.workflow import Workflow
from tests.unit.swarm.fake_gateway import FakeGateway


@pytest.fixture
def fake() -> FakeGateway:
    return FakeGateway()


def fast_client(fake: FakeGateway, **options) -> SwarmClient:
    """A client of the fake, over an in-process transport, with millisecond backoff."""
    options = {"retry_initial_s": 0.001, "retry_max_s": 0.01, "retry_for_s": 5.0, **options}
    return SwarmClient(fake.base_url, name="test", transport=fake.mock_transport(), **options)


def inline_workflow(tasks: Callable, rollout: Callable) -> Workflow:
    return Workflow(
        path=Path("inline_workflow.py"),
        tasks=tasks,
        rollout=rollout,
        code_version="0" * 12,
        module=types.ModuleType("inline_workflow"),
    )


class Captured:
    """A console writing to a string: what `swarm run` would have shown."""

    def __init__(self) -> None:
        self.file = io.StringIO()
        self.console = Console(file=self.file, width=200, force_terminal=False)

    @property
    def text(self) -> str:
        return self.file.getvalue()


@pytest.fixture
def captured() -> Captured:
    return Captured()


async def run_inline(
    fake: FakeGateway,
    captured: Captured,
    rollout: Callable,
    tasks: Callable | None = None,
    *,
    client_options: dict | None = None,
    on_runner: Callable[[WorkflowRunner], None] | None = None,
    **settings,
) -> RunSummary:
    """Run an inline workflow against the fake (run "r", tasks t0..t4 by default)."""
    tasks = tasks or (lambda split="train": [{"id": f"t{i}", "split": split} for i in range(5)])
    runner_settings = RunnerSettings(run="r", **settings)
    async with fast_client(fake, **(client_options or {})) as client:
        progress = RunProgress(captured.console, total=runner_settings.max_episodes)
        runner = WorkflowRunner(inline_workflow(tasks, rollout), runner_settings, client, progress)
        if on_runner is not None:
            on_runner(runner)
        return await runner.run()
