"""`swarm run` as a user types it, against the fake gateway served over real HTTP: an
example trains to the end, Ctrl-C and SIGTERM stop cleanly, a stopped run ends the client."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.unit.swarm.fake_gateway import FakeGateway

REPO = Path(__file__).resolve().parents[3]
SLEEPY_WORKFLOW = """
import asyncio

def tasks(split="train"):
    return [{"id": "t"}]

async def rollout(task, episode):
    await asyncio.sleep(3600)
    return 1.0
"""


@pytest.fixture
def served() -> Iterator[tuple[FakeGateway, str]]:
    fake = FakeGateway()
    with fake.serve() as url:
        yield fake, url


def start_swarm_run(*args: str) -> subprocess.Popen:
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("SWARMRL_API_KEY", None)
    return subprocess.Popen(
        [sys.executable, "-m", "swarm.cli", "run", *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def wait_for(condition: Callable[[], bool], timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.mark.slow
def test_the_learnable_example_runs_max_episodes_through_the_openai_sdk_and_exits_0(served):
    fake, url = served  # the fake model echoes the prompt, so it always says the word
    example = REPO / "examples" / "learnable.py"
    process = start_swarm_run(
        str(example), "--gateway", url, "--run", "r", "--max-episodes", "8", "-n", "3"
    )
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    finished = fake.with_status("finished")
    assert len(finished) == 8 and all(e.reward == 1.0 and e.calls == 1 for e in finished)
    assert len({e.group_id for e in finished}) == 2  # the run's group size: 4
    (client,) = fake.clients.values()
    assert client.status == "gone" and client.name.startswith("learnable@")
    assert client.code_version == hashlib.sha256(example.read_bytes()).hexdigest()[:12]
    assert "completed — 8 finished, 0 aborted, mean reward (last 8) 1.000" in stderr


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "exit_code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_aborts_the_open_episodes_deregisters_and_exits(served, tmp_path, sig, exit_code):
    fake, url = served
    workflow = tmp_path / "sleepy.py"
    workflow.write_text(SLEEPY_WORKFLOW)
    process = start_swarm_run(str(workflow), "--gateway", url, "--run", "r", "--concurrency", "3")
    wait_for(lambda: fake.open_now == 3)
    process.send_signal(sig)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == exit_code, stderr
    assert len(fake.with_status("aborted")) == 3 and fake.open_now == 0
    assert [client.status for client in fake.clients.values()] == ["gone"]
    assert f"received {sig.name}" in stderr


@pytest.mark.slow
def test_a_run_that_stops_taking_episodes_ends_the_client_with_exit_0(served):
    fake, url = served
    fake.accept_episodes = 6
    example = REPO / "examples" / "learnable.py"
    process = start_swarm_run(str(example), "--gateway", url, "--run", "r", "-n", "2")
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    assert "run stopped" in stderr and "takes no more episodes" in stderr
    # the episode another worker still has in flight when the 409 comes is aborted (the
    # real gateway aborts a stopped run's open episodes anyway), so 5 or 6 finish
    finished, aborted = len(fake.with_status("finished")), len(fake.with_status("aborted"))
    assert finished + aborted == 6 and finished >= 5


# -- the end of a run, and --episode-timeout on a blocked event loop (issue 14, F6) -------

WAITING_WORKFLOW = """
import asyncio, os

def tasks(split="train"):
    return [{{"id": "t"}}]

async def rollout(task, episode):
    while not os.path.exists({go!r}):
        await asyncio.sleep(0.05)
    llm = episode.openai()
    await llm.chat.completions.create(model=episode.model, messages=[{{"role": "user", "content": "hi"}}])
    return 1.0
"""


@pytest.mark.slow
def test_a_client_told_the_run_finished_exits_0_with_one_line_and_no_traceback(served, tmp_path):
    fake, url = served
    go = tmp_path / "go"
    workflow = tmp_path / "waiting.py"
    workflow.write_text(WAITING_WORKFLOW.format(go=str(go)))
    process = start_swarm_run(str(workflow), "--gateway", url, "--run", "r", "-n", "2")
    wait_for(lambda: fake.open_now == 2)
    fake.end_run("finished", step=7)  # the gateway aborts the open episodes …
    go.write_text("")  # … and then the rollouts call into them
    _, stderr = process.communicate(timeout=90)
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr
    assert "run finished" in stderr and "run 'r' finished at step 7" in stderr
    assert "closed by the gateway while its rollout ran" in stderr
    assert [client.status for client in fake.clients.values()] == ["gone"]


@pytest.mark.slow
def test_a_client_told_the_run_failed_exits_1_with_the_runs_error(served):
    fake, url = served
    fake.end_run_after = 4
    fake.run_status, fake.run_step, fake.run_error = "failed", 3, "loss is NaN at step 3"
    example = REPO / "examples" / "learnable.py"
    process = start_swarm_run(str(example), "--gateway", url, "--run", "r", "-n", "2")
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 1, stderr
    assert "run 'r' failed at step 3: loss is NaN at step 3" in stderr
    assert "Traceback" not in stderr


@pytest.mark.slow
def test_a_client_told_the_run_was_stopped_exits_0_naming_its_step(served):
    fake, url = served
    fake.end_run_after = 4
    fake.run_status, fake.run_step = "stopped", 2
    example = REPO / "examples" / "learnable.py"
    process = start_swarm_run(str(example), "--gateway", url, "--run", "r", "-n", "2")
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    assert "run 'r' was stopped at step 2" in stderr


BLOCKING_WORKFLOW = """
import time

def tasks(split="train"):
    return [{{"id": "t"}}]

async def rollout(task, episode):
    time.sleep({seconds})  # blocks the event loop: asyncio's timeout cannot fire
    return 1.0
"""


@pytest.mark.slow
def test_episode_timeout_aborts_a_rollout_that_blocks_the_event_loop(served, tmp_path):
    fake, url = served
    workflow = tmp_path / "blocking.py"
    workflow.write_text(BLOCKING_WORKFLOW.format(seconds=4))
    process = start_swarm_run(str(workflow), "--gateway", url, "--run", "r", "-n", "1",
                              "--max-episodes", "1", "--episode-timeout", "1")  # fmt: skip
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    (episode,) = fake.episodes.values()
    assert episode.status == "aborted", stderr  # not finished with the late reward
    assert "--episode-timeout 1 s" in episode.reason and "blocked the event loop" in episode.reason


@pytest.mark.slow
def test_a_rollout_that_blocks_the_event_loop_for_good_ends_the_client_with_exit_3(
    served, tmp_path
):
    fake, url = served
    workflow = tmp_path / "blocking.py"
    workflow.write_text(BLOCKING_WORKFLOW.format(seconds=3600))
    process = start_swarm_run(str(workflow), "--gateway", url, "--run", "r", "-n", "1",
                              "--episode-timeout", "1")  # fmt: skip
    _, stderr = process.communicate(timeout=90)
    assert process.returncode == 3, stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("swarm run: rollout of episode") and "exiting 3" in last
    (episode,) = fake.episodes.values()
    assert episode.status == "aborted"
    assert [client.status for client in fake.clients.values()] == ["gone"]
