"""`swarm run --watch`: an edit that loads restarts the workflow with its new code (old
episodes aborted, a new client with the new code_version); an edit that does not load is
printed while the old code keeps running; a touch or an unrelated file changes nothing."""

from __future__ import annotations

import asyncio
import hashlib
import os
import signal
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from swarm.runner import Outcome, RunnerSettings, RunSummary
from swarm.watch import WatchedRun
from swarm.workflow import code_version, load_workflow
from tests.unit.swarm.conftest import Captured, fast_client
from tests.unit.swarm.fake_gateway import FakeGateway
from tests.unit.swarm.test_cli import start_swarm_run, wait_for

POLL_S = 0.02
WATCH_S = 120.0  # a loaded 2-core box took over 10 s for a broken edit and its fix
WORKFLOW = """
import asyncio

def tasks(split="train"):
    return [{{"id": "t{version}"}}]

async def rollout(task, episode):
    await asyncio.sleep({sleep_s})
    return {reward}
"""
SLEEPS = 3600.0  # a rollout that only ends by being cancelled


def workflow_source(reward: float, sleep_s: float = 0.005, version: int = 1) -> str:
    return WORKFLOW.format(reward=reward, sleep_s=sleep_s, version=version)


def sha12(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


async def until(condition: Callable[[], bool], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def watch(
    fake: FakeGateway,
    captured: Captured,
    path: Path,
    steps: Callable[[WatchedRun], object],
    **settings,
) -> RunSummary:
    """Run `path` watched against the fake while `steps(watched)` edits it; `WATCH_S` at
    most (a hang is the failure, not slowness: the steps' own waits are 30 s each)."""
    watched = WatchedRun(
        load_workflow(path),
        RunnerSettings(run="r", **settings),
        lambda workflow: fast_client(fake, code_version=workflow.code_version),
        captured.console,
        poll_s=POLL_S,
    )

    async def both() -> RunSummary:
        driving = asyncio.create_task(steps(watched))
        summary = await watched.run()
        await driving  # its assertions count too
        return summary

    return await asyncio.wait_for(both(), timeout=WATCH_S)


@pytest.mark.slow
def test_an_edit_restarts_with_a_new_client_and_aborts_the_old_episodes(tmp_path, captured):
    fake = FakeGateway()
    path = tmp_path / "flow.py"
    path.write_text(workflow_source(1.0, sleep_s=SLEEPS))
    old_version = sha12(path)

    async def edit(watched):
        await until(lambda: fake.open_now == 2)
        path.write_text(workflow_source(2.0, version=2))

    summary = asyncio.run(watch(fake, captured, path, edit, concurrency=2, max_episodes=6))
    new_version = sha12(path)
    old_client, new_client = fake.clients.values()
    assert (old_client.code_version, new_client.code_version) == (old_version, new_version)
    assert old_client.status == new_client.status == "gone"
    old_episodes = [e for e in fake.episodes.values() if e.client_id == old_client.client_id]
    assert len(old_episodes) == 2 and all(e.status == "aborted" for e in old_episodes)
    assert all(e.reason.startswith("workflow changed (code ") for e in old_episodes)
    new_episodes = [e for e in fake.episodes.values() if e.client_id == new_client.client_id]
    assert [(e.status, e.reward, e.task_id) for e in new_episodes] == [("finished", 2.0, "t2")] * 4
    assert f"reloaded workflow (code {old_version} → {new_version})" in captured.text
    assert summary.outcome is Outcome.COMPLETED and summary.exit_code == 0
    assert (summary.finished, summary.aborted) == (4, 2)
    assert "1 reload" in summary.describe()


@pytest.mark.slow
def test_a_broken_edit_keeps_the_old_code_running_and_a_fix_then_reloads(tmp_path, captured):
    fake = FakeGateway()
    path = tmp_path / "flow.py"
    path.write_text(workflow_source(1.0))
    first_version = sha12(path)

    def finished_with(reward: float) -> int:
        return sum(1 for e in fake.episodes.values() if e.reward == reward)

    async def edit(watched):
        await until(lambda: finished_with(1.0) >= 2)
        path.write_text("def tasks(split='train'):\n    return [\n")
        await until(lambda: "does not load" in captured.text)
        running_since = finished_with(1.0)
        await until(lambda: finished_with(1.0) >= running_since + 3)  # the old code goes on
        assert len(fake.clients) == 1 and fake.with_status("aborted") == []
        path.write_text(workflow_source(3.0, version=3))
        await until(lambda: finished_with(3.0) >= 2)
        watched.stop(Outcome.INTERRUPTED, "Ctrl-C")

    summary = asyncio.run(watch(fake, captured, path, edit, concurrency=1))
    assert f"still running code {first_version}" in captured.text
    assert "syntax error in the workflow file" in captured.text and "line 2" in captured.text
    old_client, new_client = fake.clients.values()  # the broken code never registered
    assert (old_client.code_version, new_client.code_version) == (first_version, sha12(path))
    assert f"reloaded workflow (code {first_version} → {sha12(path)})" in captured.text
    assert summary.outcome is Outcome.INTERRUPTED and summary.exit_code == 130
    assert fake.open_now == 0 and all(c.status == "gone" for c in fake.clients.values())


@pytest.mark.slow
def test_an_edit_to_a_module_beside_the_workflow_reloads_it(tmp_path, captured):
    fake = FakeGateway()
    helper = f"rewards_{uuid.uuid4().hex[:8]}"  # sys.modules is shared by every test
    (tmp_path / f"{helper}.py").write_text("REWARD = 1.0\n")
    path = tmp_path / "flow.py"
    path.write_text(
        f"import asyncio\nimport {helper}\n\ndef tasks(split='train'):\n"
        "    return [{'id': 't'}]\n\n"
        "async def rollout(task, episode):\n"
        "    await asyncio.sleep(0.005)  # the fake's in-process transport never yields\n"
        f"    return {helper}.REWARD\n"
    )
    first = load_workflow(path)
    assert first.code_version != sha12(path)  # the helper counts in the code version
    assert first.helper_files == ((tmp_path / f"{helper}.py").resolve(),)

    async def edit(watched):
        await until(lambda: len(fake.with_status("finished")) >= 2)
        (tmp_path / f"{helper}.py").write_text("REWARD = 0.25  # halved\n")
        await until(lambda: any(e.reward == 0.25 for e in fake.episodes.values()))
        watched.stop(Outcome.INTERRUPTED, "Ctrl-C")

    asyncio.run(watch(fake, captured, path, edit, concurrency=1))
    old_client, new_client = fake.clients.values()
    assert old_client.code_version == first.code_version != new_client.code_version
    assert new_client.code_version == code_version(
        path.read_bytes(), {f"{helper}.py": b"REWARD = 0.25  # halved\n"}
    )
    assert "reloaded workflow" in captured.text


@pytest.mark.slow
def test_a_touch_or_a_new_unrelated_file_does_not_restart(tmp_path, captured):
    fake = FakeGateway()
    path = tmp_path / "flow.py"
    path.write_text(workflow_source(1.0))

    async def touch(watched):
        await until(lambda: len(fake.with_status("finished")) >= 1)
        os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))
        (tmp_path / "notes.py").write_text("raise SystemExit('never imported')\n")
        await asyncio.sleep(20 * POLL_S)
        watched.stop(Outcome.INTERRUPTED, "Ctrl-C")

    summary = asyncio.run(watch(fake, captured, path, touch, concurrency=1))
    assert len(fake.clients) == 1
    assert all(  # by the stop only, if it came mid-rollout
        e.reason == "client stopped while the rollout ran" for e in fake.with_status("aborted")
    )
    assert "reload" not in captured.text and "does not load" not in captured.text
    assert summary.outcome is Outcome.INTERRUPTED


@pytest.mark.slow
def test_a_workflow_error_at_run_time_waits_for_the_fix(tmp_path, captured):
    fake = FakeGateway()
    path = tmp_path / "flow.py"
    path.write_text(
        "def tasks(split='train'):\n    return []\n\n"
        "async def rollout(task, episode):\n    return 1.0\n"
    )

    async def fix(watched):
        await until(lambda: "waiting for flow.py to change" in captured.text)
        path.write_text(workflow_source(1.0))

    summary = asyncio.run(watch(fake, captured, path, fix, max_episodes=3))
    assert "yielded no tasks" in captured.text
    (client,) = fake.clients.values()  # the broken tasks() never registered
    assert client.code_version == sha12(path)
    assert summary.outcome is Outcome.COMPLETED and summary.finished == 3


def test_the_help_explains_watch():
    process = start_swarm_run("--help")
    stdout, _ = process.communicate(timeout=30)
    assert process.returncode == 0
    text = " ".join(stdout.replace("│", " ").split())
    assert "--watch" in text and "Restart with the new code when WORKFLOW" in text


@pytest.fixture
def served():
    fake = FakeGateway()
    with fake.serve() as url:
        yield fake, url


@pytest.mark.slow
def test_swarm_run_watch_restarts_on_an_edit_and_leaves_on_ctrl_c(served, tmp_path):
    fake, url = served
    path = tmp_path / "sleepy.py"
    path.write_text(workflow_source(1.0, sleep_s=SLEEPS))
    first_version = sha12(path)
    process = start_swarm_run(str(path), "--gateway", url, "--run", "r", "-n", "2", "--watch")
    try:
        wait_for(lambda: fake.open_now == 2, timeout_s=60)  # a subprocess start on a loaded box
        path.write_text(workflow_source(1.0, sleep_s=SLEEPS, version=2))
        wait_for(lambda: len(fake.clients) == 2 and fake.open_now == 2, timeout_s=60)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, stderr
    old_client, new_client = fake.clients.values()
    assert (old_client.code_version, new_client.code_version) == (first_version, sha12(path))
    assert f"reloaded workflow (code {first_version} → {sha12(path)})" in stderr
    reasons = [e.reason for e in fake.with_status("aborted") if e.client_id == old_client.client_id]
    assert len(reasons) == 2 and all(r.startswith("workflow changed") for r in reasons)
    assert fake.open_now == 0 and all(c.status == "gone" for c in fake.clients.values())
