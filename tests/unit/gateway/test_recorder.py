"""The recorder persists episodes and calls in SQLite and reads them back after a restart."""

from __future__ import annotations

import pytest

from gateway.errors import EpisodeNotFound
from gateway.recording.recorder import CallRecord, EpisodeRecorder
from trainer.types import Completion, TokenLogprob


def a_completion() -> Completion:
    return Completion(
        prompt_token_ids=[1, 2, 3],
        token_ids=[4, 5],
        logprobs=[-0.5, -0.25],
        text="hi",
        finish_reason="stop",
        versions=[7, 7],
        top_logprobs=[[TokenLogprob(4, -0.5)], [TokenLogprob(5, -0.25)]],
        token_texts=["h", "i"],
        started_at=1.0,
        first_token_at=2.0,
        finished_at=3.0,
    )


def a_call() -> CallRecord:
    return CallRecord.from_completion(
        a_completion(),
        request_id="chatcmpl-1",
        choice_index=0,
        kind="chat",
        model="m",
        finish_reason="stop",
        messages=[{"role": "user", "content": "hey"}],
    )


def test_a_new_recorder_on_the_same_database_reads_the_trace_back(tmp_path):
    url = f"sqlite:///{tmp_path / 'state' / 'gateway.sqlite'}"
    first = EpisodeRecorder.open(url)
    episode = first.create_episode(run="r", task_id="t", group_id="g", client_id="c")
    first.record_call(episode.episode_id, a_call())

    second = EpisodeRecorder.open(url)
    assert second.resolve_key(episode.api_key) == episode.episode_id
    trace = second.get_trace(episode.episode_id)
    assert (trace.run, trace.task_id, trace.group_id, trace.status) == ("r", "t", "g", "open")
    (call,) = trace.calls
    assert call.prompt_token_ids == [1, 2, 3] and call.completion_token_ids == [4, 5]
    assert call.logprobs == [-0.5, -0.25] and call.top_logprobs == [[(4, -0.5)], [(5, -0.25)]]
    assert call.version == 7 and call.versions == [7, 7]
    assert second.get_calls(episode.episode_id)[0].messages == [{"role": "user", "content": "hey"}]

    second.record_call(episode.episode_id, a_call())  # indices continue after a restart
    assert [c.index for c in second.get_trace(episode.episode_id).calls] == [0, 1]


def test_the_database_keeps_a_hash_of_the_key_not_the_key(tmp_path):
    path = tmp_path / "gateway.sqlite"
    recorder = EpisodeRecorder.open(f"sqlite:///{path}")
    episode = recorder.create_episode(run="r", task_id="t")
    recorder.get_episode(episode.episode_id)
    assert episode.api_key.encode() not in path.read_bytes()


def test_unknown_keys_and_episodes(tmp_path):
    recorder = EpisodeRecorder.open(f"sqlite:///{tmp_path / 'db.sqlite'}")
    assert recorder.resolve_key("sk-ep-unknown") is None
    assert not recorder.has_episode("ep-unknown")
    with pytest.raises(EpisodeNotFound):
        recorder.record_call("ep-unknown", a_call())
