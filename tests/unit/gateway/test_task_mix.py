"""Multi-task cocktails: batches apportioned by the run's task mix (±1 group), admission
by family quota (429 `task_mix_quota`), unknown families (422), back-pressure (429
`buffer_full`), the linear schedule, and live PATCHes of the mix."""

from __future__ import annotations

import time

import pytest

from gateway.runs.task_mix import effective_mix, quotas, select, short_families
from tests.unit.gateway.conftest import (
    assert_openai_error,
    chat_as,
    create_run,
    eventually,
    finish,
    open_episode,
    run_state,
)

LONG_S = 60.0  # group_timeout_s that never runs out in a test

# -- the pure arithmetic ---------------------------------------------------------------------


def test_quotas_sum_to_the_batch_and_keep_each_family_within_one_group_of_its_share():
    for mix, count in [({"a": 1, "b": 1, "c": 1}, 4), ({"a": 3, "b": 1}, 4), ({"a": 0.7}, 3)]:
        result = quotas(mix, count)
        total = sum(mix.values())
        assert sum(result.values()) == count
        for family, weight in mix.items():
            assert abs(result[family] - weight / total * count) < 1
    assert quotas({"a": 3, "b": 1}, 4) == {"a": 3, "b": 1}
    assert quotas({"a": 1, "b": 1}, 3) == {"a": 2, "b": 1}  # ties go to the first family
    assert quotas({"a": 1, "b": 0}, 2) == {"a": 2, "b": 0}


def test_the_schedule_interpolates_linearly_and_then_holds():
    start, to = {"a": 1.0}, {"a": 0.0, "b": 2.0}
    assert effective_mix(start, to, 10, 0) == {"a": 1.0, "b": 0.0}
    assert effective_mix(start, to, 10, 5) == {"a": 0.5, "b": 1.0}
    assert effective_mix(start, to, 10, 10) == {"a": 0.0, "b": 2.0}
    assert effective_mix(start, to, 10, 25) == {"a": 0.0, "b": 2.0}
    assert effective_mix(start, None, 10, 5) == {"a": 1.0}


def test_select_takes_each_familys_oldest_quota_then_fills_with_the_oldest_rest():
    families = ["a", "a", "a", "b", "a", "b"]
    assert select(families, {"a": 1, "b": 2}, 3) == [0, 3, 5]
    assert select(families, {"a": 1, "b": 3}, 4) == [0, 1, 3, 5]  # b is short by one
    assert select(["a"], {"a": 1, "b": 1}, 2) == [0]  # takes what exists
    assert short_families({"a": 3, "b": 2}, {"a": 1, "b": 3}) == ["b"]


# -- through the gateway ---------------------------------------------------------------------


def play(client, family: str, reward: float = 1.0, **fields) -> dict:
    episode = open_episode(client, task_family=family, **fields)
    chat_as(client, episode)  # a sample to train: a batch that trains nothing is no step
    response = finish(client, episode, reward)
    assert response.status_code == 200, response.text
    return episode


def new_episode(client, family: str | None, **fields):
    body = {"run": "r", "task_id": "t", **fields}
    if family is not None:
        body["task_family"] = family
    return client.post("/swarm/episodes", json=body)


def assert_429(response, code: str) -> dict:
    """A 429 with `code`, `retry_after` (the gateway's paused_retry_after_s) and the header."""
    assert response.status_code == 429, response.text
    error = response.json()["error"]
    assert error["code"] == code and error["message"]
    assert error["retry_after"] == 5.0 and response.headers["Retry-After"] == "5"
    return error


def metrics(client, step: int) -> dict[str, float]:
    points = client.get("/runs/r/metrics", params={"since": step - 1}).json()
    return {p["name"]: p["value"] for p in points if p["step"] == step and p["policy"] is None}


def step_reached(client, step: int):
    return lambda: run_state(client)["step"] >= step


@pytest.mark.slow
def test_a_batch_takes_each_familys_share_and_waits_for_a_short_family(trainer_client, factory):
    create_run(
        trainer_client,
        group_size=1,
        zero_variance_groups="keep",
        batch_groups=4,
        task_mix={"a": 3, "b": 1},
        group_timeout_s=LONG_S,
    )
    family_of = {}
    for _ in range(5):
        family_of[play(trainer_client, "a")["episode_id"]] = "a"
    time.sleep(0.2)
    assert run_state(trainer_client)["step"] == 0  # five groups, but none of b yet
    family_of[play(trainer_client, "b", reward=0.0)["episode_id"]] = "b"
    eventually(step_reached(trainer_client, 1))

    ((groups, _),) = factory.trainers["r/policy"].steps
    assert sorted(family_of[g.group_id] for g in groups) == ["a", "a", "a", "b"]
    values = metrics(trainer_client, 1)
    assert values["family/a/groups"] == 3 and values["family/b/groups"] == 1
    assert values["family/a/reward/mean"] == 1.0 and values["family/b/reward/mean"] == 0.0
    assert values["task_mix/a"] == 0.75 and values["task_mix/b"] == 0.25


@pytest.mark.slow
def test_a_short_family_is_waited_for_at_most_group_timeout_s(trainer_client, factory):
    create_run(
        trainer_client,
        group_size=1,
        zero_variance_groups="keep",
        batch_groups=2,
        task_mix={"a": 1, "b": 1},
        group_timeout_s=1.0,
    )
    play(trainer_client, "a")
    play(trainer_client, "a")
    assert run_state(trainer_client)["step"] == 0
    eventually(step_reached(trainer_client, 1))  # b never came: the step takes what exists
    ((groups, _),) = factory.trainers["r/policy"].steps
    assert len(groups) == 2
    assert metrics(trainer_client, 1)["family/a/groups"] == 2


def test_an_over_quota_family_waits_with_429_and_a_group_in_progress_is_admitted(trainer_client):
    # quota of the next two batches: ceil(0.5 × 2 × 2) = 2 groups per family
    create_run(
        trainer_client,
        group_size=2,
        batch_groups=2,
        task_mix={"a": 1, "b": 1},
        group_timeout_s=LONG_S,
    )
    open_episode(trainer_client, task_family="a", group_id="g1")
    open_episode(trainer_client, task_family="a", group_id="g2")
    error = assert_429(new_episode(trainer_client, "a", group_id="g3"), "task_mix_quota")
    assert "'a'" in error["message"]
    assert new_episode(trainer_client, "a", group_id="g1").status_code == 200  # joins g1
    assert new_episode(trainer_client, "b", group_id="g4").status_code == 200


def test_a_finished_group_still_counts_until_a_step_takes_it(trainer_client):
    create_run(
        trainer_client,
        group_size=1,
        zero_variance_groups="keep",
        batch_groups=2,
        task_mix={"a": 1, "b": 1},
        group_timeout_s=LONG_S,
    )
    play(trainer_client, "a")  # quota: ceil(0.5 × 2 × 2) = 2 groups
    play(trainer_client, "a")  # the step waits for b
    assert_429(new_episode(trainer_client, "a"), "task_mix_quota")
    play(trainer_client, "b")
    eventually(step_reached(trainer_client, 1))
    assert new_episode(trainer_client, "a").status_code == 200  # the step took one a group


@pytest.mark.parametrize("family", ["c", None])
def test_a_family_not_in_the_mix_is_a_422_listing_the_mix(trainer_client, family):
    create_run(trainer_client, task_mix={"a": 1, "b": 2})
    error = assert_openai_error(new_episode(trainer_client, family), 422)
    assert error["param"] == "task_family"
    assert "a, b" in error["message"]


def test_an_episode_without_family_is_the_default_family(trainer_client):
    create_run(trainer_client, task_mix={"a": 1, "default": 1})
    assert new_episode(trainer_client, None).status_code == 200


def test_back_pressure_refuses_new_groups_while_the_buffer_is_full(trainer_client):
    create_run(trainer_client, group_size=2, batch_groups=1, max_buffered_groups=2)
    open_episode(trainer_client, group_id="g1")
    play_group = open_episode(trainer_client, group_id="g2")
    finish(trainer_client, play_group, 1.0)  # an open group in the buffer
    assert_429(new_episode(trainer_client, None, group_id="g3"), "buffer_full")
    assert new_episode(trainer_client, None).status_code == 429  # no group: a new one
    assert new_episode(trainer_client, None, group_id="g1").status_code == 200
    assert new_episode(trainer_client, None, group_id="g2").status_code == 200


def test_the_default_buffer_limit_is_four_batches(trainer_client):
    create_run(trainer_client, group_size=2, batch_groups=1)
    for i in range(4):
        open_episode(trainer_client, group_id=f"g{i}")
    assert_429(new_episode(trainer_client, None, group_id="g9"), "buffer_full")


def test_the_schedule_moves_the_mix_step_by_step(trainer_client):
    create_run(
        trainer_client,
        group_size=1,
        zero_variance_groups="keep",
        batch_groups=1,
        task_mix={"a": 1},
        task_mix_schedule={"to": {"b": 1}, "steps": 2},
        group_timeout_s=LONG_S,
    )
    assert_429(new_episode(trainer_client, "b"), "task_mix_quota")  # weight 0
    play(trainer_client, "a")
    eventually(step_reached(trainer_client, 1))
    assert metrics(trainer_client, 1)["task_mix/a"] == 1.0
    play(trainer_client, "a")  # the mix at step 1 is half and half
    eventually(step_reached(trainer_client, 2))
    assert metrics(trainer_client, 2)["task_mix/a"] == 0.5
    assert metrics(trainer_client, 2)["task_mix/b"] == 0.5
    assert_429(new_episode(trainer_client, "a"), "task_mix_quota")  # now 0
    play(trainer_client, "b")
    eventually(step_reached(trainer_client, 3))
    assert metrics(trainer_client, 3)["task_mix/b"] == 1.0


def test_a_schedule_needs_a_task_mix(trainer_client):
    response = trainer_client.post(
        "/runs", json={"name": "r", "task_mix_schedule": {"to": {"a": 1}, "steps": 3}}
    )
    assert assert_openai_error(response, 422)["param"] == "task_mix_schedule"


def test_a_patched_mix_applies_from_the_next_step(trainer_client):
    create_run(
        trainer_client,
        group_size=1,
        zero_variance_groups="keep",
        batch_groups=1,
        task_mix={"a": 1},
        group_timeout_s=LONG_S,
    )
    play(trainer_client, "a")
    eventually(step_reached(trainer_client, 1))
    response = trainer_client.patch("/runs/r", json={"task_mix": {"a": 0, "b": 1}})
    assert response.status_code == 200, response.text
    assert_429(new_episode(trainer_client, "a"), "task_mix_quota")
    play(trainer_client, "b")
    eventually(step_reached(trainer_client, 2))
    assert metrics(trainer_client, 2)["task_mix/b"] == 1.0
    assert metrics(trainer_client, 2)["family/b/groups"] == 1


def test_a_patched_schedule_starts_at_the_current_step(trainer_client):
    create_run(
        trainer_client,
        group_size=1,
        zero_variance_groups="keep",
        batch_groups=1,
        task_mix={"a": 1},
        group_timeout_s=LONG_S,
    )
    play(trainer_client, "a")
    eventually(step_reached(trainer_client, 1))
    schedule = {"to": {"b": 1}, "steps": 2}
    response = trainer_client.patch("/runs/r", json={"task_mix_schedule": schedule})
    assert response.status_code == 200, response.text
    play(trainer_client, "a")
    eventually(step_reached(trainer_client, 2))
    assert metrics(trainer_client, 2)["task_mix/a"] == 1.0  # 0 of 2 steps into the schedule
