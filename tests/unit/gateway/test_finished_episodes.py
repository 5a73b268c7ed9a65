"""One `FinishedEpisode` whichever way it is built: the record a live finish buffers and
the one a restarted gateway rebuilds from the database are equal, field by field (rewards
per policy, samples with their row ids, metrics, drift counts, task family, code version).
"""

from __future__ import annotations

import pytest

from gateway.errors import Unprocessable
from gateway.runs.buffer import FinishedEpisode
from gateway.runs.samples import rewards_per_policy
from tests.fakes import FakePolicyFactory
from tests.unit.gateway.conftest import Start, chat_as, create_run, finish, open_episode

TEAM = {"planner": {}, "executor": {}}


def buffered(client, run: str = "r") -> list[FinishedEpisode]:
    """The finished episodes the run's buffer holds (complete groups, taken out)."""
    groups = client.app.state.gateway.runs.get(run).buffer.take(100)
    return [episode for group in groups for episode in group.episodes]


def play_paused_team_run(client) -> list[dict]:
    """Two episodes of a paused two-policy run (buffered, never trained): one with a dict
    reward, a client with a code version, metrics and a task family; one plain."""
    create_run(client, policies=TEAM, group_size=1, batch_groups=1)
    worker = client.post("/swarm/clients", json={"name": "w", "code_version": "v7"}).json()
    rich = open_episode(client, client_id=worker["client_id"], task_family="math")
    chat_as(client, rich, model="r/planner", content="plan")
    chat_as(client, rich, model="r/executor", content="do")
    chat_as(client, rich, model="r/planner", content="again")
    plain = open_episode(client)
    chat_as(client, plain, model="r/executor")
    assert client.post("/runs/r/pause").status_code == 200  # open episodes may still finish
    response = finish(client, rich, {"planner": 1.0, "executor": 0.25}, metrics={"turns": 3.0})
    assert response.status_code == 200, response.text
    assert finish(client, plain, 0.5).status_code == 200
    return [rich, plain]


def test_an_episode_finished_live_and_the_one_rebuilt_on_restart_are_equal(start: Start):
    before = start(FakePolicyFactory())
    played = play_paused_team_run(before)
    live = buffered(before)
    assert [episode.episode_id for episode in live] == [e["episode_id"] for e in played]
    rich = live[0]
    assert rich.rewards == {"planner": 1.0, "executor": 0.25}
    assert (rich.task_family, rich.code_version, rich.metrics) == ("math", "v7", {"turns": 3.0})
    assert {policy: len(samples) for policy, samples in rich.samples.items()} == {
        "planner": 2,
        "executor": 1,
    }
    assert sum(rich.drift.values()) == 3
    assert live[1].rewards == {"planner": 0.5, "executor": 0.5}

    after = start(FakePolicyFactory())

    assert buffered(after) == live


def test_a_reward_must_name_each_policy_of_the_run_and_only_those():
    assert rewards_per_policy(0.5, ["a", "b"]) == {"a": 0.5, "b": 0.5}
    assert rewards_per_policy({"b": 1, "a": 0}, ["a", "b"]) == {"a": 0.0, "b": 1.0}
    with pytest.raises(Unprocessable, match="unknown policy c"):
        rewards_per_policy({"a": 0.0, "b": 0.0, "c": 1.0}, ["a", "b"])
    with pytest.raises(Unprocessable, match="no reward for b"):
        rewards_per_policy({"a": 0.0}, ["a", "b"])
