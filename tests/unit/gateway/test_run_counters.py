"""The run side owns its counters: the recorder ends episodes and counts nothing; the run
manager's end writer (`count_episode_end`) bumps `episodes_finished`/`samples_buffered` or
`episodes_aborted` in the same transaction, so `GET /runs/{id}` agrees with the episode
rows, after a restart too."""

from __future__ import annotations

import pytest

from experiments_db import crud
from experiments_db.db import session_scope
from experiments_db.models import RunRow, SampleRow
from gateway.recording.recorder import EpisodeRecord, EpisodeRecorder
from gateway.runs.manager import count_episode_end
from tests.fakes import FakePolicyFactory
from tests.unit.gateway.conftest import Start, chat_as, create_run, finish, open_episode, run_state

COUNTED = ("episodes_finished", "episodes_aborted", "samples_buffered")


def counters(recorder: EpisodeRecorder, run: str = "r") -> tuple[int, int, int]:
    with session_scope(recorder.db) as session:
        row = crud.get_run(session, run_id=run)
    assert row is not None
    return row.episodes_finished, row.episodes_aborted, row.samples_buffered


def two_samples(record: EpisodeRecord, calls) -> list[SampleRow]:
    return [
        SampleRow(
            episode_id=record.episode_id,
            run=record.run,
            policy="p",
            call_index=index,
            prompt_token_ids=[1],
            completion_token_ids=[2],
            behaviour_logprobs=[-0.5],
            version=0,
            reward=1.0,
            created_at=0.0,
        )
        for index in range(2)
    ]


@pytest.fixture
def recorder_with_a_run(recorder: EpisodeRecorder) -> EpisodeRecorder:
    """A recorder on a database that holds run "r", and no run manager."""
    row = RunRow(id="r", settings={}, status="running", created_at=1.0, updated_at=1.0)
    with session_scope(recorder.db) as session:
        crud.insert_run(session, run=row, policies=[])
    return recorder


def end_two_episodes(recorder: EpisodeRecorder) -> None:
    finished = recorder.create_episode(run="r", task_id="t")
    recorder.finish_episode(finished.episode_id, reward=1.0, metrics={}, make_samples=two_samples)
    aborted = recorder.create_episode(run="r", task_id="t")
    recorder.abort_episode(aborted.episode_id, reason="gone")


def test_the_recorder_alone_ends_episodes_without_counting_them(recorder_with_a_run):
    end_two_episodes(recorder_with_a_run)
    assert counters(recorder_with_a_run) == (0, 0, 0)


def test_the_run_sides_end_writer_counts_each_end_once(recorder_with_a_run):
    recorder = recorder_with_a_run
    recorder.on_end_in_transaction(count_episode_end)
    recorder.on_end_in_transaction(count_episode_end)  # a second manager: still counted once
    end_two_episodes(recorder)
    assert counters(recorder) == (1, 1, 2)


def test_an_end_writer_that_fails_leaves_the_episode_open_and_nothing_written(
    recorder_with_a_run,
):
    recorder = recorder_with_a_run
    recorder.on_end_in_transaction(count_episode_end)

    def refuse(session, episode, samples) -> None:
        raise RuntimeError("disk gone")

    recorder.on_end_in_transaction(refuse)
    episode = recorder.create_episode(run="r", task_id="t")
    with pytest.raises(RuntimeError):
        recorder.finish_episode(
            episode.episode_id, reward=1.0, metrics={}, make_samples=two_samples
        )
    assert recorder.get_episode(episode.episode_id).status == "open"
    with session_scope(recorder.db) as session:
        assert crud.list_samples(session, episode_id=episode.episode_id) == []
    assert counters(recorder) == (0, 0, 0)


def test_a_runs_counters_read_the_same_after_a_restart(start: Start):
    before = start(FakePolicyFactory())
    create_run(before, group_size=4, batch_groups=1)  # groups stay open: nothing trains
    for reward in (1.0, 0.0):
        episode = open_episode(before, group_id="g")
        chat_as(before, episode)
        chat_as(before, episode, content="again")
        assert finish(before, episode, reward).status_code == 200
    given_up = open_episode(before, group_id="g")
    url = f"/swarm/episodes/{given_up['episode_id']}/abort"
    assert before.post(url, json={"reason": "bored"}).status_code == 200
    left_open = open_episode(before, group_id="g")
    chat_as(before, left_open)
    counted = {name: run_state(before)[name] for name in COUNTED}
    assert counted == {"episodes_finished": 2, "episodes_aborted": 1, "samples_buffered": 4}

    after = start(FakePolicyFactory())

    state = run_state(after)
    assert {name: state[name] for name in COUNTED} == counted | {"episodes_aborted": 2}
