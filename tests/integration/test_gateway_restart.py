"""A real `gateway serve --model tiny`, killed with SIGKILL mid-run and started again on the
same --state-dir: the run comes back from its last checkpoint (its weights version goes
on from the checkpoint's), the step trained after that checkpoint is trained again, and
the episode left open answers 409 "gateway restarted". Run on the gateway's SQLite file and
on PostgreSQL (`--database-url`; the state dir still holds the checkpoints).

    .venv/bin/python -m pytest -q -m slow tests/integration/test_gateway_restart.py
"""

from __future__ import annotations

import signal

import httpx
import pytest

from tests.integration.conftest import start_gateway, stop_gateway, wait_for

pytestmark = pytest.mark.slow


def open_episode(http: httpx.Client) -> dict:
    response = http.post("/swarm/episodes", json={"run": "r", "task_id": "t"})
    assert response.status_code == 200, response.text
    return response.json()


def chat(http: httpx.Client, episode: dict) -> httpx.Response:
    return http.post(
        "/v1/chat/completions",
        json={
            "model": "r/policy",
            "messages": [{"role": "user", "content": "count to three"}],
            "max_tokens": 4,
        },
        headers={"Authorization": f"Bearer {episode['api_key']}"},
    )


def play(http: httpx.Client, reward: float) -> None:
    episode = open_episode(http)
    assert chat(http, episode).status_code == 200
    response = http.post(f"/swarm/episodes/{episode['episode_id']}/finish", json={"reward": reward})
    assert response.status_code == 200, response.text


def train_past_a_checkpoint(http: httpx.Client) -> tuple[dict, dict]:
    """Run "r" trained 3 steps (checkpoint at step 2) and an episode left open with a call:
    (the run as it was, the open episode)."""
    response = http.post(
        "/runs",
        json={
            "name": "r",
            "group_size": 1,
            "batch_groups": 1,
            "zero_variance_groups": "keep",
            "checkpoint_every": 2,
        },
    )
    assert response.status_code == 201, response.text
    for i in range(3):
        play(http, reward=float(i))
        wait_for(lambda i=i: http.get("/runs/r").json()["step"] == i + 1)
    before = http.get("/runs/r").json()
    assert [c["step"] for c in http.get("/runs/r/checkpoints").json()] == [2]
    left_open = open_episode(http)
    assert chat(http, left_open).status_code == 200
    return before, left_open


def expect_restored_at_step_2_then_step_3(http: httpx.Client, before: dict) -> dict:
    """The run came back from its step-2 checkpoint and trained step 3 again."""
    after = wait_for(lambda: (r := http.get("/runs/r").json())["step"] == 3 and r)
    assert after["status"] == "running"
    version_at_checkpoint = before["policies"]["policy"]["version"] - 1
    assert after["policies"]["policy"]["version"] == version_at_checkpoint + 1
    assert after["samples_trained"] == before["samples_trained"]
    steps = [p["step"] for p in http.get("/runs/r/metrics?name=step_seconds").json()]
    assert sorted(set(steps)) == [1, 2, 3]  # step 3's first metrics were removed
    assert steps.count(3) == steps.count(1)
    return after


def test_a_killed_gateway_resumes_its_run_from_the_last_checkpoint(tmp_path, gateway_database):
    gw = start_gateway(tmp_path, model="tiny", database_url=gateway_database)
    try:
        with httpx.Client(base_url=gw.url, timeout=60) as http:
            before, left_open = train_past_a_checkpoint(http)
        gw.process.send_signal(signal.SIGKILL)
        gw.process.wait(timeout=30)
    except BaseException:
        stop_gateway(gw)
        raise

    gw = start_gateway(tmp_path, model="tiny", database_url=gateway_database)
    try:
        with httpx.Client(base_url=gw.url, timeout=60) as http:
            # the sample step 3 trained was lost with the process: it trains again at once
            expect_restored_at_step_2_then_step_3(http, before)
            response = chat(http, left_open)
            assert response.status_code == 409
            assert "gateway restarted" in response.json()["error"]["message"]
            play(http, reward=1.0)
            wait_for(lambda: http.get("/runs/r").json()["step"] == 4)
    finally:
        stop_gateway(gw)
