"""GroupBuffer: groups complete at group_size, singletons at once, oldest taken first."""

from __future__ import annotations

from gateway.runs.buffer import FinishedEpisode, GroupBuffer


def episode(episode_id: str, group_id: str | None) -> FinishedEpisode:
    return FinishedEpisode(episode_id=episode_id, group_id=group_id, rewards={"p": 0.0})


def test_a_group_completes_when_it_holds_group_size_episodes():
    buffer = GroupBuffer()
    assert not buffer.add(episode("e1", "g"), group_size=2)
    assert buffer.complete_groups == 0 and buffer.open_groups == 1
    assert buffer.add(episode("e2", "g"), group_size=2)
    assert buffer.complete_groups == 1 and buffer.open_groups == 0


def test_an_episode_without_a_group_is_a_complete_group_of_one():
    buffer = GroupBuffer()
    assert buffer.add(episode("e1", None), group_size=8)
    (group,) = buffer.take(1)
    assert group.group_id == "e1" and [e.episode_id for e in group.episodes] == ["e1"]


def test_groups_are_taken_oldest_complete_first():
    buffer = GroupBuffer()
    buffer.add(episode("a1", "a"), group_size=2)
    buffer.add(episode("b1", "b"), group_size=2)
    buffer.add(episode("b2", "b"), group_size=2)
    buffer.add(episode("a2", "a"), group_size=2)
    assert [g.group_id for g in buffer.take(5)] == ["b", "a"]
    assert buffer.take(1) == [] and buffer.episodes() == 0


def test_a_group_id_reused_after_completion_starts_a_new_group():
    buffer = GroupBuffer()
    for i in range(3):
        buffer.add(episode(f"e{i}", "g"), group_size=2)
    assert buffer.complete_groups == 1 and buffer.open_groups == 1 and buffer.episodes() == 3
