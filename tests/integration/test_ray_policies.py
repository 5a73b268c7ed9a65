"""The integration suite with policies as Ray actors: `gateway serve --ray HOST:PORT` on a
real local Ray cluster (`ray start --head` on loopback, tests/raycluster.py), tiny model.

The training-stack, team (two policies: two actors) and merged-training tests are the
same functions as the in-process suite's, imported here; this module's `tiny_gateway` /
`e2e_gateway` fixtures hand them a gateway whose served model and run policies each live
in an actor. Then what only Ray has: the actors die with a killed gateway; a policy actor killed with SIGKILL mid-run is handled
like a gateway restart — the run comes back from its last checkpoint in a new actor, the
step trained after the checkpoint trains again, the episode left open answers 409
"policy host lost", and training goes on.

    .venv/bin/python -m pytest -q tests/integration/test_ray_policies.py
"""

from __future__ import annotations

import os
import re
import signal

import httpx
import pytest

from tests.integration.conftest import RunningGateway, start_gateway, stop_gateway, wait_for
from tests.integration.test_gateway_restart import (
    chat,
    expect_restored_at_step_2_then_step_3,
    play,
    train_past_a_checkpoint,
)
from tests.integration.test_merged_training import (  # noqa: F401 - collected here, on Ray
    test_a_tree_merged_run_trains_a_multi_turn_task_with_fewer_timelines_than_calls,
)
from tests.integration.test_team_training import (  # noqa: F401 - collected here, on Ray
    test_a_two_policy_run_trains_each_policy_to_its_own_new_version,
    test_each_sample_trains_only_the_policy_its_call_named,
    test_every_step_has_metrics_for_each_policy,
    test_per_policy_rewards_are_stored_as_the_rollout_returned_them,
    trained_team,
)
from tests.integration.test_training_stack import (  # noqa: F401 - collected here, on Ray
    test_a_workflow_that_fails_to_import_exits_non_zero_with_the_error,
    test_swarm_run_trains_a_run_end_to_end,
)

pytestmark = pytest.mark.slow
ACTOR_LINE = re.compile(r"(\S+): Ray actor pid (\d+) on ")


def start_ray_gateway(tmp, ray_cluster) -> RunningGateway:
    # info: the log names each actor's pid (the kill test finds its victim there)
    return start_gateway(tmp, "--ray", ray_cluster.address, "--log-level", "info", model="tiny")


def actor_pids(gw: RunningGateway) -> list[tuple[str, int]]:
    """(served name, pid) of every actor the gateway placed, in order (from its log)."""
    return [(name, int(pid)) for name, pid in ACTOR_LINE.findall(gw.log())]


@pytest.fixture(scope="module")
def tiny_gateway(tmp_path_factory, ray_cluster):
    gw = start_ray_gateway(tmp_path_factory.mktemp("ray-gateway"), ray_cluster)
    yield gw
    stop_gateway(gw)


@pytest.fixture
def e2e_gateway(tiny_gateway):
    return tiny_gateway


def test_the_served_model_and_each_policy_live_in_actors_not_in_the_gateway(tiny_gateway):
    gw = tiny_gateway
    response = httpx.post(
        f"{gw.url}/runs",
        json={"name": "placed", "group_size": 1, "zero_variance_groups": "keep"},
        timeout=120,
    )
    assert response.status_code == 201, response.text
    placed = dict(actor_pids(gw))
    assert {"tiny", "placed/policy"} <= set(placed)
    assert len({*placed.values(), gw.process.pid}) == len(placed) + 1  # all distinct processes
    answer = httpx.post(
        f"{gw.v1}/chat/completions",
        json={"model": "placed/policy", "messages": [{"role": "user", "content": "hi"}],
              "max_tokens": 4},
        timeout=60,
    )  # fmt: skip
    assert answer.status_code == 200, answer.text
    assert answer.json()["usage"]["completion_tokens"] == 4
    httpx.post(f"{gw.url}/runs/placed/stop", timeout=30)
    # the ended run's actor frees its training state and keeps serving (evaluation)
    wait_for(lambda: "run placed: training memory freed" in gw.log(), 120)
    assert "freeing the actor's training state failed" not in gw.log()
    again = httpx.post(
        f"{gw.v1}/chat/completions",
        json={"model": "placed/policy", "messages": [{"role": "user", "content": "hi"}],
              "max_tokens": 2},
        timeout=60,
    )  # fmt: skip
    assert again.status_code == 200, again.text


def test_capacity_counts_the_clusters_cpus_not_the_gateways(tiny_gateway):
    body = httpx.get(f"{tiny_gateway.url}/capacity", timeout=30).json()
    assert body["hosting"] == "ray"
    assert body["cpus"] == 8  # tests/raycluster.py starts the head with --num-cpus 8
    # one served model's actor (1 CPU) leaves room for 7 policy actors
    assert body["suggested_concurrent_runs"] == 7, body
    assert "Ray cluster of 8 CPUs" in body["basis"]


def test_a_killed_policy_actor_is_restored_from_the_last_checkpoint(tmp_path, ray_cluster):
    gw = start_ray_gateway(tmp_path, ray_cluster)
    try:
        with httpx.Client(base_url=gw.url, timeout=60) as http:
            before, left_open = train_past_a_checkpoint(http)
            victim = dict(actor_pids(gw))["r/policy"]
            os.kill(victim, signal.SIGKILL)

            # a new actor, restored from step 2; the sample step 3 trained trains again
            wait_for(lambda: [p for n, p in actor_pids(gw) if n == "r/policy"][-1] != victim)
            expect_restored_at_step_2_then_step_3(http, before)
            response = chat(http, left_open)
            assert response.status_code == 409
            assert "policy host lost" in response.json()["error"]["message"]
            play(http, reward=1.0)
            wait_for(lambda: http.get("/runs/r").json()["step"] == 4)
            assert "restarting at step 2" in gw.log()
        assert gw.process.poll() is None  # the gateway itself never went down
    finally:
        stop_gateway(gw)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_actors_die_with_a_killed_gateway(tmp_path, ray_cluster):
    gw = start_ray_gateway(tmp_path, ray_cluster)
    try:
        response = httpx.post(
            f"{gw.url}/runs",
            json={"name": "r", "group_size": 1, "zero_variance_groups": "keep"},
            timeout=120,
        )
        assert response.status_code == 201, response.text
        actors = [pid for _, pid in actor_pids(gw)]
        assert len(actors) == 2 and all(pid_alive(pid) for pid in actors)
        gw.process.send_signal(signal.SIGKILL)
        gw.process.wait(timeout=30)
        # Ray fate-sharing: the owner is gone, so are its actors (nothing leaks GPU memory)
        wait_for(lambda: not any(pid_alive(pid) for pid in actors), timeout=60)
    finally:
        stop_gateway(gw)
