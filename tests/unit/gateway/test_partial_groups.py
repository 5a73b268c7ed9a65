"""Partial groups: an open group whose missing episodes never come is closed after
`group_timeout_s` and trained (`partial_groups: train`, at least `min_group_size`
episodes) or dropped (counted, its sample rows marked) — and the loop sleeps meanwhile."""

from __future__ import annotations

import time

import pytest

from experiments_db import crud
from experiments_db.db import session_scope
from gateway.runs.buffer import BufferedGroup, FinishedEpisode, GroupBuffer
from tests.unit.gateway.conftest import (
    chat_as,
    create_run,
    eventually,
    finish,
    open_episode,
    run_state,
)

TIMEOUT_S = 1.0  # two plays in a row must fit well inside it, also on a loaded CI box


def play(client, group_id: str, reward: float) -> dict:
    episode = open_episode(client, group_id=group_id)
    chat_as(client, episode, content=f"{group_id}-{reward}")
    response = finish(client, episode, reward)
    assert response.status_code == 200, response.text
    return episode


def sample_rows(client) -> list:
    with session_scope(client.app.state.gateway.recorder.db) as session:
        return crud.list_samples(session, run_id="r")


def metric(client, name: str) -> float:
    (point,) = client.get("/runs/r/metrics", params={"name": name}).json()
    return point["value"]


def dropped(client, count: int):
    return lambda: run_state(client)["samples_dropped"] == count


# -- the buffer ----------------------------------------------------------------------------


def episode(episode_id: str, group_id: str) -> FinishedEpisode:
    return FinishedEpisode(episode_id=episode_id, group_id=group_id, rewards={"p": 0.0})


def buffer_group(group_id: str, episode_ids: list[str]) -> BufferedGroup:
    return BufferedGroup(group_id, [episode(e, group_id) for e in episode_ids], partial=True)


def test_the_buffer_closes_only_groups_opened_before_the_deadline():
    buffer = GroupBuffer()
    buffer.add(episode("a1", "a"), group_size=3, now=10.0)
    buffer.add(episode("a2", "a"), group_size=3, now=11.0)
    buffer.add(episode("b1", "b"), group_size=3, now=12.0)
    assert buffer.oldest_open_at() == 10.0
    assert buffer.close_expired(opened_before=10.0, min_size=2) == []
    assert buffer.close_expired(opened_before=12.5, min_size=2) == [
        buffer_group("b", ["b1"])  # one episode: below min_size, handed back to drop
    ]
    (trained,) = buffer.take(5)
    assert trained.group_id == "a" and trained.partial and len(trained.episodes) == 2
    assert buffer.oldest_open_at() is None and buffer.episodes() == 0


def test_the_buffer_hands_back_every_expired_group_when_none_may_train():
    buffer = GroupBuffer()
    buffer.add(episode("a1", "a"), group_size=3, now=1.0)
    buffer.add(episode("a2", "a"), group_size=3, now=1.0)
    (group,) = buffer.close_expired(opened_before=2.0, min_size=None)
    assert [e.episode_id for e in group.episodes] == ["a1", "a2"]
    assert buffer.complete_groups == 0 and buffer.open_groups == 0


# -- the training loop ---------------------------------------------------------------------


@pytest.mark.slow
def test_a_group_whose_third_member_never_comes_trains_after_the_timeout(trainer_client, factory):
    create_run(trainer_client, group_size=3, batch_groups=1, group_timeout_s=TIMEOUT_S)
    # taken before the first play: the gateway opens the group when that episode finishes,
    # some time before `play` returns, so only this bound holds on a loaded box
    before_first = time.monotonic()
    first = play(trainer_client, "g", 1.0)
    second = play(trainer_client, "g", 0.0)
    eventually(lambda: run_state(trainer_client)["step"] == 1)
    assert time.monotonic() - before_first >= TIMEOUT_S  # not before the timeout

    ((groups, _),) = factory.trainers["r/policy"].steps
    assert [[e.episode_id for e in g.episodes] for g in groups] == [
        [first["episode_id"], second["episode_id"]]
    ]
    state = run_state(trainer_client)
    assert (state["samples_trained"], state["samples_dropped"]) == (2, 0)
    assert metric(trainer_client, "groups/partial") == 1.0
    assert [r.status for r in sample_rows(trainer_client)] == ["trained", "trained"]


def test_complete_groups_are_not_counted_as_partial(trainer_client):
    create_run(trainer_client, group_size=2, batch_groups=1, group_timeout_s=TIMEOUT_S)
    play(trainer_client, "g", 1.0)
    play(trainer_client, "g", 0.0)
    eventually(lambda: run_state(trainer_client)["step"] == 1)
    assert metric(trainer_client, "groups/partial") == 0.0


@pytest.mark.slow
def test_with_drop_a_partial_group_is_dropped_counted_and_its_rows_marked(trainer_client, factory):
    create_run(
        trainer_client,
        group_size=3,
        batch_groups=1,
        partial_groups="drop",
        group_timeout_s=TIMEOUT_S,
    )
    first = play(trainer_client, "g", 1.0)
    second = play(trainer_client, "g", 0.0)
    eventually(dropped(trainer_client, 2))
    state = run_state(trainer_client)
    assert (state["step"], state["samples_trained"], state["samples_buffered"]) == (0, 0, 0)
    assert factory.trainers["r/policy"].steps == []
    rows = sample_rows(trainer_client)
    assert [(r.status, r.drop_reason) for r in rows] == [("dropped", "partial_group")] * 2
    with session_scope(trainer_client.app.state.gateway.recorder.db) as session:
        for e in (first, second):  # consumed: a restart must not buffer them again
            assert crud.get_episode(session, episode_id=e["episode_id"]).step == 0

    # the next step reports how many partial groups were dropped since the last one; the
    # timeout goes up first, so a slow machine cannot time the complete group "h" out too
    response = trainer_client.patch("/runs/r", json={"group_timeout_s": 60})
    assert response.status_code == 200, response.text
    play(trainer_client, "h", 1.0)
    play(trainer_client, "h", 0.0)
    play(trainer_client, "h", 0.5)
    eventually(lambda: run_state(trainer_client)["step"] == 1)
    assert metric(trainer_client, "groups/partial_dropped") == 1.0


@pytest.mark.slow
def test_a_partial_group_below_min_group_size_is_dropped(trainer_client, factory):
    create_run(
        trainer_client, group_size=4, batch_groups=1, min_group_size=3, group_timeout_s=TIMEOUT_S
    )
    play(trainer_client, "g", 1.0)
    play(trainer_client, "g", 0.0)
    eventually(dropped(trainer_client, 2))
    assert factory.trainers["r/policy"].steps == []
    assert {r.drop_reason for r in sample_rows(trainer_client)} == {"partial_group"}


@pytest.mark.slow
def test_a_late_member_of_a_closed_group_starts_a_new_group(trainer_client, factory):
    create_run(trainer_client, group_size=3, batch_groups=1, group_timeout_s=TIMEOUT_S)
    play(trainer_client, "g", 1.0)
    play(trainer_client, "g", 0.0)
    eventually(lambda: run_state(trainer_client)["step"] == 1)
    play(trainer_client, "g", 0.5)  # alone in a new group "g": below min_group_size 2
    eventually(dropped(trainer_client, 1))
    assert len(factory.trainers["r/policy"].steps) == 1


@pytest.mark.slow
def test_the_loop_sleeps_until_the_timeout_instead_of_polling(trainer_client):
    create_run(trainer_client, group_size=3, batch_groups=1, group_timeout_s=TIMEOUT_S)
    run = trainer_client.app.state.gateway.runs.get("r")
    looks = 0
    oldest_open_at = run.buffer.oldest_open_at

    def counted():
        nonlocal looks
        looks += 1
        return oldest_open_at()

    run.buffer.oldest_open_at = counted
    play(trainer_client, "g", 1.0)  # alone: dropped at the timeout
    eventually(dropped(trainer_client, 1))
    time.sleep(3 * TIMEOUT_S)
    # one look per wake-up (the finish, the timeout), never a spin
    assert looks <= 4, looks


@pytest.mark.slow
def test_patch_changes_partial_groups_live(trainer_client, factory):
    create_run(
        trainer_client, group_size=3, batch_groups=1, partial_groups="drop", group_timeout_s=60
    )
    play(trainer_client, "g", 1.0)
    play(trainer_client, "g", 0.0)
    time.sleep(TIMEOUT_S)
    assert run_state(trainer_client)["samples_dropped"] == 0  # waits its 60 s
    patch = {"partial_groups": "train", "group_timeout_s": TIMEOUT_S}
    response = trainer_client.patch("/runs/r", json=patch)
    assert response.status_code == 200, response.text
    assert response.json()["settings"]["partial_groups"] == "train"
    eventually(lambda: run_state(trainer_client)["step"] == 1)
    state = run_state(trainer_client)
    assert (state["samples_trained"], state["samples_dropped"]) == (2, 0)

    trainer_client.patch("/runs/r", json={"partial_groups": "drop"})
    play(trainer_client, "h", 1.0)
    play(trainer_client, "h", 0.0)
    eventually(dropped(trainer_client, 2))
    assert run_state(trainer_client)["step"] == 1


@pytest.mark.slow
def test_a_paused_run_closes_no_groups_until_resumed(trainer_client):
    create_run(
        trainer_client, group_size=3, batch_groups=1, partial_groups="drop",
        group_timeout_s=TIMEOUT_S,  # not less: the pause must come before the loop closes it
    )  # fmt: skip
    play(trainer_client, "g", 1.0)
    assert trainer_client.post("/runs/r/pause").status_code == 200
    time.sleep(1.5 * TIMEOUT_S)  # past the timeout: a loop that closed it now would have
    assert run_state(trainer_client)["samples_dropped"] == 0
    trainer_client.post("/runs/r/resume")
    eventually(dropped(trainer_client, 1))
