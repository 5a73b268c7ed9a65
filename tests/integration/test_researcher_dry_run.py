"""The researcher's dry run of generated workflows against a real gateway (tiny model).

Bad generated code must come back as a precise problem the planner can repair — a missing
import, a rollout that raises, one that never returns (awaiting, or blocking the loop) —
and never hang the study.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from researcher.gateway_api import GatewayAPI
from researcher.nodes.validate import dry_run
from researcher.settings import StudySettings
from tests.integration.conftest import shared_tiny

pytestmark = pytest.mark.slow

GOOD = """
from swarm.tasks import arithmetic

def tasks(split="train"):
    return ({**t, "family": "arithmetic"} for t in arithmetic.tasks(split, seed=0))

async def rollout(task, episode):
    return await arithmetic.rollout(task, episode)
"""
MISSING_IMPORT = "import numpy_that_does_not_exist\n" + GOOD
RAISES = GOOD.replace(
    "    return await arithmetic.rollout(task, episode)",
    "    raise ValueError('reward code is broken: no field answer2')",
)
NEVER_RETURNS = GOOD.replace(
    "    return await arithmetic.rollout(task, episode)",
    "    import asyncio\n    await asyncio.sleep(3600)",
)
# the first task's episode raises, the others finish: the workflow passes, the failure said
RAISES_ON_ONE_TASK = GOOD.replace(
    "    return await arithmetic.rollout(task, episode)",
    "    STARTED.append(task['id'])\n"
    "    if len(STARTED) == 1:\n"
    "        raise KeyError('answer2')\n"
    "    return await arithmetic.rollout(task, episode)",
).replace("async def rollout", "STARTED = []\n\nasync def rollout")
BLOCKS_THE_LOOP = GOOD.replace(
    "    return await arithmetic.rollout(task, episode)",
    "    import time\n    time.sleep(3600)",
)


@pytest.fixture(scope="module")
def context(tmp_path_factory, shared_tiny_gateway):
    tmp = tmp_path_factory.mktemp("dry-run")
    gateway = shared_tiny(shared_tiny_gateway)  # its runs: "dry-<name>"
    settings = StudySettings(
        question="q", budget_s=60, episode_timeout_s=120, validate_timeout_s=240
    )
    api = GatewayAPI(gateway.url)
    yield SimpleNamespace(gateway=api, settings=settings, directory=tmp)
    api.close()


def check(
    context, name: str, source: str, notes: list[str] | None = None, **limits: float
) -> str | None:
    """`limits`: StudySettings fields (episode_timeout_s, validate_timeout_s) for this check;
    by default generous, so a loaded CI box cannot time a good workflow out."""
    path = context.directory / f"{name}.py"
    path.write_text(source)
    body = {"policies": {"policy": {"base_model": "tiny"}}}
    settings = context.settings.model_copy(update=limits)
    return dry_run(
        SimpleNamespace(**{**vars(context), "settings": settings}),
        str(path),
        f"dry-{name}",
        body,
        notes,
    )


def test_a_good_workflow_passes_and_its_scratch_run_is_stopped(context):
    problem = check(context, "good", GOOD)
    assert problem is None, problem
    assert context.gateway.get_run("dry-good")["status"] == "stopped"


def test_a_missing_import_comes_back_with_the_module_name(context):
    problem = check(context, "missing", MISSING_IMPORT)
    assert problem is not None and "numpy_that_does_not_exist" in problem
    assert "exited 2" in problem


def test_a_rollout_that_raises_comes_back_with_its_traceback(context):
    problem = check(context, "raises", RAISES)
    assert problem is not None and "reward code is broken: no field answer2" in problem
    assert "0 episode(s) finished, 4 aborted" in problem
    # the first line (the event's reason) leads with what was raised, and where
    first = problem.splitlines()[0]
    assert first.startswith("rollout raised ValueError: reward code is broken"), first
    assert "raises.py:" in first, first


def test_a_rollout_that_raises_on_one_task_passes_and_says_so(context):
    notes: list[str] = []
    problem = check(context, "raises-once", RAISES_ON_ONE_TASK, notes)
    assert problem is None, problem
    assert len(notes) == 1, notes
    assert notes[0].startswith("1 of 4 dry-run episodes failed: rollout raised KeyError"), notes
    assert "raises-once.py:" in notes[0], notes


def test_a_rollout_that_never_returns_is_cut_by_the_episode_timeout(context):
    started = time.monotonic()
    problem = check(context, "hangs", NEVER_RETURNS, episode_timeout_s=5)
    assert time.monotonic() - started < 40
    assert problem is not None and "--episode-timeout 5 s" in problem


def test_a_rollout_that_blocks_the_event_loop_is_cut_by_the_dry_run_limit(context):
    started = time.monotonic()
    problem = check(context, "blocks", BLOCKS_THE_LOOP, validate_timeout_s=40)
    assert time.monotonic() - started < 80
    assert problem is not None and "did not end within 40 s" in problem
    assert context.gateway.get_run("dry-blocks")["status"] == "stopped"
